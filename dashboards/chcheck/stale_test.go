package chcheck_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// TestStaleHours: the freshness panel counts the hours whose newest
// rollup misses a write, exactly as the store decides it (Aggregate then
// reads them from raw rows), and drops to zero once they are rebuilt.
func TestStaleHours(t *testing.T) {
	harness.Require(t)
	ctx := context.Background()
	day := monthStart.AddDate(0, 0, 4)
	db, err := newLedgerDB(t, func(ctx context.Context, s *clickhouse.Store) error {
		var rows []attribution.Row
		for ts := day; ts.Before(day.AddDate(0, 0, 1)); ts = ts.Add(step) {
			rows = append(rows, intervalRows(ts)...)
		}
		return s.Append(ctx, rows, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	b := loadBoard(t)
	stale := func() int64 {
		t.Helper()
		_, rows := db.run(t, b.panelSQL(t, "Hours not yet rolled up"), month(), all())
		if len(rows) != 1 {
			t.Fatalf("%d rows", len(rows))
		}
		return int64(asFloat(t, rows[0][0]))
	}
	if got := stale(); got != 24 {
		t.Errorf("before any rebuild: %d stale hours, want 24", got)
	}
	if err := db.store.RebuildRollups(ctx, day, day.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if got := stale(); got != 0 {
		t.Errorf("after the rebuild: %d stale hours, want 0", got)
	}
	// A late batch (a replay) touching two hours.
	late := append(intervalRows(day.Add(3*time.Hour)), intervalRows(day.Add(17*time.Hour+45*time.Minute))...)
	if err := db.store.Append(ctx, late, nil); err != nil {
		t.Fatal(err)
	}
	if got := stale(); got != 2 {
		t.Errorf("after a late batch: %d stale hours, want 2", got)
	}
	if err := db.store.RebuildRollups(ctx, day, day.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if got := stale(); got != 0 {
		t.Errorf("after rebuilding: %d stale hours, want 0", got)
	}
}
