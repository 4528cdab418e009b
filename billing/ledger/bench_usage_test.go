package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// adviseFleet opens (building it once, cached in the temp dir) the
// advisor's benchmark ledger: days of a 100-GPU fleet at one-minute rows,
// 25 Deployments of four replicas on whole A100s, every GPU with a
// container row and an idle row per minute (GPULEDGER_BENCH_ADVISE_DAYS,
// default 30: 4.32 M container + 4.32 M idle rows, about 1.7 GB, a few
// minutes to build; cmd/gpuledger's AdviseEmbeddedMonth builds the same
// file).
func adviseFleet(b *testing.B) (*FileStore, time.Time, time.Time) {
	days := 30
	if v, err := strconv.Atoi(os.Getenv("GPULEDGER_BENCH_ADVISE_DAYS")); err == nil && v > 0 {
		days = v
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, days)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("gpuledger-bench-advise-%dd.db", days))
	ctx := context.Background()
	if _, err := os.Stat(path + ".done"); err != nil {
		os.Remove(path)
		st, err := OpenFile(ctx, path, FileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var batch []attribution.Row
		for m := range days * 24 * 60 {
			batch = append(batch, adviseFleetMinute(from.Add(time.Duration(m)*time.Minute), m)...)
			if len(batch) >= 20000 {
				if err := st.Append(ctx, batch, nil); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := st.Append(ctx, batch, nil); err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path+".done", nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	st, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, from, to
}

// BenchmarkAdviseReadRows: what advise read before, every row of the
// period through Rows.
//
//	go test -run '^$' -bench AdviseRead -benchtime 1x -timeout 30m ./billing/ledger
func BenchmarkAdviseReadRows(b *testing.B) {
	st, from, to := adviseFleet(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		if err := st.Rows(ctx, from, to, func(r attribution.Row) error {
			if r.Kind == attribution.KindContainer {
				n++
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "container-rows")
	}
}

// BenchmarkAdviseReadContainerRows: what advise reads now.
func BenchmarkAdviseReadContainerRows(b *testing.B) {
	st, from, to := adviseFleet(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		if err := st.ContainerRows(ctx, from, to, func(r attribution.Row) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "container-rows")
	}
}
