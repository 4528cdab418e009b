package advise

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// BenchmarkAdviseFleetMonth: the advisor's own work on a month of a
// 100-GPU fleet (4.32 million container rows: 25 Deployments of four
// replicas, one whole A100 each) from rows in memory to the plan. The
// store's Rows streaming comes on top (see BENCHMARKS.md).
func BenchmarkAdviseFleetMonth(b *testing.B) {
	bk := book(b)
	rows := make([]attribution.Row, 100)
	for i := range rows {
		rows[i] = attribution.Row{Node: fmt.Sprintf("node-%d", i/8), GPUUUID: fmt.Sprintf("GPU-%d", i), GPUModel: "A100-SXM4-80GB",
			SliceID: fmt.Sprintf("GPU-%d", i), SharingMode: "exclusive", Kind: attribution.KindContainer,
			Namespace: fmt.Sprintf("team-%d", i/20), Pod: fmt.Sprintf("svc%d-7d4b9c8f6d-%cxz2q", i/4, "bcdf"[i%4]),
			PodUID: fmt.Sprintf("uid-%d", i), Container: "main", Team: fmt.Sprintf("team-%d", i/20), AllocatedGPUSeconds: 60, Method: "measured"}
	}
	for b.Loop() {
		a, err := New(nov, dec, nil, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for m := range mins {
			start := nov.Add(time.Duration(m) * time.Minute)
			for i := range rows {
				r := &rows[i]
				r.IntervalStart, r.IntervalEnd = start, start.Add(time.Minute)
				r.UsedGPUSeconds = 60 * float64((m*7+i*13)%100) / 100 * float64(i%5) / 5
				r.MemoryMiBSeconds = 60 * 4000
				if err := a.AddRow(*r); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := a.Plan(bk); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdviseHostileServiceTime: a month of the seven light replicas
// (TestSevenIdleishReplicas) whose pods declare a 1µs service time, the
// annotation's smallest value: from rows in memory to the plan, the
// latency simulation included.
func BenchmarkAdviseHostileServiceTime(b *testing.B) {
	rs, pods := annotated("1us")
	bk := book(b)
	cpu := cpuSeconds()
	for b.Loop() {
		a, err := New(nov, dec, pods, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for r := range rowsOf(rs) {
			if err := a.AddRow(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := a.Plan(bk); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
}

// cpuSeconds is the process's user+system CPU time: on a machine shared
// with other work the wall time moves with the load, the CPU time much
// less.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
