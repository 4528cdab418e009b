package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

// BenchmarkMonthlyReport: the March report of 32 GPUs at one-minute ledger
// resolution (8 copies of monthFleet: MIG, time-slicing, MPS and exclusive
// GPUs with daily tenants; 44,640 intervals, about 5.9 million rows) from
// the embedded store, CSV and HTML written. Generating the ledger takes
// minutes; GPULEDGER_BENCH_REPORT_LEDGER=FILE keeps it for the next run, and
// GPULEDGER_BENCH_REPORT_COPIES=N builds N copies of the 4-GPU fleet instead
// of 8 (25 copies: the 100-GPU month the export figure of BENCHMARKS.md uses).
//
//	GPULEDGER_BENCH_REPORT_LEDGER=/tmp/bench-report.db go test -run '^$' -bench MonthlyReport -benchtime 5x ./billing/report
func BenchmarkMonthlyReport(b *testing.B) {
	ctx := context.Background()
	st, rows, from, to := benchMonthStore(ctx, b)
	bk := monthBook(b, "UTC", "allocation", "shared")
	b.Run("report", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r, err := Build(ctx, st, bk, from, to)
			if err != nil {
				b.Fatal(err)
			}
			if err := WriteCSV(io.Discard, r); err != nil {
				b.Fatal(err)
			}
			if err := WriteHTML(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows), "ledger-rows")
	})
	// With an energy section: a rate and one intensity (no more ledger
	// reads), then intensities per node name (one more read, of the raw
	// rows' energy per node: the rollups do not keep the node).
	for name, energy := range map[string]string{"energy": "energy: {rate: 0.15, carbonIntensity: 350}\n",
		"energy-per-node": "energy:\n  carbonIntensity: 350\n  carbonIntensityByNode: {node-a: 30}\n"} {
		y := "currency: USD\npolicy: allocation\nidle: shared\ndefaultRate: 1.00\nrates:\n"
		for m, r := range monthRates {
			y += fmt.Sprintf("  %q: %s\n", m, r)
		}
		eb := book(b, y+energy)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r, err := Build(ctx, st, eb, from, to)
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteCSV(io.Discard, r); err != nil {
					b.Fatal(err)
				}
				if err := WriteHTML(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Policy quota: the month's quota changes (each team's quota changed
	// daily), the hourly aggregates the quota section reads and the quota
	// lines, on top of the report.
	b.Run("quota", func(b *testing.B) {
		var changes []quota.Change
		for d := from; d.Before(to); d = d.Add(24 * time.Hour) {
			for i, team := range []string{"genai", "search", "data", "ads", "fraud", "vision", "research"} {
				k := quota.Key{Source: quota.SourceKueue, Object: "cq-" + team, Resource: quota.ResourceAnyGPU}
				changes = append(changes, quota.Change{At: d.Add(time.Duration(i) * time.Hour), Entry: quota.Entry{Key: k, Team: team, Milli: int64(500 * (1 + (d.Day()+i)%5))}})
			}
		}
		if err := st.AppendQuota(ctx, changes); err != nil {
			b.Fatal(err)
		}
		y := "currency: USD\npolicy: quota\ndefaultRate: 1.00\nquota: {source: kueue, rate: 1.50, aboveRate: 3.00}\nrates:\n"
		for m, r := range monthRates {
			y += fmt.Sprintf("  %q: %s\n", m, r)
		}
		qb := book(b, y)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r, err := Build(ctx, st, qb, from, to)
			if err != nil {
				b.Fatal(err)
			}
			if err := WriteCSV(io.Discard, r); err != nil {
				b.Fatal(err)
			}
			if err := WriteHTML(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(changes)), "quota-changes")
	})
	// The store's part: the day aggregates alone.
	b.Run("store-aggregate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			q := ledger.AggregateQuery{From: from, To: to, Location: bk.Location, Bucket: ledger.BucketDay}
			if _, err := st.Aggregate(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The report's part: the same aggregates, already read.
	b.Run("from-aggregates", func(b *testing.B) {
		q := ledger.AggregateQuery{From: from, To: to, Location: bk.Location, Bucket: ledger.BucketDay}
		aggs, err := st.Aggregate(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		src := fixedSource(aggs)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r, err := Build(ctx, src, bk, from, to)
			if err != nil {
				b.Fatal(err)
			}
			if err := WriteCSV(io.Discard, r); err != nil {
				b.Fatal(err)
			}
			if err := WriteHTML(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(aggs)), "aggregates")
	})
}

// fixedSource serves aggregates already read.
type fixedSource []ledger.Aggregate

func (f fixedSource) Aggregate(context.Context, ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	return f, nil
}

func (fixedSource) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	return keepsNone{}.QuotaChanges(ctx, from, to, fn)
}

func (fixedSource) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	return keepsNone{}.Coverage(ctx, from, to)
}

func (fixedSource) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	return keepsNone{}.NodeLabels(ctx, key, at)
}

func (f fixedSource) Findings(context.Context, time.Time, time.Time, func(attribution.Finding) error) error {
	return nil
}

// benchLedger writes the 32-GPU month to path unless it is there already,
// one day per transaction, and returns its row count.
func benchLedger(ctx context.Context, b *testing.B, path string, from, to time.Time) (int64, error) {
	st, err := filestore.OpenFile(ctx, path, filestore.FileOptions{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	aggs, err := st.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to})
	if err != nil {
		return 0, err
	}
	var have int64
	for _, a := range aggs {
		have += a.Rows
	}
	if have > 0 {
		return have, nil
	}
	gpus, tenants := monthFleet(from, to, time.UTC)
	var fleet []gpu
	var fleetTenants []tenant
	copies := 8
	if v, err := strconv.Atoi(os.Getenv("GPULEDGER_BENCH_REPORT_COPIES")); err == nil && v > 0 {
		copies = v
	}
	for c := 0; c < copies; c++ {
		for _, g := range gpus {
			g.node, g.uuid = fmt.Sprintf("%s-%d", g.node, c), fmt.Sprintf("%s-%d", g.uuid, c)
			fleet = append(fleet, g)
		}
		for _, tn := range tenants {
			tn.gpu += c * len(gpus)
			tn.pod = fmt.Sprintf("%s-%d", tn.pod, c)
			fleetTenants = append(fleetTenants, tn)
		}
	}
	began := time.Now()
	var n int64
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		dayFleet := make([]gpu, len(fleet))
		for i, g := range fleet {
			g.from, g.to = day, day.AddDate(0, 0, 1)
			dayFleet[i] = g
		}
		rows := ledgerRows(dayFleet, fleetTenants, time.Minute)
		if err := st.Append(ctx, rows, nil); err != nil {
			return 0, err
		}
		n += int64(len(rows))
	}
	b.Logf("wrote %d ledger rows to %s in %s", n, path, time.Since(began).Round(time.Second))
	return n, nil
}

// benchMonthStore opens the benchmarks' March ledger (benchLedger builds it
// once; GPULEDGER_BENCH_REPORT_LEDGER keeps it across runs), closed at the
// benchmark's end, with its row count and bounds.
func benchMonthStore(ctx context.Context, b *testing.B) (st *filestore.FileStore, rows int64, from, to time.Time) {
	b.Helper()
	path := os.Getenv("GPULEDGER_BENCH_REPORT_LEDGER")
	if path == "" {
		path = filepath.Join(b.TempDir(), "ledger.db")
	}
	from, to = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	rows, err := benchLedger(ctx, b, path, from, to)
	if err != nil {
		b.Fatal(err)
	}
	st, err = filestore.OpenFile(ctx, path, filestore.FileOptions{MustExist: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, rows, from, to
}
