package clickhouse

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func collectRows(t *testing.T, s *Store, from, to time.Time) []attribution.Row {
	t.Helper()
	var out []attribution.Row
	if err := s.Rows(context.Background(), from, to, func(r attribution.Row) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatalf("Rows: %v", err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	rows := fleet(1, 2, 2, 90, t0) // 90 minutes: crosses an hour
	// A row with a sub-second interval start survives exactly.
	odd := rows[0]
	odd.IntervalStart = t0.Add(-time.Hour + 1500*time.Millisecond)
	odd.IntervalEnd = odd.IntervalStart.Add(time.Minute)
	// A MIG slice's row keeps its profile.
	mig := rows[1]
	mig.SliceID, mig.MIGProfile, mig.SharingMode = "MIG-7d2c0e4e-3b51-5f3a-9a41-0c1d2e3f4a5b", "2g.20gb", string(tenancy.MIG)
	rows = append(rows, odd, mig)
	findings := []attribution.Finding{
		{Start: t0, End: t0.Add(10 * time.Minute), Kind: attribution.FindingIdleAllocation, Node: "node-00",
			GPUUUID: "GPU-00-00", Namespace: "ml-ns", Pod: "pod-0", Container: "main", Team: "ml"},
		{Start: t0.Add(20*time.Minute + 250*time.Millisecond), End: t0.Add(30 * time.Minute), Kind: attribution.FindingStarved,
			Node: "node-01", GPUUUID: "GPU-01-00", Namespace: "ads-ns", Pod: "pod-1", Container: "main", Team: "ads",
			Detail: "noisy ml-ns/pod-0", NoisyPod: "ml-ns/pod-0"},
		{Start: t0.Add(2 * time.Hour), End: t0.Add(2 * time.Hour), Kind: attribution.FindingNoisyNeighbour,
			Node: "node-00", GPUUUID: "GPU-00-01", Namespace: "ml-ns", Pod: "pod-0", Container: "main", Team: "ml"},
	}
	// Read back under the default cluster's name, or their own.
	for i := range findings {
		findings[i].Cluster = attribution.DefaultCluster
	}
	findings[1].Cluster = "east"
	if err := s.Append(ctx, rows, findings); err != nil {
		t.Fatalf("Append: %v", err)
	}
	want := append([]attribution.Row(nil), rows...)
	sortRows(want)
	got := collectRows(t, s, time.Time{}, time.Time{})
	if len(got) != len(want) {
		t.Fatalf("Rows returned %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	// A range: rows starting in [t0+30m, t0+61m) are minutes 30..60.
	part := collectRows(t, s, t0.Add(30*time.Minute), t0.Add(61*time.Minute))
	if n := len(part); n != 31*2*2*5 {
		t.Errorf("Rows over 31 minutes returned %d rows, want %d", n, 31*2*2*5)
	}
	// Sub-second bounds are exact.
	if n := len(collectRows(t, s, odd.IntervalStart, odd.IntervalStart.Add(time.Nanosecond))); n != 1 {
		t.Errorf("Rows at the sub-second start returned %d rows, want 1", n)
	}
	if n := len(collectRows(t, s, odd.IntervalStart.Add(time.Nanosecond), t0)); n != 0 {
		t.Errorf("Rows just after the sub-second start returned %d rows, want 0", n)
	}

	var fs []attribution.Finding
	collect := func(from, to time.Time) []attribution.Finding {
		fs = nil
		if err := s.Findings(ctx, from, to, func(f attribution.Finding) error { fs = append(fs, f); return nil }); err != nil {
			t.Fatalf("Findings: %v", err)
		}
		return fs
	}
	if got := collect(time.Time{}, time.Time{}); !reflect.DeepEqual(got, findings) {
		t.Errorf("Findings:\n got %+v\nwant %+v", got, findings)
	}
	// [t0+10m, t0+20m+250ms): the first ends at the range start (no
	// overlap), the second starts at its end (no overlap).
	if got := collect(t0.Add(10*time.Minute), t0.Add(20*time.Minute+250*time.Millisecond)); len(got) != 0 {
		t.Errorf("Findings touching the range edges: got %d, want 0", len(got))
	}
	if got := collect(t0.Add(9*time.Minute), t0.Add(20*time.Minute+250*time.Millisecond+1)); len(got) != 2 {
		t.Errorf("Findings overlapping both: got %d, want 2", len(got))
	}
	if got := collect(t0.Add(2*time.Hour), t0.Add(3*time.Hour)); len(got) != 1 || got[0].Kind != attribution.FindingNoisyNeighbour {
		t.Errorf("instantaneous finding in range: got %+v", got)
	}

	// The callback's error comes back unchanged and stops the stream.
	stop := errors.New("stop")
	calls := 0
	err := s.Rows(ctx, time.Time{}, time.Time{}, func(attribution.Row) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Rows with a failing callback: err %v after %d calls, want stop after 1", err, calls)
	}
}

// TestRowsChunked reads a range as several chunks and still returns every
// row once, in order.
func TestRowsChunked(t *testing.T) {
	s, _ := openTest(t)
	rows := fleet(2, 1, 2, 4*60, t0) // 4 hours, 10 rows per minute
	appendAll(t, s, rows, 1000)
	s.opts.RowsChunk = 700 // about one hour per chunk
	chunks, err := s.rowChunks(context.Background(), t0, t0.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 4 {
		t.Errorf("rowChunks gave %d chunks, want 4 (600 rows per hour, 700 per chunk)", len(chunks))
	}
	got := collectRows(t, s, t0.Add(30*time.Minute), t0.Add(3*time.Hour+30*time.Minute))
	want := reference(rows, t0.Add(30*time.Minute), t0.Add(3*time.Hour+30*time.Minute), nil)
	var n int64
	for _, v := range want {
		n += v.rows
	}
	if int64(len(got)) != n {
		t.Fatalf("chunked Rows returned %d rows, want %d", len(got), n)
	}
	for i := 1; i < len(got); i++ {
		if got[i].IntervalStart.Before(got[i-1].IntervalStart) {
			t.Fatalf("row %d out of order", i)
		}
	}
}

func monthQuery() ledger.AggregateQuery {
	return ledger.AggregateQuery{From: t0, To: t0.AddDate(0, 1, 0), Bucket: ledger.BucketMonth}
}

// TestReplayChangesNothing re-sends every batch (whole, and cut at other
// boundaries) and checks that FINAL, the rollups and a monthly report read
// from the rollups are unchanged and equal the source.
func TestReplayChangesNothing(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	// Two days and a bit of a 2-node, 1-GPU fleet.
	rows := fleet(3, 2, 1, 2*24*60+90, t0)
	appendAll(t, s, rows, 5000)
	if err := s.RebuildRollups(ctx, t0, t0.AddDate(0, 1, 0)); err != nil {
		t.Fatalf("RebuildRollups: %v", err)
	}
	want := reference(rows, t0, t0.AddDate(0, 1, 0), func(time.Time) time.Time { return t0 })
	// Days 1-2 and the first 90 minutes of day 3 have data: three daily
	// builds; days 4-31 have none and are one empty raw range.
	wantPlan := aggPlan{days: 3, hours: 0, raw: 1}
	check := func(stage string, wantRollups bool) {
		t.Helper()
		aggs, plan, err := s.aggregate(ctx, monthQuery())
		if err != nil {
			t.Fatalf("%s: Aggregate: %v", stage, err)
		}
		compareSums(t, stage+": monthly aggregate", fromAggregates(aggs), want)
		if wantRollups && plan != wantPlan {
			t.Errorf("%s: plan %+v, want %+v (the report must come from the rollups)", stage, plan, wantPlan)
		}
		if !wantRollups && plan == wantPlan {
			t.Errorf("%s: plan %+v uses rollups that have not seen the replay", stage, plan)
		}
		var n int
		err = s.Rows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error { n++; return nil })
		if err != nil {
			t.Fatalf("%s: Rows: %v", stage, err)
		}
		if n != len(rows) {
			t.Errorf("%s: FINAL has %d rows, want %d", stage, n, len(rows))
		}
	}
	check("first send", true)
	// Replay everything, in different batch cuts.
	appendAll(t, s, rows, 3333)
	appendAll(t, s, rows[:len(rows)/2], 100000)
	var physical uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table(tableRows)).Scan(&physical); err != nil {
		t.Fatal(err)
	}
	t.Logf("physical rows after replays (before merges): %d, distinct keys: %d", physical, len(rows))
	check("after replay, before rebuild", false)
	if err := s.RebuildRollups(ctx, t0, t0.AddDate(0, 1, 0)); err != nil {
		t.Fatalf("RebuildRollups after replay: %v", err)
	}
	check("after replay and rebuild", true)
	// Merging everything must not change the answer either.
	if err := s.conn.Exec(ctx, "OPTIMIZE TABLE "+s.table(tableRows)+" FINAL"); err != nil {
		t.Fatal(err)
	}
	check("after OPTIMIZE FINAL", true)
}
