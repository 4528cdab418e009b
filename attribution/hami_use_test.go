package attribution

import (
	"testing"

	"github.com/gpuledger/gpuledger/tenancy"
)

// A tenant patches its annotation to name a GPU this node does not have
// while its pod spec asks for 50 cores; its kubelet ID names the node's
// GPU, where its process runs 40% busy. It used to be charged nothing
// there (its use an unlisted GPU's, allocated 0) and, under idle: shared,
// its neighbour paid for the time. The device is charged on the GPU
// kubelet names at the limits' 50%, estimated, with unknown_device; the
// neighbour keeps its 30%.
func TestHAMiGhostGPUChargedWhereKubeletSays(t *testing.T) {
	g, ghost := gpuID(1), gpuID(99)
	o := newObs(at(0), at(10))
	o.wholeGPU(g, rep(50, 10)...).MemoryMiB = 80000
	lim := map[string]string{ResourceGPU: "1", HAMiResourceCores: "50", HAMiResourceMem: "20000"}
	o.hamiPod("a", "ghost", uidA, ghost+",NVIDIA,20000,50:;", lim, g+"-0", g, 1, 10000, 40)
	o.hamiPod("b", "honest", uidB, g+",NVIDIA,20000,30:;", nil, g+"-1", g, 2, 10000, 10)
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	wantRow(t, ctrOf(t, gc, "ghost", "c", g+"-0"), string(tenancy.HAMi), MethodEstimated, 0.5, 5, 4)
	wantRow(t, ctrOf(t, gc, "honest", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.3, 3, 1)
	wantResiduals(t, gc, 2, 0, 5)
	if !hasAnomaly(res, AnomalyUnknownDevice, "a/ghost/c "+ghost) {
		t.Errorf("anomalies %+v, want unknown_device", res.Anomalies)
	}
	if hasAnomaly(res, AnomalyHAMiLimitsMismatch, "a/ghost/c") {
		t.Errorf("the ghost counted as a missing vGPU: %+v", res.Anomalies)
	}

	// Without limits, the ghost's annotated share (1 core), at least its
	// framebuffer (10000 of 80000 MiB) and its use (40% of 10 s).
	o = newObs(at(0), at(10))
	o.wholeGPU(g, rep(50, 10)...).MemoryMiB = 80000
	o.hamiPod("a", "ghost", uidA, ghost+",NVIDIA,20000,1:;", nil, g+"-0", g, 1, 10000, 40)
	o.hamiPod("b", "honest", uidB, g+",NVIDIA,20000,30:;", nil, g+"-1", g, 2, 10000, 10)
	gc = gpuOf(t, attributeOnce(t, Config{}, o), g)
	wantRow(t, ctrOf(t, gc, "ghost", "c", g+"-0"), string(tenancy.HAMi), MethodEstimated, 0.125, 4, 4)
	wantRow(t, ctrOf(t, gc, "honest", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.3, 3, 1)
}

// A ghost whose kubelet ID names a GPU the entry already charges has
// nowhere to go: its share stays unallocated. Its process on another GPU
// of the node (one neither names) is still held at least as much as it
// used there.
func TestHAMiGhostWithoutKubeletGPU(t *testing.T) {
	g1, g2, ghost := gpuID(1), gpuID(2), gpuID(99)
	o := newObs(at(0), at(10))
	o.wholeGPU(g1).MemoryMiB = 80000
	o.wholeGPU(g2, rep(40, 10)...).MemoryMiB = 80000
	o.pod("a", "pa", uidA, at(-60), nil, hamiAnn(g1+",NVIDIA,1000,20:"+ghost+",NVIDIA,1000,50:;"), "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g1+"-0", g1+"-1").
		proc(1, g2, g2, 1000, uidA, "c", "python").samples(g2, 1, rep(40, 10)...)
	res := attributeOnce(t, Config{}, o)
	wantRow(t, ctrOf(t, gpuOf(t, res, g1), "pa", "c", g1+"-0"), string(tenancy.HAMi), MethodMeasured, 0.2, 2, 0)
	g2c := gpuOf(t, res, g2)
	wantRow(t, ctrOf(t, g2c, "pa", "c", g2), string(tenancy.HAMi), MethodEstimated, 0, 4, 4)
	wantResiduals(t, g2c, 6, 0, 6)
	if !hasAnomaly(res, AnomalyUnknownDevice, "a/pa/c "+ghost) || !hasAnomaly(res, AnomalyHAMiUnlistedGPU, "a/pa/c "+g2) {
		t.Errorf("anomalies %+v, want unknown_device and hami_unlisted_gpu", res.Anomalies)
	}
}

// A pod with a memory limit and no core limit keeps the GPU 60% busy
// while its memory share is 4000 of 80000 MiB (5%); its core-capped
// neighbour (30 cores) is 10% busy. It used to hold 5% and, under idle:
// shared, the neighbour paid for most of the time it used. It holds at
// least what it used, 6 of the 10 s, measured; the neighbour keeps its 3.
// At 85% busy the floor takes only what nobody holds (7 s): the
// neighbour's share never shrinks.
func TestHAMiNoCoreLimitHoldsItsUse(t *testing.T) {
	g := gpuID(1)
	for _, tc := range []struct {
		busy, alloc, unalloc float64
	}{{60, 6, 1}, {85, 7, 0}} {
		o := newObs(at(0), at(10))
		o.wholeGPU(g, rep(tc.busy+10, 10)...).MemoryMiB = 80000
		o.hamiPod("a", "hog", uidA, g+",NVIDIA,4000,0:;", map[string]string{ResourceGPU: "1", HAMiResourceMem: "4000"}, g+"-0", g, 1, 3000, tc.busy)
		o.hamiPod("b", "capped", uidB, g+",NVIDIA,20000,30:;", map[string]string{ResourceGPU: "1", HAMiResourceCores: "30", HAMiResourceMem: "20000"}, g+"-1", g, 2, 10000, 10)
		res := attributeOnce(t, Config{}, o)
		gc := gpuOf(t, res, g)
		wantRow(t, ctrOf(t, gc, "hog", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.05, tc.alloc, tc.busy/10)
		wantRow(t, ctrOf(t, gc, "capped", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.3, 3, 1)
		wantResiduals(t, gc, tc.unalloc, 0, 10-tc.busy/10-1)
		if len(res.Anomalies) != 0 {
			t.Errorf("busy %v: anomalies %+v for pods as their specs ask", tc.busy, res.Anomalies)
		}
	}
}

// Two uncapped pods whose use exceeds what nobody holds share it in
// proportion to their unmet use: 5% + 5% held, 60% and 30% used, 90% free
// (no one else): 55 and 25 wanted, 80 needed of 90: both met. With a 40
// core neighbour, 50 free: 55/80 and 25/80 of it.
func TestHAMiUseFloorsShareTheFreeCapacity(t *testing.T) {
	g := gpuID(1)
	for _, tc := range []struct {
		neighbour      bool
		allocA, allocB float64
	}{{false, 6, 3}, {true, 0.5 + 5*55.0/80, 0.5 + 5*25.0/80}} {
		o := newObs(at(0), at(10))
		o.wholeGPU(g, rep(100, 10)...).MemoryMiB = 80000
		o.hamiPod("a", "pa", uidA, g+",NVIDIA,4000,0:;", nil, g+"-0", g, 1, 3000, 60)
		o.hamiPod("b", "pb", uidB, g+",NVIDIA,4000,0:;", nil, g+"-1", g, 2, 3000, 30)
		if tc.neighbour {
			o.hamiPod("c", "pc", uidC, g+",NVIDIA,4000,40:;", nil, g+"-2", g, 3, 3000, 10)
		}
		gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
		wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.05, tc.allocA, 6)
		wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.05, tc.allocB, 3)
		if tc.neighbour {
			wantRow(t, ctrOf(t, gc, "pc", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.4, 4, 1)
		}
	}
}
