package clickhouse

import (
	"bytes"
	"context"
	"testing"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// BenchmarkFOCUSExportPerDeviceClickHouse: BenchmarkFOCUSExportClickHouse
// with the rows per GPU or MIG instance and pod (report.LoadDevices: the
// ByDevice day aggregates, summed from the raw rows FINAL), as `report
// --format focus` writes them (target: under 15 s for 100 GPUs).
//
//	go test -run '^$' -bench FOCUSExportPerDeviceClickHouse -benchtime 3x -timeout 30m ./ledger/clickhouse
func BenchmarkFOCUSExportPerDeviceClickHouse(b *testing.B) {
	ctx := context.Background()
	f, s, from, to, book := focusBenchMonth(ctx, b)
	b.Run("export", func(b *testing.B) {
		var r *report.Report
		var buf bytes.Buffer
		for i := 0; i < b.N; i++ {
			var err error
			if r, err = report.Build(ctx, s, book, from, to); err != nil {
				b.Fatal(err)
			}
			if err := report.LoadDevices(ctx, s, r); err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			if err := report.WriteFOCUS(&buf, r); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		f.checkReport(b, r, from, to)
		n := bytes.Count(buf.Bytes(), []byte("\n")) - 1
		if vs, err := focusvalidate.Validate(&buf); err != nil || len(vs) > 0 {
			b.Fatalf("validator: %v %v", vs, err)
		}
		b.ReportMetric(float64(len(r.Devices)), "device-aggregates")
		b.ReportMetric(float64(n), "focus-rows")
	})
}
