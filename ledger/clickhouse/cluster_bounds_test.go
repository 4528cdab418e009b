package clickhouse

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// rowBounds is what a report asks of a source that finds its rows'
// bounds itself (report's rowBounder).
type rowBounds interface {
	FirstRowStart(ctx context.Context, from, to time.Time) (time.Time, error)
	LastRowStart(ctx context.Context, from, to time.Time) (time.Time, error)
	LastRowEnd(ctx context.Context, from, to time.Time) (time.Time, error)
}

// lastRowStart is the start of the latest row starting in [from, to),
// from the rows as written.
func lastRowStart(rows []attribution.Row, from, to time.Time) (last time.Time) {
	for _, r := range rows {
		if !r.IntervalStart.Before(from) && r.IntervalStart.Before(to) && r.IntervalStart.After(last) {
			last = r.IntervalStart
		}
	}
	return last
}

// rowExtremes are the first start and last end of the rows starting in
// [from, to), taken from the rows as written (the newest version of each):
// the expected bounds, computed without the store.
func rowExtremes(rows []attribution.Row, from, to time.Time) (first, last time.Time) {
	for _, r := range rows {
		if r.IntervalStart.Before(from) || !r.IntervalStart.Before(to) {
			continue
		}
		if first.IsZero() || r.IntervalStart.Before(first) {
			first = r.IntervalStart
		}
		if r.IntervalEnd.After(last) {
			last = r.IntervalEnd
		}
	}
	return first, last
}

