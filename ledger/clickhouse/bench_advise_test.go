package clickhouse

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// BenchmarkAdviseClickHouse: what `gpuledger advise --period 2026-03`
// does against ClickHouse (report.Build, ContainerRows, Findings, the
// plan), over March of benchFleet at 100 GPUs by default (4.5 M rows;
// GPULEDGER_BENCH_GPUS scales it). The target is under 30 s.
//
//	go test -run '^$' -bench AdviseClickHouse -benchtime 2x -timeout 30m ./ledger/clickhouse
func BenchmarkAdviseClickHouse(b *testing.B) {
	if os.Getenv(envBenchGPUs) == "" {
		b.Setenv(envBenchGPUs, "100")
	}
	ctx := context.Background()
	f := benchFleet{gpus: benchGPUs(b)}
	s := benchStore(b, f)
	if err := f.ensure(ctx, b, s); err != nil {
		b.Fatal(err)
	}
	if err := s.RebuildRollups(ctx, f.from(), f.to()); err != nil {
		b.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", []byte("currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\n  H100-SXM5-80GB: 4.10\ndefaultRate: 1.10\n"))
	if err != nil {
		b.Fatal(err)
	}
	from, to := benchStart, benchStart.AddDate(0, 1, 0)
	b.ResetTimer()
	for b.Loop() {
		rep, err := report.Build(ctx, s, book, from, to)
		if err != nil {
			b.Fatal(err)
		}
		a, err := advise.New(rep.From, rep.To, nil, advise.Options{})
		if err != nil {
			b.Fatal(err)
		}
		began := time.Now()
		if err := s.ContainerRows(ctx, rep.From, rep.To, a.AddRow); err != nil {
			b.Fatal(err)
		}
		read := time.Since(began)
		if err := s.Findings(ctx, rep.From, rep.To, a.AddFinding); err != nil {
			b.Fatal(err)
		}
		plan, err := a.Plan(book)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(read.Seconds(), "read-s/op")
		b.ReportMetric(float64(len(plan.Recommendations)), "recommendations")
	}
}
