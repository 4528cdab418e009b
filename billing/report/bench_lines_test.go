package report

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// BenchmarkReportManyLines prices a month whose lines are many: 1,130
// lines a day for 31 days, each a pod that lives one day (the allocation
// API's month by pod at 1,000 GPUs), plus a day's unallocated capacity,
// under idle: shared; 70,000 lines (charges and shares) to price, round
// and sort. The aggregates are given, so this is the report's own work.
//
//	go test -run '^$' -bench ReportManyLines -benchtime 5x ./billing/report
func BenchmarkReportManyLines(b *testing.B) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	var aggs []ledger.Aggregate
	for d := from; d.Before(to); d = d.Add(24 * time.Hour) {
		for p := 0; p < 1130; p++ {
			aggs = append(aggs, ledger.Aggregate{BucketStart: d, Team: fmt.Sprintf("team-%02d", p%20),
				Namespace: fmt.Sprintf("ns-%02d\x00w-%03d\x00pod-%04d-%02d", p%100, p%300, p, d.Day()),
				GPUModel:  "A100-SXM4-80GB", Mode: "exclusive", Kind: attribution.KindContainer,
				AllocatedSeconds: 86400 - float64(p), UsedSeconds: 40000, MemoryMiBSeconds: 1e9, EnergyJoules: 1e7, Rows: 1440})
		}
		aggs = append(aggs, ledger.Aggregate{BucketStart: d, GPUModel: "A100-SXM4-80GB", Mode: "exclusive",
			Kind: attribution.KindUnallocated, AllocatedSeconds: 10 * 86400, Rows: 14400})
	}
	bk := monthBook(b, "UTC", "allocation", "shared")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Build(context.Background(), fixedSource(aggs), bk, from, to)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.ReportMetric(float64(len(r.Lines)), "lines")
		}
	}
}
