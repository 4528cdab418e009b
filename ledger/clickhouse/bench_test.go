package clickhouse

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkInsert measures one writer appending ledger rows of a 100-GPU
// fleet to the local server in batches of different sizes; rows/s is the
// figure BENCHMARKS.md reports. Each iteration appends new intervals, so
// every row has a new key. On a shared machine wall-clock rows/s is noisy,
// so the CPU the client and the server spent per row is reported too.
//
//	go test -run '^$' -bench BenchmarkInsert -benchtime 20x ./ledger/clickhouse
func BenchmarkInsert(b *testing.B) {
	for _, minutes := range []int{20, 200, 1000} { // x 500 rows per minute
		b.Run(fmt.Sprintf("batch=%d", minutes*500), func(b *testing.B) {
			s, _ := openTest(b)
			ctx := context.Background()
			rows := fleet(7, 10, 10, minutes, t0)
			step := time.Duration(minutes) * time.Minute
			srv := harness.Local()
			var srv0 time.Duration
			if srv != nil {
				srv0, _ = srv.CPUTime()
			}
			cli0 := selfCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i > 0 {
					for j := range rows {
						rows[j].IntervalStart = rows[j].IntervalStart.Add(step)
						rows[j].IntervalEnd = rows[j].IntervalEnd.Add(step)
					}
				}
				if err := s.Append(ctx, rows, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N * len(rows))
			b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64((selfCPU()-cli0).Nanoseconds())/n, "client-cpu-ns/row")
			if srv != nil {
				if srv1, err := srv.CPUTime(); err == nil {
					b.ReportMetric(float64((srv1-srv0).Nanoseconds())/n, "server-cpu-ns/row")
				}
			}
		})
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
