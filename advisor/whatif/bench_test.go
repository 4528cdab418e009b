package whatif

import (
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is the process's user+system CPU time: on a machine shared
// with other work the wall time moves with the load, the CPU time much
// less, so both are reported.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// BenchmarkMonth simulates a 30-day month of the reference model's seven tenants (12
// rps each, 10 ms) under all three mechanisms at once: about 218 million
// requests. The target is under 5 s.
func BenchmarkMonth(b *testing.B) {
	cfg := seedConfig()
	cfg.Duration = 30 * 24 * time.Hour
	cpu := cpuSeconds()
	for b.Loop() {
		res, err := Simulate(b.Context(), cfg, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res[0].Offered), "requests/op")
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
}

// BenchmarkMonthPerMode is the same month under one mechanism at a time
// (the merge of the arrival streams is paid by each).
func BenchmarkMonthPerMode(b *testing.B) {
	cfg := seedConfig()
	cfg.Duration = 30 * 24 * time.Hour
	for _, m := range AllModes {
		b.Run(string(m), func(b *testing.B) {
			cpu := cpuSeconds()
			for b.Loop() {
				if _, err := Simulate(b.Context(), cfg, 0, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
		})
	}
}
