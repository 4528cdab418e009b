package attribution

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// A container running on a MIG instance it does not hold: scenario.md's
// ground truth charges w(i) x its fractions there to it (only host
// processes are unattributed).

func TestMIGStrayOnUnheldInstanceIsMeasured(t *testing.T) {
	g := gpuID(1)
	i1, i2, i3 := migID(11), migID(12), migID(13)
	o := newObs(at(0), at(7))
	o.migGPU(g, 11, []int{2, 2, 2}, []float64{0.5, 0, 0.4})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-2g.20gb", i1).
		alloc("b", "pb", "c", "nvidia.com/mig-2g.20gb", i2).
		proc(1, g, i1, 100, uidA, "c", "x").
		proc(2, g, i3, 100, uidB, "c", "x") // b holds i2 but runs on i3
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// w = 2/7 each. i1: busy 2/7 x 0.5 x 7 = 1 s, a's. i3: 2/7 x 0.4 x 7
	// = 0.8 s, nobody holds it and only b runs there: b's, measured.
	wantRow(t, ctrOf(t, gc, "pa", "c", i1), string(tenancy.MIG), MethodMeasured, 2.0/7, 2, 1)
	wantRow(t, ctrOf(t, gc, "pb", "c", i2), string(tenancy.MIG), MethodMeasured, 2.0/7, 2, 0)
	wantRow(t, ctrOf(t, gc, "pb", "c", i3), string(tenancy.MIG), MethodMeasured, 0, 0, 0.8)
	// unallocated: i3's 2 s + the 1/7 of slices no instance has = 3 s;
	// unattributed 0; idle 7 - 1.8 = 5.2.
	wantResiduals(t, gc, 3, 0, 5.2)
}

func TestMIGStraysAndHostProcessSplitByReplica(t *testing.T) {
	g := gpuID(1)
	i1 := migID(11)
	o := newObs(at(0), at(7))
	o.migGPU(g, 11, []int{3}, []float64{0.6})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		proc(1, g, i1, 100, uidA, "c", "x").
		proc(2, g, i1, 100, uidB, "c", "x").
		proc(3, g, i1, 100, "", "", "dcgm-probe")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// Busy 3/7 x 0.6 x 7 = 1.8 s, nobody holds i1: a, b and the host
	// process one replica each, 0.6 s apiece (estimated), the host's
	// unattributed. Unallocated the whole 7 s; idle 7 - 1.8 = 5.2.
	wantRow(t, ctrOf(t, gc, "pa", "c", i1), string(tenancy.MIG), MethodEstimated, 0, 0, 0.6)
	wantRow(t, ctrOf(t, gc, "pb", "c", i1), string(tenancy.MIG), MethodEstimated, 0, 0, 0.6)
	wantResiduals(t, gc, 7, 0.6, 5.2)
}

func TestMIGStrayBesideIdleHolderTakesItsModeAndTheBusyTime(t *testing.T) {
	g := gpuID(1)
	i1, i2 := migID(11), migID(12)
	o := newObs(at(0), at(14)).label(LabelSharingStrategy, "time-slicing").
		label("nvidia.com/mig-3g.40gb.replicas", "2")
	o.migGPU(g, 11, []int{3, 3}, []float64{0.5, 0.25})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		pod("c", "pc", uidC, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-3g.40gb", i1+"::0").
		alloc("b", "pb", "c", "nvidia.com/mig-3g.40gb", i1+"::1").
		alloc("c", "pc", "c", "nvidia.com/mig-3g.40gb", i2+"::0").
		proc(1, g, i1, 100, uidA, "c", "x").
		proc(2, g, i2, 100, uidB, "c", "x") // b holds a replica of i1, runs on i2
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// Shares (3/7)/2 = 3/14, allocated 3 s each. i1: busy 3/7 x 0.5 x 14
	// = 3 s, a the only holder running: all a's (estimated, shared). i2:
	// busy 3/7 x 0.25 x 14 = 1.5 s; its holder c runs nothing, b is the
	// only one running there: b's, measured, in b's own mode.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MIGTimeslicing), MethodEstimated, 3.0/14, 3, 3)
	wantRow(t, ctrOf(t, gc, "pb", "c", i1+"::1"), string(tenancy.MIGTimeslicing), MethodEstimated, 3.0/14, 3, 0)
	wantRow(t, ctrOf(t, gc, "pb", "c", i2), string(tenancy.MIGTimeslicing), MethodMeasured, 0, 0, 1.5)
	wantRow(t, ctrOf(t, gc, "pc", "c", ""), string(tenancy.MIGTimeslicing), MethodMeasured, 3.0/14, 3, 0)
	// Unallocated 14 - 9 = 5; unattributed 0; idle 14 - 4.5 = 9.5.
	wantResiduals(t, gc, 5, 0, 9.5)
}

func TestMIGStrayHoldingNothingOnTheGPUIsMIG(t *testing.T) {
	g := gpuID(1)
	i1, i2 := migID(11), migID(12)
	o := newObs(at(0), at(14)).label(LabelSharingStrategy, "time-slicing").
		label("nvidia.com/mig-3g.40gb.replicas", "2")
	o.migGPU(g, 11, []int{3, 3}, []float64{0.5, 0.25})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		pod("d", "pd", uidC, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-3g.40gb", i1+"::0").
		alloc("b", "pb", "c", "nvidia.com/mig-3g.40gb", i1+"::1").
		proc(1, g, i1, 100, uidA, "c", "x").
		proc(2, g, i2, 100, uidC, "c", "x") // d holds nothing on this GPU
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// The GPU's dominant mode is mig+timeslicing, but d shares nothing:
	// its row on i2 is plain mig, with i2's whole busy time 3/7 x 0.25 x
	// 14 = 1.5 s, measured.
	wantRow(t, ctrOf(t, gc, "pd", "c", i2), string(tenancy.MIG), MethodMeasured, 0, 0, 1.5)
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MIGTimeslicing), MethodEstimated, 3.0/14, 3, 3)
	// Unallocated 14 - 6 = 8; idle 14 - 4.5 = 9.5.
	wantResiduals(t, gc, 8, 0, 9.5)
}
