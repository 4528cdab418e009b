package filestore

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// BenchmarkIntegrityCost: what a reader pays for the damage checks, on the
// ledger file GPULEDGER_BENCH_LEDGER (a report's read-only open, and the
// aggregates of the whole month the file holds, by day, per team and per
// device). Where the file does not exist it is built first: 30 days of
// 100 GPUs at 15-minute rows (1.44 million rows), whose rollups are as
// large as those of one-minute rows (one row per slot and group, per slot
// and device), so the rollup walk costs what a 100-GPU month's does.
//
//	GPULEDGER_BENCH_LEDGER=/tmp/integrity-bench.db go test -run '^$' -bench IntegrityCost -benchtime 20x -count 5 ./ledger/filestore
func BenchmarkIntegrityCost(b *testing.B) {
	path := os.Getenv("GPULEDGER_BENCH_LEDGER")
	if path == "" {
		b.Skip("set GPULEDGER_BENCH_LEDGER to a ledger file (built there when missing)")
	}
	ctx := context.Background()
	if _, err := os.Stat(path); err != nil {
		s, err := OpenFile(ctx, path, FileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for d := 0; d < 30; d++ {
			if err := s.Append(ctx, fleetRows(t0.Add(time.Duration(d)*24*time.Hour), 96, 15*time.Minute, 100), nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", sqliteURI(path, readOnlyParams))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var lo, hi int64
	if err := db.QueryRow("SELECT min(interval_start_ns), max(interval_start_ns) FROM ledger_rows").Scan(&lo, &hi); err != nil {
		b.Fatal(err)
	}
	from := fromNS(lo).Truncate(24 * time.Hour)
	to := fromNS(hi).Truncate(24 * time.Hour).Add(24 * time.Hour)
	for _, pragma := range []string{"quick_check", "integrity_check"} {
		b.Run(pragma+" of the small tables", func(b *testing.B) {
			for range b.N {
				for _, t := range smallTables {
					var res string
					if err := db.QueryRow("PRAGMA " + pragma + "(" + t + ")").Scan(&res); err != nil || res != "ok" {
						b.Fatalf("%s(%s): %q %v", pragma, t, res, err)
					}
				}
			}
		})
	}
	b.Run("read-only open", func(b *testing.B) {
		for range b.N {
			s, err := OpenReadOnly(ctx, path, FileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, q := range []struct {
		name     string
		byDevice bool
	}{{"aggregate by day", false}, {"aggregate by day per device", true}} {
		b.Run(q.name, func(b *testing.B) {
			for range b.N {
				if _, err := s.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Bucket: ledger.BucketDay, ByDevice: q.byDevice}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
