package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// denseScenario is a day (or the given length) on a node with 8 GPUs (4 time-sliced, 2 MPS, 2 MIG
// with seven 1g instances), 400 pods and 1,000 processes whose busy traces
// change every 1..120 s. Fractions respect each mode's physics; MPS GPUs are
// oversubscribed so their busy time needs the exact sweep.
func denseScenario(day time.Duration) *scenario.Scenario {
	r := rand.New(rand.NewPCG(7, 11))
	sc := &scenario.Scenario{
		Name: "dense", Start: t0, Duration: day, PollInterval: time.Second, LedgerInterval: time.Minute,
		DriverSamplePeriod: time.Second / 6,
	}
	modes := []string{"timeslicing", "timeslicing", "timeslicing", "timeslicing", "mps", "mps", "mig", "mig"}
	var devices [][]string // per GPU: device UUIDs processes may run on
	for i, mode := range modes {
		g := scenario.GPU{Index: i, UUID: fmt.Sprintf("GPU-%08d-0000-4000-8000-000000000000", i), Model: "H100-SXM5-80GB", Mode: mode, IdleWatts: 70, MaxWatts: 700}
		devs := []string{g.UUID}
		if mode == scenario.ModeMIG {
			devs = nil
			for j := range 7 {
				u := fmt.Sprintf("MIG-%08d-0000-4000-8000-%012d", i, j)
				g.MIGInstances = append(g.MIGInstances, scenario.MIGInstance{UUID: u, Profile: "1g.10gb", GI: j + 1})
				devs = append(devs, u)
			}
		}
		sc.GPUs = append(sc.GPUs, g)
		devices = append(devices, devs)
	}
	// First pass: which device each process runs on, to bound fractions.
	type placed struct {
		pod, gpu int
		dev      string
	}
	var procs []placed
	perDev := map[string]int{}
	for p := range 400 {
		g := p % 8
		n := 2 + (p+1)%2 // 3, 2, 3, 2, ... -> 1,000 processes
		for k := range n {
			dev := devices[g][(p/8+k)%len(devices[g])]
			procs = append(procs, placed{p, g, dev})
			perDev[dev]++
		}
	}
	for p := range 400 {
		sc.Pods = append(sc.Pods, scenario.Pod{
			UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", p), Namespace: "ns", Name: fmt.Sprintf("pod-%d", p), End: day,
			Containers: []scenario.Container{{Name: "main", ID: fmt.Sprintf("%064d", p),
				Devices: []scenario.DeviceRequest{{Resource: "nvidia.com/gpu", IDs: []string{devices[p%8][0] + "::0"}}}}},
		})
	}
	for i, pl := range procs {
		maxFrac := 1 / float64(perDev[pl.dev])
		if modes[pl.gpu] == scenario.ModeMPS {
			maxFrac = 0.05
		}
		var busy []scenario.Segment
		for t := time.Duration(0); t < day; {
			l := time.Duration(1+r.IntN(120)) * time.Second
			busy = append(busy, scenario.Segment{From: t, To: min(t+l, day), Fraction: maxFrac * r.Float64()})
			t += l
		}
		c := &sc.Pods[pl.pod].Containers[0]
		c.Processes = append(c.Processes, scenario.Process{PID: uint32(10000 + i), Device: pl.dev, MemoryMiB: 1000, End: day, Busy: busy})
	}
	return sc
}

// BenchmarkAdvanceDenseNode measures one simulated second of a dense node:
// Advance by 1 s, then read what a collector cycle reads (process and device
// samples, running processes, energy on every GPU, running processes on
// every MIG device, DCGM).
func BenchmarkAdvanceDenseNode(b *testing.B) {
	sc := denseScenario(24 * time.Hour)
	ctx := context.Background()
	var (
		n        *Node
		sec      int
		lastProc []uint64
		lastDev  []uint64
		handles  []nvml.Device
		migs     []nvml.Device
	)
	reset := func() {
		if n != nil {
			n.Close()
		}
		var err error
		if n, err = New(ctx, sc, Options{}); err != nil {
			b.Fatal(err)
		}
		if err := n.DCGM().Watch(ctx, time.Second); err != nil {
			b.Fatal(err)
		}
		sec, handles, migs = 0, nil, nil
		lastProc, lastDev = make([]uint64, 8), make([]uint64, 8)
		for i := range 8 {
			d, _ := n.NVML().DeviceGetHandleByIndex(i)
			handles = append(handles, d)
			for j := 0; ; j++ {
				m, ret := d.GetMigDeviceHandleByIndex(j)
				if ret != nvml.SUCCESS {
					break
				}
				migs = append(migs, m)
			}
		}
	}
	reset()
	defer func() { n.Close() }()
	var samples int
	// CPU time, unlike ns/op, does not depend on what else the machine runs.
	var cpu time.Duration
	began := cpuTime()
	b.ResetTimer()
	for range b.N {
		if sec == int(sc.Duration/time.Second) {
			b.StopTimer()
			cpu += cpuTime() - began
			reset()
			began = cpuTime()
			b.StartTimer()
		}
		sec++
		if err := n.Advance(t0.Add(time.Duration(sec) * time.Second)); err != nil {
			b.Fatal(err)
		}
		for i, d := range handles {
			if ps, ret := d.GetProcessUtilization(lastProc[i]); ret == nvml.SUCCESS {
				samples += len(ps)
				lastProc[i] = ps[len(ps)-1].TimeStamp
			}
			if _, ds, ret := d.GetSamples(nvml.GPU_UTILIZATION_SAMPLES, lastDev[i]); ret == nvml.SUCCESS {
				lastDev[i] = ds[len(ds)-1].TimeStamp
			}
			d.GetComputeRunningProcesses()
			d.GetTotalEnergyConsumption()
		}
		for _, m := range migs {
			m.GetComputeRunningProcesses()
		}
		if _, err := n.DCGM().Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu += cpuTime() - began
	b.ReportMetric(float64(samples)/float64(b.N), "samples/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestDenseScenarioPhysics keeps the benchmark honest: its node builds and
// a few seconds of it produce samples on every non-MIG GPU.
func TestDenseScenarioPhysics(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 1,000 procfs entries")
	}
	n := newNode(t, denseScenario(10*time.Minute))
	advance(t, n, 3*time.Second)
	for i := range 6 {
		ps, ret := handle(t, n, i).GetProcessUtilization(0)
		if ret != nvml.SUCCESS || len(ps) == 0 {
			t.Errorf("GPU %d: %d process samples (%v)", i, len(ps), ret)
		}
	}
	procs, _ := handle(t, n, 6).GetComputeRunningProcesses()
	if len(procs) != 150 { // 50 pods of 3 processes
		t.Errorf("MIG GPU 6 runs %d processes, want 150", len(procs))
	}
}
