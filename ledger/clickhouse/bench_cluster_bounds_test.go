package clickhouse

import (
	"context"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// BenchmarkFleetReportTwoClustersClickHouse: the day's bill of a fleet of
// two clusters of 100 GPUs each (5 rows a GPU-minute, 10:00 to 13:00 UTC:
// 30,000 rows in each cluster's edge hour), billed cluster by cluster
// (report.BuildFleet) on a fresh test database with clean rollups. Each
// cluster's data bounds are found in the server (FirstClusterRowStart,
// LastClusterRowEnd); before, its two edge hours were streamed.
//
//	go test -run '^$' -bench FleetReportTwoClustersClickHouse -benchtime 10x ./ledger/clickhouse
func BenchmarkFleetReportTwoClustersClickHouse(b *testing.B) {
	s, _ := openTest(b)
	ctx := context.Background()
	ten := t0.Add(10 * time.Hour)
	for i, c := range []string{"east", "west"} {
		rows := fleet(uint64(20+i), 25, 4, 180, ten)
		for j := range rows {
			rows[j].Cluster = c
		}
		appendAll(b, s, rows, 50000)
	}
	if err := s.RebuildRollups(ctx, ten, ten.Add(3*time.Hour)); err != nil {
		b.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", []byte("currency: USD\ntimezone: UTC\npolicy: allocation\nidle: shared\nrates:\n  A100-SXM4-80GB: 2.40\n  H100-80GB-HBM3: 4.10\ndefaultRate: 1.10\n"))
	if err != nil {
		b.Fatal(err)
	}
	from, to := t0, t0.Add(24*time.Hour)
	b.ResetTimer()
	for range b.N {
		r, err := report.BuildFleet(ctx, s, book, from, to, to, "")
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Clusters) != 2 {
			b.Fatalf("%d clusters billed, want 2", len(r.Clusters))
		}
	}
}
