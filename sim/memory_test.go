package sim

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestMemoryOverTime reads memory through every production path (NVML's
// running processes and memory info, DCGM's framebuffer per GPU and per
// MIG instance) while it changes, inside intervals and on their edges.
func TestMemoryOverTime(t *testing.T) {
	sc := migScenario()
	// pid 100 on mig0: 3000 MiB outside its intervals, 5000 on [2s,4s),
	// 0 on [4s,5s), 9000 on [6s,8s).
	p := &sc.Pods[0].Containers[0].Processes[0]
	p.Memory = []scenario.MemorySegment{{From: 2 * time.Second, To: 4 * time.Second, MiB: 5000}, {From: 4 * time.Second, To: 5 * time.Second, MiB: 0}, {From: 6 * time.Second, To: 8 * time.Second, MiB: 9000}}
	n := newNode(t, sc)
	ctx := context.Background()
	if err := n.DCGM().Watch(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	// Written by hand from the intervals above; pid 200 (500 MiB) and
	// host pid 50 (100 MiB) share mig1 and do not change.
	for _, c := range []struct {
		at   time.Duration
		want uint64
	}{
		{1 * time.Second, 3000}, {2 * time.Second, 5000}, {3999 * ms, 5000}, {4 * time.Second, 0},
		{5 * time.Second, 3000}, {7 * time.Second, 9000}, {8 * time.Second, 3000}, {10 * time.Second, 3000},
	} {
		advance(t, n, c.at)
		if got := usedByPID(t, handle(t, n, 0), 100); got != c.want<<20 {
			t.Errorf("at %v: GPU running processes say pid 100 uses %d MiB, want %d", c.at, got>>20, c.want)
		}
		inst, ret := handle(t, n, 0).GetMigDeviceHandleByIndex(0)
		if ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
		if got := usedByPID(t, inst, 100); got != c.want<<20 {
			t.Errorf("at %v: MIG running processes say %d MiB, want %d", c.at, got>>20, c.want)
		}
		if mem, ret := inst.GetMemoryInfo(); ret != nvml.SUCCESS || mem.Used != c.want<<20 {
			t.Errorf("at %v: MIG memory info used %d MiB (%v), want %d", c.at, mem.Used>>20, ret, c.want)
		}
		vals, err := n.DCGM().Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			want := map[dcgmsource.Entity]uint64{
				{GPUIndex: 0, GPUInstanceID: -1}: c.want + 600,
				{GPUIndex: 0, GPUInstanceID: 1}:  c.want,
				{GPUIndex: 0, GPUInstanceID: 2}:  600,
			}
			if w, ok := want[v.Entity]; ok && v.FBUsedMiB != w {
				t.Errorf("at %v: DCGM %+v framebuffer %d MiB, want %d", c.at, v.Entity, v.FBUsedMiB, w)
			}
		}
	}
}

func usedByPID(t *testing.T, d nvml.Device, pid uint32) uint64 {
	t.Helper()
	ps, ret := d.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	for _, p := range ps {
		if p.Pid == pid {
			return p.UsedGpuMemory
		}
	}
	t.Fatalf("pid %d not running", pid)
	return 0
}

func TestMemoryOutOfOrderRejected(t *testing.T) {
	sc := baseScenario(scenario.ModeTimeslicing, 10*time.Second)
	pr := proc1(100, gpu0, 10)
	pr.Memory = []scenario.MemorySegment{{From: 2 * time.Second, To: 4 * time.Second, MiB: 5}, {From: 3 * time.Second, To: 5 * time.Second, MiB: 6}}
	addPod(sc, "uid-a", "a", 0, 10*time.Second, pr)
	if _, err := New(context.Background(), sc, Options{}); err == nil {
		t.Fatal("overlapping memory intervals accepted")
	}
}

// TestMemAtAnyOrder reads in random order: the cursor must give the same
// answers as a plain scan.
func TestMemAtAnyOrder(t *testing.T) {
	p := &proc{memMiB: 7}
	if err := p.setMemory([]scenario.MemorySegment{{From: 1, To: 3, MiB: 10}, {From: 3, To: 4, MiB: 20}, {From: 6, To: 9, MiB: 30}}); err != nil {
		t.Fatal(err)
	}
	scan := func(at time.Duration) uint64 {
		for _, m := range p.mem {
			if m.from <= at && at < m.to {
				return m.mib
			}
		}
		return p.memMiB
	}
	for _, at := range []time.Duration{0, 8, 2, 3, 9, 5, 1, 6, 4, 11, 0, 7} {
		if got, want := p.memAt(at), scan(at); got != want {
			t.Errorf("memAt(%d) = %d, want %d", at, got, want)
		}
	}
}
