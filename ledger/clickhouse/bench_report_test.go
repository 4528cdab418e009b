package clickhouse

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

// Environment variables of BenchmarkMonthlyReportClickHouse, besides
// chtest's GPULEDGER_TEST_CLICKHOUSE_DSN.
const (
	// envBenchGPUs scales the fleet (default 1000, a multiple of 25).
	envBenchGPUs = "GPULEDGER_BENCH_GPUS"
	// envBenchDB names the database kept on an external server between
	// runs (default gpuledger_bench_month_<gpus>gpu_v<generator version>).
	envBenchDB = "GPULEDGER_BENCH_CLICKHOUSE_DB"
)

// BenchmarkMonthlyReportClickHouse: the March 2026 report of a 1,000-GPU
// fleet at 1-minute ledger resolution (benchFleet: 51.8 million raw rows in
// March, 52.3 million with the 8 hours of April that the Los Angeles March
// reaches into) out of ClickHouse, in UTC and in America/Los_Angeles (a DST
// month whose days are not UTC days, so it reads hourly rollups).
//
// The ledger is generated server-side (INSERT ... SELECT FROM numbers(),
// 1-3 minutes on 2 cores), marked like Append marks its hours, and its
// partitions merged to one part each, as a closed month ends up (30 s).
// With the harness's temp server that happens on every run (about 4
// minutes in all at -benchtime 1x); to keep it, point
// GPULEDGER_TEST_CLICKHOUSE_DSN at a server of your own: the data stays in
// database gpuledger_bench_month_1000gpu_v1 there (1.4 GB) and later runs
// reuse it.
//
//	go test -run '^$' -bench MonthlyReportClickHouse -benchtime 1x -timeout 60m ./ledger/clickhouse
//	GPULEDGER_TEST_CLICKHOUSE_DSN=clickhouse://default@127.0.0.1:9000/ go test -run '^$' -bench 'MonthlyReportClickHouse/(aggregate-(utc|los)|report)' -benchtime 10x ./ledger/clickhouse
//
// Sub-benchmarks:
//   - rebuild-rollups: every hour of the data made stale by a new mark,
//     then rebuilt in one call (a backfill);
//   - aggregate-stale-utc: the month with no usable rollup, every row read
//     with FINAL (the worst case);
//   - rebuild-one-hour and aggregate-one-stale-hour-utc: the month's last
//     hour written after its rebuild, the everyday case;
//   - aggregate-{utc,los-angeles} and report-{utc,los-angeles}: the day
//     aggregates and report.Build on clean rollups, the report's real
//     path. Both check their totals against the fleet's shape and prices,
//     computed by hand.
func BenchmarkMonthlyReportClickHouse(b *testing.B) {
	ctx := context.Background()
	f := benchFleet{gpus: benchGPUs(b)}
	s := benchStore(b, f)
	if err := f.ensure(ctx, b, s); err != nil {
		b.Fatal(err)
	}
	// Clean rollups for the sub-benchmarks that need them; a no-op when a
	// previous run left them clean.
	began := time.Now()
	if err := s.RebuildRollups(ctx, f.from(), f.to()); err != nil {
		b.Fatal(err)
	}
	b.Logf("rollups brought up to date in %s", time.Since(began).Round(time.Millisecond))

	b.Run("rebuild-rollups", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.mark(ctx, f.hours()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.RebuildRollups(ctx, f.from(), f.to()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(f.hours())), "hours")
	})
	b.Run("aggregate-stale-utc", func(b *testing.B) {
		from, to := benchMonth(time.UTC)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.mark(ctx, f.hours()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			aggs, plan, err := s.aggregate(ctx, dayQuery(from, to, time.UTC))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if plan.days+plan.hours != 0 {
				b.Fatalf("plan %+v: rollups used although every hour is stale", plan)
			}
			f.check(b, aggs, from, to)
			if err := s.RebuildRollups(ctx, f.from(), f.to()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	// The everyday case: the month's last hour was written after the last
	// rebuild (or its rebuild is still to come).
	last := []time.Time{time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)}
	b.Run("rebuild-one-hour", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.mark(ctx, last); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.RebuildRollups(ctx, last[0], last[0].Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aggregate-one-stale-hour-utc", func(b *testing.B) {
		from, to := benchMonth(time.UTC)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.mark(ctx, last); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			aggs, plan, err := s.aggregate(ctx, dayQuery(from, to, time.UTC))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if plan.raw != 1 || plan.days != 30 {
				b.Fatalf("plan %+v, want 30 days and 1 raw hour", plan)
			}
			f.check(b, aggs, from, to)
			if err := s.RebuildRollups(ctx, last[0], last[0].Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	for _, z := range []struct{ zone, name string }{{"UTC", "utc"}, {"America/Los_Angeles", "los-angeles"}} {
		zone := z.zone
		loc, err := time.LoadLocation(zone)
		if err != nil {
			b.Fatal(err)
		}
		from, to := benchMonth(loc)
		b.Run("aggregate-"+z.name, func(b *testing.B) {
			aggs, plan, err := s.aggregate(ctx, dayQuery(from, to, loc))
			if err != nil {
				b.Fatal(err)
			}
			if plan.raw != 0 {
				b.Fatalf("plan %+v: raw rows read although the rollups are clean", plan)
			}
			f.check(b, aggs, from, to)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Aggregate(ctx, dayQuery(from, to, loc)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(aggs)), "aggregates")
			b.ReportMetric(float64(plan.days), "day-rollups")
			b.ReportMetric(float64(plan.hours), "hour-rollups")
		})
		b.Run("report-"+z.name, func(b *testing.B) {
			book := benchBook(b, zone)
			var r *report.Report
			for i := 0; i < b.N; i++ {
				if r, err = report.Build(ctx, s, book, from, to); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			f.checkReport(b, r, from, to)
			b.ReportMetric(float64(f.minutes(from, to)*f.rowsPerMinute()), "ledger-rows")
		})
	}
}

func benchGPUs(b *testing.B) int {
	raw := os.Getenv(envBenchGPUs)
	if raw == "" {
		return 1000
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 || n%25 != 0 {
		b.Fatalf("%s=%q: want a positive multiple of 25", envBenchGPUs, raw)
	}
	return n
}

// benchStore opens the benchmark's database: a fixed one on an external
// server, so that its ledger survives the run, else a fresh one on the
// harness's temp server.
func benchStore(b *testing.B, f benchFleet) *Store {
	b.Helper()
	dsn := mustDSN(b, harness.DSN(b))
	if harness.External() {
		dsn = mustDSN(b, os.Getenv(chtest.EnvDSN))
		dsn.Database = os.Getenv(envBenchDB)
		if dsn.Database == "" {
			dsn.Database = fmt.Sprintf("gpuledger_bench_month_%dgpu_v%d", f.gpus, benchFleetVersion)
		}
	}
	ctx := context.Background()
	if err := Migrate(ctx, dsn, ""); err != nil {
		b.Fatalf("Migrate: %v", err)
	}
	s, err := Open(ctx, dsn, Options{Writer: "bench"})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func dayQuery(from, to time.Time, loc *time.Location) ledger.AggregateQuery {
	return ledger.AggregateQuery{From: from, To: to, Location: loc, Bucket: ledger.BucketDay}
}

// benchMonth is March 2026 in loc.
func benchMonth(loc *time.Location) (time.Time, time.Time) {
	return time.Date(2026, 3, 1, 0, 0, 0, 0, loc), time.Date(2026, 4, 1, 0, 0, 0, 0, loc)
}

// benchBook prices A100s at 2.40, H100s at 4.10 and everything else (the
// L40S) at the default 2.00 per GPU-hour; idle capacity is shared.
func benchBook(b *testing.B, zone string) *pricebook.Book {
	y := fmt.Sprintf(`currency: USD
timezone: %s
teamLabel: team
policy: allocation
idle: shared
rates:
  A100-SXM4-80GB: 2.40
  H100-SXM5-80GB: 4.10
defaultRate: 2.00
`, zone)
	book, err := pricebook.Parse("bench-prices.yaml", []byte(y))
	if err != nil {
		b.Fatal(err)
	}
	return book
}

// checkReport compares the report's total with the fleet's capacity priced
// by hand: per 25 GPUs, 15 A100 x 2.40 + 9 H100 x 4.10 + 1 L40S x 2.00 =
// 74.90 per hour.
func (f benchFleet) checkReport(b *testing.B, r *report.Report, from, to time.Time) {
	b.Helper()
	hours := f.minutes(from, to) / 60
	if want := int64(f.gpus/25) * 7490 * hours; r.Total != want {
		b.Fatalf("report total %d cents, want %d (%d GPUs x %d h)", r.Total, want, f.gpus, hours)
	}
	capacity := new(big.Rat)
	for _, m := range r.Models {
		capacity.Add(capacity, m.CapacityHours)
	}
	if want := big.NewRat(int64(f.gpus)*hours, 1); capacity.Cmp(want) != 0 {
		b.Fatalf("report capacity %s GPU-hours, want %s", capacity.FloatString(3), want.FloatString(3))
	}
}

// check compares an aggregate's totals with the fleet's shape: every
// minute has rowsPerMinute rows, and 60 allocated-or-unallocated seconds
// per GPU.
func (f benchFleet) check(b *testing.B, aggs []ledger.Aggregate, from, to time.Time) {
	b.Helper()
	var rows int64
	var alloc float64
	days := map[int64]bool{}
	for _, a := range aggs {
		rows += a.Rows
		alloc += a.AllocatedSeconds
		days[a.BucketStart.Unix()] = true
	}
	m := f.minutes(from, to)
	if want := m * f.rowsPerMinute(); rows != want {
		b.Fatalf("aggregates hold %d rows, want %d", rows, want)
	}
	if want := float64(m * int64(f.gpus) * 60); alloc != want {
		b.Fatalf("aggregates hold %v allocated seconds, want %v", alloc, want)
	}
	if len(days) != 31 {
		b.Fatalf("aggregates have %d day buckets, want 31", len(days))
	}
}
