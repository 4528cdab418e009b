package clickhouse

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

// BenchmarkFleetHourClickHouse: the per-hour reads that decide a large
// fleet's report and upkeep, on a database kept on an external server
// (GPULEDGER_TEST_CLICKHOUSE_DSN and GPULEDGER_BENCH_CLICKHOUSE_DB, e.g.
// the one BenchmarkMonthlyReportClickHouse generates at
// GPULEDGER_BENCH_GPUS=10000, or part of it), at the UTC hour
// GPULEDGER_BENCH_HOUR (RFC 3339, default 2026-03-01T00:00:00Z):
//
//   - edge-rows-streamed: the hour's rows streamed (FINAL) to Go, as the
//     report found its data bounds before FirstRowStart and LastRowEnd;
//
//   - first-row-start and last-row-end: the same bounds in the server;
//
//   - rebuild-one-hour: the hour marked and its rollups rebuilt (the
//     shipper's upkeep as hours close);
//
//   - rebuild-day: the rollups of the hour's UTC day brought up to date
//     (the first run after migration 9 backfills the coverage rollup; a
//     no-op once current);
//
//   - coverage-day: the coverage search over the hour's UTC day (from the
//     coverage rollup where the hours are current);
//
//   - coverage-day-raw: the same search in raw rows only, checked equal.
//
//     GPULEDGER_TEST_CLICKHOUSE_DSN=clickhouse://default@127.0.0.1:9000/ GPULEDGER_BENCH_CLICKHOUSE_DB=gpuledger_bench_month_10000gpu_v1 go test -run '^$' -bench FleetHourClickHouse -benchtime 3x ./ledger/clickhouse
func BenchmarkFleetHourClickHouse(b *testing.B) {
	if os.Getenv(chtest.EnvDSN) == "" || os.Getenv(envBenchDB) == "" {
		b.Skipf("needs a kept database: set %s and %s", chtest.EnvDSN, envBenchDB)
	}
	ctx := context.Background()
	dsn := mustDSN(b, os.Getenv(chtest.EnvDSN))
	dsn.Database = os.Getenv(envBenchDB)
	s, err := Open(ctx, dsn, Options{Writer: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	h := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if v := os.Getenv("GPULEDGER_BENCH_HOUR"); v != "" {
		if h, err = time.Parse(time.RFC3339, v); err != nil {
			b.Fatalf("GPULEDGER_BENCH_HOUR=%q: %v", v, err)
		}
	}
	end := h.Add(time.Hour)
	var first, last time.Time
	b.Run("edge-rows-streamed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n := 0
			err := s.Rows(ctx, h, end, func(r attribution.Row) error {
				if first.IsZero() || r.IntervalStart.Before(first) {
					first = r.IntervalStart
				}
				last = maxTime(last, r.IntervalEnd)
				n++
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "rows")
		}
	})
	b.Run("first-row-start", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			got, err := s.FirstRowStart(ctx, h, end)
			if err != nil || !got.Equal(first) {
				b.Fatalf("FirstRowStart %s %v, the rows say %s", got, err, first)
			}
		}
	})
	b.Run("last-row-end", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			got, err := s.LastRowEnd(ctx, h, end)
			if err != nil || !got.Equal(last) {
				b.Fatalf("LastRowEnd %s %v, the rows say %s", got, err, last)
			}
		}
	})
	b.Run("rebuild-one-hour", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.mark(ctx, []time.Time{h}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.RebuildRollups(ctx, h, end); err != nil {
				b.Fatal(err)
			}
		}
	})
	day := h.Truncate(24 * time.Hour)
	b.Run("rebuild-day", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.RebuildRollups(ctx, day, day.Add(24*time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
	var cov ledger.Coverage
	b.Run("coverage-day", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var err error
			if cov, err = s.Coverage(ctx, day, day.Add(24*time.Hour)); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(cov.Devices)), "gpus")
		}
	})
	b.Run("coverage-day-raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			raw, _, err := s.coverageOf(ctx, []coveragePart{{from: day, to: day.Add(24 * time.Hour)}})
			if err != nil {
				b.Fatal(err)
			}
			if cov.Devices != nil && !reflect.DeepEqual(raw, cov) {
				b.Fatalf("the raw search's coverage differs from Coverage's: %d and %d GPUs", len(raw.Devices), len(cov.Devices))
			}
			b.ReportMetric(float64(len(raw.Devices)), "gpus")
		}
	})
}
