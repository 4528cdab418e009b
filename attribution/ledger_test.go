package attribution

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// halfBusy is one cycle (prev, now] of an exclusive GPU held by pod pa,
// 50% busy, all of it pa's.
func halfBusy(prev, now float64, running bool) Observation {
	g := gpuID(1)
	o := newObs(at(prev), at(now))
	n := max(int(now-prev), 0)
	gp := o.wholeGPU(g, rep(50, n)...)
	gp.EnergyOK, gp.EnergyMilliJoules = true, uint64(now*1000*100) // 100 W
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g)
	if running {
		o.proc(1, g, g, 10, uidA, "c", "x").samples(g, 1, rep(50, n)...)
	}
	return o.Observation
}

type rowSum struct{ alloc, used, unalloc, unattr, idle, energy float64 }

func sumRows(rows []Row) rowSum {
	var s rowSum
	for _, r := range rows {
		switch r.Kind {
		case KindContainer:
			s.alloc += r.AllocatedGPUSeconds
			s.used += r.UsedGPUSeconds
		case KindUnallocated:
			s.unalloc += r.AllocatedGPUSeconds
		case KindUnattributed:
			s.unattr += r.UsedGPUSeconds
		case KindIdle:
			s.idle += r.UsedGPUSeconds
		}
		s.energy += r.EnergyJoules
	}
	return s
}

func TestLedgerIntervalsSplitAndFlush(t *testing.T) {
	e := NewEngine(Config{LedgerInterval: time.Minute})
	e.Observe(halfBusy(0, 0, true))
	for _, c := range [][2]float64{{0, 25}, {25, 50}} {
		if res := e.Observe(halfBusy(c[0], c[1], true)); len(res.Rows) != 0 {
			t.Fatalf("rows before the interval closed: %+v", res.Rows)
		}
	}
	// (50, 75] straddles 60 s: 10 s go to [0, 60), 15 s to [60, 120).
	res := e.Observe(halfBusy(50, 75, true))
	if len(res.Rows) != 4 {
		t.Fatalf("want 4 rows (container, unallocated, unattributed, idle), got %+v", res.Rows)
	}
	r := res.Rows[0]
	if !r.IntervalStart.Equal(at(0)) || !r.IntervalEnd.Equal(at(60)) || r.Kind != KindContainer ||
		r.SliceID != gpuID(1) || r.PodUID != uidA || r.Team != "a" || r.Method != MethodMeasured || r.Node != "n1" {
		t.Errorf("container row %+v", r)
	}
	s := sumRows(res.Rows)
	wantNear(t, "allocated", s.alloc, 60)
	wantNear(t, "used", s.used, 30)
	wantNear(t, "idle", s.idle, 30)
	wantNear(t, "unallocated", s.unalloc, 0)
	wantNear(t, "energy", s.energy, 6000) // 100 W x 60 s
	wantNear(t, "container energy", r.EnergyJoules, 3000)
	wantNear(t, "memory", r.MemoryMiBSeconds, 600)
	for i, k := range []Kind{KindUnallocated, KindUnattributed, KindIdle} {
		if x := res.Rows[i+1]; x.Kind != k || x.SliceID != gpuID(1) || x.SharingMode != string(tenancy.Exclusive) || x.Pod != "" {
			t.Errorf("residual row %d = %+v", i, x)
		}
	}

	// The pod stops running; the partial interval ends at the last cycle.
	e.Observe(halfBusy(75, 100, false))
	res = e.Flush(at(110))
	if len(res.Rows) != 4 || !res.Rows[0].IntervalStart.Equal(at(60)) || !res.Rows[0].IntervalEnd.Equal(at(100)) {
		t.Fatalf("flushed rows %+v", res.Rows)
	}
	s = sumRows(res.Rows)
	wantNear(t, "allocated", s.alloc, 40)
	// 15 s at 50% used, then 25 s where the busy time has no process.
	wantNear(t, "used", s.used, 7.5)
	wantNear(t, "unattributed", s.unattr, 12.5)
	wantNear(t, "idle", s.idle, 20)
	if res := e.Flush(at(120)); len(res.Rows) != 0 {
		t.Errorf("second flush emitted %+v", res.Rows)
	}
}

func TestLedgerStartsAtFirstCycleAndBreaksAtGaps(t *testing.T) {
	e := NewEngine(Config{LedgerInterval: time.Minute})
	e.Observe(halfBusy(30, 30, true))
	e.Observe(halfBusy(30, 40, true))
	// A gap: (40, 45] was never observed. Rows so far close at 40.
	res := e.Observe(halfBusy(45, 55, true))
	if len(res.Rows) != 4 || !res.Rows[0].IntervalStart.Equal(at(30)) || !res.Rows[0].IntervalEnd.Equal(at(40)) {
		t.Fatalf("rows at the gap %+v", res.Rows)
	}
	wantNear(t, "allocated", sumRows(res.Rows).alloc, 10)
	res = e.Observe(halfBusy(55, 65, true))
	if len(res.Rows) != 4 || !res.Rows[0].IntervalStart.Equal(at(45)) || !res.Rows[0].IntervalEnd.Equal(at(60)) {
		t.Fatalf("rows after the gap %+v", res.Rows)
	}
	wantNear(t, "allocated", sumRows(res.Rows).alloc, 15)
	wantNear(t, "idle", sumRows(res.Rows).idle, 7.5)
}

func TestLedgerMethodEstimatedIfAnyCycleWas(t *testing.T) {
	g := gpuID(1)
	e := NewEngine(Config{})
	mk := func(prev, now float64, label bool) Observation {
		o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing")
		if label {
			o.label(LabelReplicas, "2")
		}
		o.wholeGPU(g)
		o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0")
		return o.Observation
	}
	e.Observe(mk(0, 0, true))
	e.Observe(mk(0, 30, true))
	res := e.Observe(mk(30, 60, false)) // one replica seen: 1/1, estimated
	if len(res.Rows) != 4 || res.Rows[0].Method != MethodEstimated {
		t.Fatalf("rows %+v", res.Rows)
	}
	// 30 s at 1/2 and 30 s at 1/1.
	wantNear(t, "allocated", res.Rows[0].AllocatedGPUSeconds, 45)
	wantNear(t, "unallocated", res.Rows[1].AllocatedGPUSeconds, 15)
}
