package clickhouse

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// BenchmarkFOCUSExportClickHouse: the FOCUS export (report.Build on the
// day aggregates, then WriteFOCUS) of March 2026 for benchFleet out of
// ClickHouse with its rollups current, as the shipper keeps them. The fleet
// is 100 GPUs unless GPULEDGER_BENCH_GPUS says otherwise (target: under
// 15 s for 100 GPUs). Generating the month is outside the timing; the
// total is checked against the fleet priced by hand (checkReport) and the
// file by the FOCUS validator.
//
//	go test -run '^$' -bench FOCUSExportClickHouse -benchtime 5x -timeout 30m ./ledger/clickhouse
func BenchmarkFOCUSExportClickHouse(b *testing.B) {
	ctx := context.Background()
	f, s, from, to, book := focusBenchMonth(ctx, b)
	// The timed loop is a sub-benchmark, so the month is generated once
	// however many rounds the benchmark runs.
	b.Run("export", func(b *testing.B) {
		var r *report.Report
		for i := 0; i < b.N; i++ {
			var err error
			if r, err = report.Build(ctx, s, book, from, to); err != nil {
				b.Fatal(err)
			}
			if err := report.WriteFOCUS(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		f.checkReport(b, r, from, to)
		var buf bytes.Buffer
		if err := report.WriteFOCUS(&buf, r); err != nil {
			b.Fatal(err)
		}
		if vs, err := focusvalidate.Validate(&buf); err != nil || len(vs) > 0 {
			b.Fatalf("validator: %v %v", vs, err)
		}
		b.ReportMetric(float64(f.minutes(from, to)*f.rowsPerMinute()), "ledger-rows")
		b.ReportMetric(float64(len(r.Lines)), "focus-rows")
	})
}

// focusBenchMonth is the FOCUS benchmarks' March: benchFleet (100 GPUs
// unless GPULEDGER_BENCH_GPUS says otherwise) stored with its rollups
// current, as the shipper keeps them, and the UTC bench price book.
func focusBenchMonth(ctx context.Context, b *testing.B) (f benchFleet, s *Store, from, to time.Time, book *pricebook.Book) {
	b.Helper()
	gpus := 100
	if os.Getenv(envBenchGPUs) != "" {
		gpus = benchGPUs(b)
	}
	f = benchFleet{gpus: gpus}
	s = benchStore(b, f)
	if err := f.ensure(ctx, b, s); err != nil {
		b.Fatal(err)
	}
	if err := s.RebuildRollups(ctx, f.from(), f.to()); err != nil {
		b.Fatal(err)
	}
	from, to = benchMonth(time.UTC)
	return f, s, from, to, benchBook(b, "UTC")
}
