package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// edgeRows are one row per instant, told apart by SliceID (the instant's
// index) and UsedGPUSeconds (the index again).
func edgeRows(at []time.Time) []attribution.Row {
	rows := make([]attribution.Row, len(at))
	for i, t := range at {
		rows[i] = attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: t, IntervalEnd: t.Add(time.Minute), Node: "node-0", GPUUUID: "GPU-0",
			GPUModel: "A100", SliceID: fmt.Sprintf("s%02d", i), SharingMode: string(tenancy.Exclusive),
			Kind: attribution.KindContainer, Namespace: "ns", Pod: "p", PodUID: "u", Container: "c", Team: "t",
			AllocatedGPUSeconds: 1, UsedGPUSeconds: float64(i), Method: attribution.MethodMeasured}
	}
	return rows
}

// TestRawRangeEdges: the hour-key hint added to raw reads must not move a
// range's edges, whole seconds or not, wherever they fall in an hour.
func TestRawRangeEdges(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	h := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	ns := time.Nanosecond
	at := []time.Time{
		h.Add(-2 * time.Hour),                  // 0
		h.Add(-time.Second / 2).Add(-ns),       // 1: just before from1
		h.Add(-time.Second / 2),                // 2: from1
		h.Add(-ns),                             // 3
		h,                                      // 4: from2
		h.Add(59*time.Minute + 59*time.Second), // 5
		h.Add(time.Hour).Add(-ns),              // 6
		h.Add(time.Hour),                       // 7: to2
		h.Add(time.Hour + time.Second/4 - ns),  // 8: just before to1
		h.Add(time.Hour + time.Second/4),       // 9: to1
		h.Add(time.Hour + time.Second),         // 10
		h.Add(3 * time.Hour),                   // 11
	}
	if err := s.Append(ctx, edgeRows(at), nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		from, to time.Time
		want     []int
	}{
		{at[2], at[9], []int{2, 3, 4, 5, 6, 7, 8}},
		{at[4], at[7], []int{4, 5, 6}},
		{at[3], at[8], []int{3, 4, 5, 6, 7}},
		{at[1], at[2], []int{1}},
		{at[8], at[10], []int{8, 9}},
		{time.Time{}, at[4], []int{0, 1, 2, 3}},
		{at[9], time.Time{}, []int{9, 10, 11}},
		{at[11].Add(-time.Hour + ns), at[11].Add(ns), []int{11}},
	}
	for _, c := range cases {
		what := fmt.Sprintf("[%s, %s)", c.from.Format(time.RFC3339Nano), c.to.Format(time.RFC3339Nano))
		var got []int
		err := s.Rows(ctx, c.from, c.to, func(r attribution.Row) error {
			got = append(got, int(r.UsedGPUSeconds))
			return nil
		})
		if err != nil {
			t.Fatalf("Rows %s: %v", what, err)
		}
		sort.Ints(got)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Rows %s = %v, want %v", what, got, c.want)
		}
		if c.from.IsZero() || c.to.IsZero() {
			continue // Aggregate needs both bounds
		}
		aggs, err := s.Aggregate(ctx, ledger.AggregateQuery{From: c.from, To: c.to, Bucket: ledger.BucketNone})
		if err != nil {
			t.Fatalf("Aggregate %s: %v", what, err)
		}
		var n int64
		var sum float64
		for _, a := range aggs {
			n, sum = n+a.Rows, sum+a.UsedSeconds
		}
		wantSum := 0
		for _, i := range c.want {
			wantSum += i
		}
		if n != int64(len(c.want)) || sum != float64(wantSum) {
			t.Errorf("Aggregate %s: %d rows summing to %v, want %d summing to %d", what, n, sum, len(c.want), wantSum)
		}
	}
}

// TestRawReadReadsItsHours: a raw read of one hour reads that hour's
// granules, not its whole partition. 18.16 derives no range of the key
// toStartOfHour(interval_start) from conditions on interval_start alone.
func TestRawReadReadsItsHours(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	const hours, perHour = 12, 20000
	start := time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)
	q := fmt.Sprintf(`INSERT INTO %s (interval_start, interval_end, node, gpu_uuid, slice_id, kind, team, allocated_gpu_seconds, version)
SELECT toDateTime(%d + intDiv(number, %d) * 3600 + number %% 3600) AS t, t + 60, toString(number %% %d), 'GPU', 'GPU', 'container', 'team', 1., toUInt64(1)
FROM numbers(%d)`, s.table(tableRows), start.Unix(), perHour, perHour, hours*perHour)
	if err := s.conn.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
	var read atomic.Uint64
	pctx := ch.Context(ctx, ch.WithProgress(func(p *ch.Progress) { read.Add(p.Rows) }))
	from := start.Add(5 * time.Hour)
	acc := newAccumulator(ledger.BucketNone, []bucket{{From: from, To: from.Add(time.Hour)}}, &teamGrain)
	if err := s.fromRaw(pctx, []segment{{level: levelRaw, from: from, to: from.Add(time.Hour)}}, acc); err != nil {
		t.Fatal(err)
	}
	res := acc.result()
	if len(res) != 1 || res[0].Rows != perHour {
		t.Fatalf("one hour aggregated to %+v, want one group of %d rows", res, perHour)
	}
	// The hour's rows and the granules (8192 rows) at its edges; the
	// whole table is 240,000.
	if n := read.Load(); n == 0 || n > perHour+2*8192 {
		t.Errorf("raw read of one hour read %d rows, want at most %d", n, perHour+2*8192)
	}
}

// TestRollupReadSendsOnlyWantedBuilds: an hour rebuilt three times holds
// three builds until a merge; a rollup read sends only the wanted one.
func TestRollupReadSendsOnlyWantedBuilds(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.conn.Exec(ctx, "SYSTEM STOP MERGES "+s.table(tableHourly)); err != nil {
		t.Fatal(err)
	}
	h := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	rows := fleet(3, 2, 2, 3, h)
	for i := 0; i < 3; i++ {
		// Append marks the hour, so each rebuild is a new build.
		if err := s.Append(ctx, rows, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.RebuildRollups(ctx, h, h.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.loadState(ctx, h.Unix(), h.Unix()+3600)
	if err != nil {
		t.Fatal(err)
	}
	hdr, ok := st.clean(period{grainHour, h.Unix()})
	if !ok {
		t.Fatal("hour not clean after a rebuild")
	}
	var stored uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table(tableHourly)).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 3*hdr.groups {
		t.Fatalf("hourly rollup holds %d rows, want 3 builds of %d", stored, hdr.groups)
	}
	var sent atomic.Uint64
	pctx := ch.Context(ctx, ch.WithProfileInfo(func(p *ch.ProfileInfo) { sent.Add(p.Rows) }))
	got, ok2, err := s.readRollup(pctx, grainHour, h.Unix(), h.Unix()+3600, map[int64]header{h.Unix(): hdr})
	if err != nil {
		t.Fatal(err)
	}
	if !ok2[h.Unix()] || uint64(len(got[h.Unix()])) != hdr.groups {
		t.Fatalf("read %d groups (visible %v), want %d", len(got[h.Unix()]), ok2[h.Unix()], hdr.groups)
	}
	if n := sent.Load(); n != hdr.groups {
		t.Errorf("server sent %d rollup rows, want the wanted build's %d", n, hdr.groups)
	}
}
