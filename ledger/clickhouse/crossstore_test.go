package clickhouse

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestStoresAgreeOnCalendarBuckets stores the same rows in the embedded
// ledger and in ClickHouse and asks both for hourly, daily and monthly
// aggregates in zones with half-hour offsets and DST shifts, including Lord
// Howe's 30-minute one: the two stores must return the same buckets with
// the same sums, before and after the ClickHouse rollups exist.
func TestStoresAgreeOnCalendarBuckets(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })

	// 2024-04-06 12:00Z to 04-08 00:00Z spans Lord Howe leaving DST
	// (15:00Z) and Sydney leaving it (16:00Z).
	start := time.Date(2024, 4, 6, 12, 0, 0, 0, time.UTC)
	end := time.Date(2024, 4, 8, 0, 0, 0, 0, time.UTC)
	rows := fleet(7, 2, 1, int(end.Sub(start)/time.Minute), start)
	appendAll(t, ch, rows, 5000)
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}

	var queries []ledger.AggregateQuery
	for _, zone := range []string{"Australia/Lord_Howe", "Australia/Sydney", "Asia/Kolkata", "UTC"} {
		loc := mustZone(t, zone)
		for _, b := range []string{ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth} {
			queries = append(queries, ledger.AggregateQuery{From: start.Add(7 * time.Minute), To: end, Location: loc, Bucket: b})
		}
	}
	check := func(stage string) {
		for _, q := range queries {
			want, err := file.Aggregate(ctx, q)
			if err != nil {
				t.Fatalf("embedded %s %s: %v", q.Location, q.Bucket, err)
			}
			got, err := ch.Aggregate(ctx, q)
			if err != nil {
				t.Fatalf("ClickHouse %s %s: %v", q.Location, q.Bucket, err)
			}
			what := stage + ": " + q.Location.String() + " " + q.Bucket
			compareSums(t, what, fromAggregates(got), fromAggregates(want))
		}
	}
	check("raw rows")
	if err := ch.RebuildRollups(ctx, start, end); err != nil {
		t.Fatal(err)
	}
	check("rollups")
}
