package filestore

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// BenchmarkAppend: one collector-sized transaction per iteration (200 GPUs x
// 5 rows), new keys each time, synchronous=FULL (an fsync per commit).
//
//	go test -run '^$' -bench BenchmarkAppend -benchtime 200x ./ledger/filestore
func BenchmarkAppend(b *testing.B) {
	for _, gpus := range []int{200, 2000} {
		b.Run("rows="+strconv.Itoa(gpus*5), func(b *testing.B) {
			s := openTemp(b, FileOptions{})
			ctx := context.Background()
			batches := make([][]attribution.Row, 8)
			for i := range batches {
				batches[i] = fleetRows(t0, 1, time.Minute, gpus)
			}
			b.ResetTimer()
			rows := 0
			for i := 0; i < b.N; i++ {
				batch := batches[i%len(batches)]
				start := t0.Add(time.Duration(i) * time.Minute)
				for j := range batch {
					batch[j].IntervalStart, batch[j].IntervalEnd = start, start.Add(time.Minute)
				}
				if err := s.Append(ctx, batch, nil); err != nil {
					b.Fatal(err)
				}
				rows += len(batch)
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkExportCSV streams a stored ledger to io.Discard and samples the
// heap while it runs: peak-heap-MiB must not grow with the row count
// (GPULEDGER_BENCH_EXPORT_INTERVALS scales the ledger; default 200 one-minute
// intervals of 100 GPUs, 100k rows).
//
//	go test -run '^$' -bench BenchmarkExportCSV -benchtime 3x ./ledger/filestore
func BenchmarkExportCSV(b *testing.B) {
	intervals := 200
	if v, err := strconv.Atoi(os.Getenv("GPULEDGER_BENCH_EXPORT_INTERVALS")); err == nil && v > 0 {
		intervals = v
	}
	s := openTemp(b, FileOptions{})
	ctx := context.Background()
	for k := 0; k < intervals; k += 20 {
		n := min(20, intervals-k)
		if err := s.Append(ctx, fleetRows(t0.Add(time.Duration(k)*time.Minute), n, time.Minute, 100), nil); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	sample := func(int64) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		n, err := ledger.Export(ctx, s, time.Time{}, time.Time{}, ledger.FormatCSV, io.Discard, sample)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(total)/float64(b.N), "rows/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(int64(peak)-int64(base))/(1<<20), "heap-growth-MiB")
}
