package filestore

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// retentionFixture is three days of 15-minute rows of four GPUs and a
// finding per 6 hours, written in time order (so seq follows time), in a
// store whose clock reads the end of the third day.
func retentionFixture(t *testing.T, opts FileOptions) (*FileStore, []attribution.Row, []attribution.Finding) {
	t.Helper()
	s := openTemp(t, opts)
	s.now = func() time.Time { return t0.Add(72 * time.Hour) }
	rows := fleetRows(t0, 3*24*4, 15*time.Minute, 4)
	var fs []attribution.Finding
	for h := 0; h < 72; h += 6 {
		at := t0.Add(time.Duration(h) * time.Hour)
		fs = append(fs, attribution.Finding{Start: at, End: at.Add(30 * time.Minute), Kind: attribution.FindingIdleAllocation,
			Node: "node-0", GPUUUID: "GPU-0000", Namespace: "ns-ml", Pod: "pod-0-0", Container: "main", Team: "ml"})
	}
	for i := 0; i < len(rows); i += 1000 {
		if err := s.Append(context.Background(), rows[i:min(i+1000, len(rows))], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(context.Background(), nil, fs); err != nil {
		t.Fatal(err)
	}
	return s, rows, fs
}

// checkKept compares what the store holds with the rows and findings the
// test expects: the same rows, and totals per team through Aggregate (the
// rollups) equal to the kept rows' own sums.
func checkKept(t *testing.T, s *FileStore, want []attribution.Row, wantF int) {
	t.Helper()
	ctx := context.Background()
	if got := readAll(t, s, time.Time{}, time.Time{}); len(got) != len(want) {
		t.Fatalf("%d rows left, want %d", len(got), len(want))
	}
	sum := map[string]float64{}
	for _, r := range want {
		sum[r.Team+"|"+string(r.Kind)] += r.AllocatedGPUSeconds
	}
	aggs, err := s.Aggregate(ctx, ledger.AggregateQuery{From: t0.Add(-time.Hour), To: t0.Add(73 * time.Hour), Location: time.UTC, Bucket: ledger.BucketNone})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, a := range aggs {
		got[a.Team+"|"+string(a.Kind)] += a.AllocatedSeconds
	}
	for k, w := range sum {
		if math.Abs(got[k]-w) > 1e-6*max(1, w) {
			t.Errorf("%s: aggregate %v allocated GPU-seconds, the kept rows %v", k, got[k], w)
		}
	}
	if len(got) != len(sum) {
		t.Errorf("aggregate has %d groups, the kept rows %d", len(got), len(sum))
	}
	checkDeviceRollupTable(t, s)
	var n int
	if err := s.Findings(ctx, time.Time{}, time.Time{}, func(attribution.Finding) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != wantF {
		t.Errorf("%d findings left, want %d", n, wantF)
	}
}

// TestRetentionWithoutSinks: with no sinks the node's ledger is the
// record, and Retention alone deletes from it: the rows that started more
// than 36 h before the clock and the findings that ended before then.
func TestRetentionWithoutSinks(t *testing.T) {
	s, rows, fs := retentionFixture(t, FileOptions{Retention: 36 * time.Hour})
	expiry := t0.Add(36 * time.Hour)
	var want []attribution.Row
	for _, r := range rows {
		if !r.IntervalStart.Before(expiry) {
			want = append(want, r)
		}
	}
	wantF := 0
	for _, f := range fs {
		if !f.End.Before(expiry) {
			wantF++
		}
	}
	deleted, err := s.Prune(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(rows)-len(want)) + int64(len(fs)-wantF); deleted != want {
		t.Errorf("Prune deleted %d, want %d", deleted, want)
	}
	checkKept(t, s, want, wantF)
	// A second prune finds nothing more to delete.
	if n, err := s.Prune(context.Background()); n != 0 || err != nil {
		t.Fatalf("second Prune: %d, %v", n, err)
	}
}

// TestRetentionKeepsUnshipped: with a sink, an expired row goes only once
// the sink has shipped it. The sink shipped the first day: that day goes,
// the expired half of the second day stays until it is shipped too.
func TestRetentionKeepsUnshipped(t *testing.T) {
	ctx := context.Background()
	s, rows, _ := retentionFixture(t, FileOptions{Retention: 36 * time.Hour, Sinks: []string{"ch"}})
	day1 := 0
	for day1 < len(rows) && rows[day1].IntervalStart.Before(t0.Add(24*time.Hour)) {
		day1++
	}
	if err := s.MarkShipped(ctx, "ch", int64(day1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	// No finding is shipped: rows come first in seq.
	checkKept(t, s, rows[day1:], 12)
	if err := s.MarkShipped(ctx, "ch", int64(len(rows))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	var want []attribution.Row
	for _, r := range rows {
		if !r.IntervalStart.Before(t0.Add(36 * time.Hour)) {
			want = append(want, r)
		}
	}
	checkKept(t, s, want, 12)
}