// twoClusterBoundsLedger is a ledger of two clusters with different first
// and last instants, each with a replaced row, migrated from before the
// cluster column:
//   - default: 10:00 to 12:00, stored at schema 2 (no cluster column);
//     its first minute starts 20 s late, and its last container row,
//     stored ending 12:09, is replaced by a version ending 12:00;
//   - east: 10:30 to 12:10, appended after the migration; its first
//     minute starts 250 ms late, and its last container row, first
//     written ending 12:47, is replaced by a version ending 12:10.
//
// It returns the store and each cluster's rows as they stand (the
// replacing versions).
func twoClusterBoundsLedger(t *testing.T) (*Store, map[string][]attribution.Row) {
	t.Helper()
	harness.Require(t)
	ctx := context.Background()
	dsn := mustDSN(t, harness.DSN(t))
	if err := migrateTo(ctx, dsn, "", 2); err != nil {
		t.Fatalf("migrate to 2: %v", err)
	}
	ten := t0.Add(10 * time.Hour)
	def := fleet(7, 1, 1, 120, ten)
	for i := range 5 {
		def[i].IntervalStart = def[i].IntervalStart.Add(20 * time.Second)
	}
	lastDef := len(def) - 5
	old := make([]attribution.Row, len(def))
	copy(old, def)
	old[lastDef].IntervalEnd = ten.Add(129 * time.Minute)
	insertSchema2Rows(t, dsn, old).Close()
	if err := Migrate(ctx, dsn, ""); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := Open(ctx, dsn, Options{RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// The replacing version, written with no cluster: the default's.
	newest := def[lastDef]
	newest.Cluster = ""
	appendAll(t, s, []attribution.Row{newest}, 10)

	east := fleet(9, 1, 1, 100, ten.Add(30*time.Minute))
	for i := range east {
		east[i].Cluster = "east"
	}
	for i := range 5 {
		east[i].IntervalStart = east[i].IntervalStart.Add(250 * time.Millisecond)
	}
	lastEast := len(east) - 5
	stale := east[lastEast]
	stale.IntervalEnd = ten.Add(167 * time.Minute)
	appendAll(t, s, east[:lastEast], 5000)
	appendAll(t, s, []attribution.Row{stale}, 10)
	appendAll(t, s, east[lastEast:], 10)
	return s, map[string][]attribution.Row{attribution.DefaultCluster: def, "east": east}
}

// TestClusterViewBoundsAreTheClustersRows: each cluster's first start
// and last end, found through its view (ledger.OneCluster) in the
// server, are those of its own rows as written, never another cluster's
// and never a replaced version's: with the rollups stale, clean while
// the replaced versions are still stored, and after a merge (where the
// rollups' count of the cluster's rows stands for FINAL).
func TestClusterViewBoundsAreTheClustersRows(t *testing.T) {
	s, rows := twoClusterBoundsLedger(t)
	ctx := context.Background()
	ten := t0.Add(10 * time.Hour)
	ranges := []struct{ from, to time.Time }{
		{ten, ten.Add(time.Hour)},
		{ten.Add(time.Hour), ten.Add(2 * time.Hour)},
		{ten.Add(2 * time.Hour), ten.Add(3 * time.Hour)},
		{ten.Add(30 * time.Minute), ten.Add(31 * time.Minute)},
		{ten.Add(90 * time.Minute), ten.Add(3 * time.Hour)},
		{ten, ten.Add(3 * time.Hour)},
		{ten.Add(-time.Hour), ten},
	}
	check := func(stage string) {
		t.Helper()
		for cluster, mine := range rows {
			v, err := ledger.OneCluster(s, cluster)
			if err != nil {
				t.Fatal(err)
			}
			b, ok := v.(rowBounds)
			if !ok {
				t.Fatalf("the view of cluster %s over ClickHouse (%T) does not find its rows' bounds", cluster, v)
			}
			for _, r := range ranges {
				wantFirst, wantLast := rowExtremes(mine, r.from, r.to)
				first, err := b.FirstRowStart(ctx, r.from, r.to)
				if err != nil {
					t.Fatalf("%s: %s: FirstRowStart: %v", stage, cluster, err)
				}
				last, err := b.LastRowEnd(ctx, r.from, r.to)
				if err != nil {
					t.Fatalf("%s: %s: LastRowEnd: %v", stage, cluster, err)
				}
				lastStart, err := b.LastRowStart(ctx, r.from, r.to)
				if err != nil {
					t.Fatalf("%s: %s: LastRowStart: %v", stage, cluster, err)
				}
				if want := lastRowStart(mine, r.from, r.to); !lastStart.Equal(want) {
					t.Errorf("%s: cluster %s, [%s, %s): last row starts %s, want %s", stage, cluster,
						r.from.Format(time.TimeOnly), r.to.Format(time.TimeOnly), lastStart, want)
				}
				if !first.Equal(wantFirst) || !last.Equal(wantLast) {
					t.Errorf("%s: cluster %s, [%s, %s): rows %s to %s, want %s to %s", stage, cluster,
						r.from.Format(time.TimeOnly), r.to.Format(time.TimeOnly), first, last, wantFirst, wantLast)
				}
			}
		}
	}
	check("rollups stale")
	if err := s.RebuildRollups(ctx, ten, ten.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("rollups clean, replaced versions stored")
	if err := s.conn.Exec(ctx, "OPTIMIZE TABLE "+s.table(tableRows)+" FINAL"); err != nil {
		t.Fatal(err)
	}
	check("merged")
	// After the merge each cluster's rollup count is its own row count,
	// which is what lets LastClusterRowEnd skip FINAL.
	for cluster, mine := range rows {
		for h := ten; h.Before(ten.Add(3 * time.Hour)); h = h.Add(time.Hour) {
			var want uint64
			for _, r := range mine {
				if !r.IntervalStart.Before(h) && r.IntervalStart.Before(h.Add(time.Hour)) {
					want++
				}
			}
			n, known, err := s.cleanHourRows(ctx, cluster, h, h.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if !known || n != want {
				t.Errorf("cluster %s, hour %s: rollup count %d (known %v), want %d", cluster, h.Format(time.TimeOnly), n, known, want)
			}
		}
	}
	if _, err := s.FirstClusterRowStart(ctx, "East", ten, ten.Add(time.Hour)); err == nil {
		t.Error("FirstClusterRowStart of cluster \"East\" (not a cluster name) did not fail")
	}
	if _, err := s.LastClusterRowStart(ctx, "East", ten, ten.Add(time.Hour)); err == nil {
		t.Error("LastClusterRowStart of cluster \"East\" (not a cluster name) did not fail")
	}
}

// TestClusterViewOfAStoreWithoutBoundsHasNone: the view of a store that
// cannot find a cluster's bounds itself (the embedded file) does not
// claim to; the report streams its rows as before.
func TestClusterViewOfAStoreWithoutBoundsHasNone(t *testing.T) {
	file, err := filestore.OpenFile(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	v, err := ledger.OneCluster(file, "east")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(rowBounds); ok {
		t.Fatalf("the view of the embedded ledger (%T) claims to find its rows' bounds", v)
	}
	if _, err := ledger.Rows(v); err != nil {
		t.Fatalf("the view of the embedded ledger streams no rows: %v", err)
	}
}

// rowCounter is the ClickHouse store counting its Rows calls; every other
// method, the bound finders included, is the store's.
type rowCounter struct {
	*Store
	calls atomic.Int64
}

func (c *rowCounter) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	c.calls.Add(1)
	return c.Store.Rows(ctx, from, to, fn)
}

// TestFleetReportReadsNoEdgeRows: a fleet of two clusters is billed
// cluster by cluster (report.BuildFleet), and each cluster's data bounds
// are found in the server: no row is streamed. Each cluster's bounds are
// its rows' first start and last end, and the bill is the embedded
// ledger's (which streams them) to the cent.
func TestFleetReportReadsNoEdgeRows(t *testing.T) {
	s, rows := twoClusterBoundsLedger(t)
	ctx := context.Background()
	ten := t0.Add(10 * time.Hour)
	if err := s.RebuildRollups(ctx, ten, ten.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", []byte("currency: USD\ntimezone: UTC\npolicy: allocation\nidle: shared\nrates:\n  A100-SXM4-80GB: 2.40\n  H100-80GB-HBM3: 4.10\ndefaultRate: 1.10\n"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, rs := range rows {
		if err := file.Append(ctx, rs, nil); err != nil {
			t.Fatal(err)
		}
	}
	from, to := t0, t0.Add(24*time.Hour)
	now := to.Add(time.Hour)
	c := &rowCounter{Store: s}
	got, err := report.BuildFleet(ctx, c, book, from, to, now, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("the fleet's report streamed rows %d times, want none", n)
	}
	want, err := report.BuildFleet(ctx, file, book, from, to, now, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Clusters) != 2 || got.Money(got.Total) != want.Money(want.Total) {
		t.Errorf("fleet total %s over %d clusters, the embedded ledger's %s", got.Money(got.Total), len(got.Clusters), want.Money(want.Total))
	}
	for cluster, mine := range rows {
		c.calls.Store(0)
		r, err := report.BuildFleet(ctx, c, book, from, to, now, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.calls.Load(); n != 0 {
			t.Errorf("cluster %s's report streamed rows %d times, want none", cluster, n)
		}
		wantStart, wantEnd := rowExtremes(mine, from, to)
		start, end := r.DataBounds()
		if !start.Equal(wantStart) || !end.Equal(wantEnd) {
			t.Errorf("cluster %s: data from %s to %s, want %s to %s", cluster, start, end, wantStart, wantEnd)
		}
		fr, err := report.BuildFleet(ctx, file, book, from, to, now, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if r.Money(r.Total) != fr.Money(fr.Total) {
			t.Errorf("cluster %s: total %s, the embedded ledger's %s", cluster, r.Money(r.Total), fr.Money(fr.Total))
		}
	}
	wantStart, _ := rowExtremes(rows[attribution.DefaultCluster], from, to)
	_, wantEnd := rowExtremes(rows["east"], from, to)
	if start, end := got.DataBounds(); !start.Equal(wantStart) || !end.Equal(wantEnd) {
		t.Errorf("fleet: data from %s to %s, want %s to %s", start, end, wantStart, wantEnd)
	}
}
