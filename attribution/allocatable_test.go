package attribution

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// Where no label gives the replica count, every ID kubelet advertises as
// allocatable counts (ledger.md: "the number of distinct ::<n> IDs"), not
// only those allocated so far.

func TestAllocatableIDsCountReplicas(t *testing.T) {
	g, g2 := gpuID(1), gpuID(2)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "time-slicing") // no replicas label
	o.wholeGPU(g)
	o.wholeGPU(g2)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"::1", g2+"::0")
	// g advertises ::0 .. ::3, g2 ::0 .. ::4; other resources, garbage and
	// an unknown GPU are skipped without an anomaly.
	o.AllocatableIDs = []string{g + "::0", g + "::1", g + "::2", g + "::3",
		g2 + "::0", g2 + "::1", g2 + "::2", g2 + "::3", g2 + "::4",
		"mlx5_0", "", gpuID(9) + "::0", g}
	res := attributeOnce(t, Config{}, o)
	if len(res.Anomalies) != 0 {
		t.Errorf("anomalies %+v, want none", res.Anomalies)
	}
	// g: 4 replicas, 1/4 each over 10 s = 2.5 s; unallocated 10 - 5 = 5.
	gc := gpuOf(t, res, g)
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Timeslicing), MethodEstimated, 0.25, 2.5, 0)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.Timeslicing), MethodEstimated, 0.25, 2.5, 0)
	wantNear(t, "unallocated", gc.Unallocated, 5)
	// g2: 5 replicas: 1/5 x 10 = 2 s; unallocated 8.
	gc2 := gpuOf(t, res, g2)
	wantRow(t, ctrOf(t, gc2, "pb", "c", ""), string(tenancy.Timeslicing), MethodEstimated, 0.2, 2, 0)
	wantNear(t, "unallocated", gc2.Unallocated, 8)
}

func TestAllocatableIDsCountMIGReplicasAndGKEClients(t *testing.T) {
	mg, g := gpuID(1), gpuID(2)
	i1 := migID(11)
	o := newObs(at(0), at(14)).label(LabelSharingStrategy, "time-slicing")
	o.migGPU(mg, 11, []int{3}, []float64{0})
	gp := o.wholeGPU(g)
	gp.Minor, gp.HasMinor = 4, true
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-3g.40gb", i1+"::1").
		alloc("b", "pb", "c", "nvidia.com/gpu", "nvidia4/vgpu2")
	o.AllocatableIDs = []string{i1 + "::0", i1 + "::1", i1 + "::2", "nvidia4/vgpu0", "nvidia4/vgpu1", "nvidia4/vgpu2", "nvidia4/vgpu3"}
	res := attributeOnce(t, Config{}, o)
	// MIG: 3 replicas of 3/7: 1/7, 2 s of 14.
	wantRow(t, ctrOf(t, gpuOf(t, res, mg), "pa", "c", ""), string(tenancy.MIGTimeslicing), MethodEstimated, 1.0/7, 2, 0)
	// GKE without the clients label: 4 vgpu IDs, 1/4: 3.5 s of 14.
	wantRow(t, ctrOf(t, gpuOf(t, res, g), "pb", "c", ""), string(tenancy.Timeslicing), MethodEstimated, 0.25, 3.5, 0)
}

func TestAllocatableIDsCountHAMiFallback(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c"). // no HAMi annotation
								alloc("a", "pa", "c", "nvidia.com/gpu", g+"-0")
	o.AllocatableIDs = []string{g + "-0", g + "-1", g + "-2", g + "-3"}
	res := attributeOnce(t, Config{}, o)
	// One virtual device of four: 1/4, 2.5 s of 10.
	wantRow(t, ctrOf(t, gpuOf(t, res, g), "pa", "c", ""), string(tenancy.HAMi), MethodEstimated, 0.25, 2.5, 0)
}

// The list is recorded when it changes (a new slice); a cycle without GPUs
// records nothing and leaves it to the next one; a label still wins.
func TestAllocatableIDsRecordedWhenChanged(t *testing.T) {
	g := gpuID(1)
	e := NewEngine(Config{})
	ids := []string{g + "::0", g + "::1"}
	obs := func(from, to float64, ids []string, withGPU bool) Observation {
		o := newObs(at(from), at(to)).label(LabelSharingStrategy, "time-slicing")
		if withGPU {
			o.wholeGPU(g)
		} else {
			o.Degraded = map[string]bool{"nvml": true}
		}
		o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0")
		o.AllocatableIDs = ids
		return o.Observation
	}
	share := func(res CycleResult) float64 {
		t.Helper()
		return ctrOf(t, gpuOf(t, res, g), "pa", "c", "").Share
	}
	e.Observe(obs(0, 0, ids, false)) // no GPUs: nothing recorded
	res := e.Observe(obs(0, 1, ids, true))
	wantNear(t, "share with 2 IDs", share(res), 0.5)
	// The same slice again, then a new one with four IDs.
	res = e.Observe(obs(1, 2, ids, true))
	wantNear(t, "share unchanged", share(res), 0.5)
	res = e.Observe(obs(2, 3, []string{g + "::0", g + "::1", g + "::2", g + "::3"}, true))
	wantNear(t, "share with 4 IDs", share(res), 0.25)
	// IDs once seen stay seen: a shorter list later does not raise it.
	res = e.Observe(obs(3, 4, []string{g + "::0"}, true))
	wantNear(t, "share after a shorter list", share(res), 0.25)

	o := newObs(at(0), at(1)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "2")
	o.wholeGPU(g)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0")
	o.AllocatableIDs = []string{g + "::0", g + "::1", g + "::2", g + "::3"}
	wantRow(t, ctrOf(t, gpuOf(t, attributeOnce(t, Config{}, o), g), "pa", "c", ""), string(tenancy.Timeslicing), MethodMeasured, 0.5, 0.5, 0)
}
