package filestore

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// BenchmarkCoverage times the coverage search a report runs on the file
// ledger: 100 GPUs (fleetRows: five rows per GPU and interval) over
// GPULEDGER_BENCH_COVERAGE_INTERVALS one-minute intervals (default 1440,
// a day: 720,000 rows), every GPU with no hole, beside the day aggregate
// the report reads from the rollup.
func BenchmarkCoverage(b *testing.B) {
	intervals := 1440
	if v, err := strconv.Atoi(os.Getenv("GPULEDGER_BENCH_COVERAGE_INTERVALS")); err == nil && v > 0 {
		intervals = v
	}
	s := openTemp(b, FileOptions{})
	ctx := context.Background()
	for k := 0; k < intervals; k += 60 {
		n := min(60, intervals-k)
		if err := s.Append(ctx, fleetRows(t0.Add(time.Duration(k)*time.Minute), n, time.Minute, 100), nil); err != nil {
			b.Fatal(err)
		}
	}
	from, to := t0, t0.Add(time.Duration(intervals)*time.Minute)
	b.Run("coverage", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c, err := s.Coverage(ctx, from, to)
			if err != nil || len(c.Devices) != 100 {
				b.Fatalf("%d devices, %v", len(c.Devices), err)
			}
		}
	})
	b.Run("day-aggregate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Bucket: ledger.BucketDay}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
