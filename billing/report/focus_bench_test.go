package report

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// BenchmarkFOCUSExport: the FOCUS export (Build from the embedded store,
// then WriteFOCUS) of BenchmarkMonthlyReport's March, on the same ledger
// file and with the same variables: GPULEDGER_BENCH_REPORT_COPIES=25 is the
// 100-GPU month of BENCHMARKS.md (target: under 5 s). The file written is
// then checked by the FOCUS validator, outside the timing.
//
//	GPULEDGER_BENCH_REPORT_COPIES=25 GPULEDGER_BENCH_REPORT_LEDGER=/tmp/fleet100.db go test -run '^$' -bench FOCUSExport -benchtime 5x -timeout 60m ./billing/report
func BenchmarkFOCUSExport(b *testing.B) {
	ctx := context.Background()
	st, rows, from, to := benchMonthStore(ctx, b)
	bk := monthBook(b, "UTC", "allocation", "shared")
	var err error
	// The timed loop is a sub-benchmark, so the ledger is built once
	// however many rounds the benchmark runs.
	b.Run("export", func(b *testing.B) {
		var r *Report
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if r, err = Build(ctx, st, bk, from, to); err != nil {
				b.Fatal(err)
			}
			if err := WriteFOCUS(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		var buf bytes.Buffer
		if err := WriteFOCUS(&buf, r); err != nil {
			b.Fatal(err)
		}
		if vs, err := focusvalidate.Validate(&buf); err != nil || len(vs) > 0 {
			b.Fatalf("validator: %v %v", vs, err)
		}
		b.ReportMetric(float64(rows), "ledger-rows")
		b.ReportMetric(float64(len(r.Lines)), "focus-rows")
	})
}

// BenchmarkFOCUSExportPerDevice: BenchmarkFOCUSExport with the FOCUS rows
// per GPU or MIG instance and pod (LoadDevices: the ByDevice day
// aggregates from the per-device rollup, then the split), as `report
// --format focus` writes them. Same ledger file and variables (target:
// under 5 s for the 100-GPU month).
//
//	GPULEDGER_BENCH_REPORT_COPIES=25 GPULEDGER_BENCH_REPORT_LEDGER=/tmp/fleet100.db go test -run '^$' -bench FOCUSExportPerDevice -benchtime 3x -timeout 60m ./billing/report
func BenchmarkFOCUSExportPerDevice(b *testing.B) {
	ctx := context.Background()
	st, rows, from, to := benchMonthStore(ctx, b)
	bk := monthBook(b, "UTC", "allocation", "shared")
	var err error
	b.Run("export", func(b *testing.B) {
		var r *Report
		var buf bytes.Buffer
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if r, err = Build(ctx, st, bk, from, to); err != nil {
				b.Fatal(err)
			}
			if err := LoadDevices(ctx, st, r); err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			if err := WriteFOCUS(&buf, r); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		n := bytes.Count(buf.Bytes(), []byte("\n")) - 1
		if vs, err := focusvalidate.Validate(&buf); err != nil || len(vs) > 0 {
			b.Fatalf("validator: %v %v", vs, err)
		}
		b.ReportMetric(float64(rows), "ledger-rows")
		b.ReportMetric(float64(len(r.Devices)), "device-aggregates")
		b.ReportMetric(float64(n), "focus-rows")
	})
}
