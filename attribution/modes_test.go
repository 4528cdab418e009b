package attribution

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// The expected numbers in these tests are worked out by hand in the
// comments, from ledger.md's share table and the usage rules.

const (
	uidA = "aaaaaaaa-0000-4000-8000-00000000000a"
	uidB = "bbbbbbbb-0000-4000-8000-00000000000b"
	uidC = "cccccccc-0000-4000-8000-00000000000c"
)

func TestExclusive(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	gp := o.wholeGPU(g, rep(50, 10)...) // B = 10 x 0.5 x 1 s = 5 s
	gp.EnergyOK, gp.EnergyMilliJoules = true, 10_000_000
	o.pod("ml", "train", uidA, at(-100), nil, nil, "main").
		alloc("ml", "train", "main", "nvidia.com/gpu", g).
		proc(100, g, g, 2048, uidA, "main", "python").
		samples(g, 100, rep(40, 10)...) // 4 s
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	c := ctrOf(t, gc, "train", "main", g)
	wantRow(t, c, string(tenancy.Exclusive), MethodMeasured, 1, 10, 4)
	// unattributed = B - processes = 1; idle = 10 - 4 - 1 = 5.
	wantResiduals(t, gc, 0, 1, 5)
	// 10 000 J split by seconds/W: 4000, 1000, 5000.
	wantNear(t, "energy", gc.EnergyJoules, 10000)
	wantNear(t, "container energy", c.Energy, 4000)
	wantNear(t, "unattributed energy", gc.UnattributedEnergy, 1000)
	wantNear(t, "idle energy", gc.IdleEnergy, 5000)
	wantNear(t, "memory", c.MemoryMiB, 2048)
	wantNear(t, "memory seconds", c.MemoryMiBs, 20480)
	if c.Team != "ml" || !c.Running || c.PodUID != uidA {
		t.Errorf("row identity %+v", c)
	}
}

func TestTimeslicingFourReplicasTwoHolders(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "4")
	o.wholeGPU(g, rep(60, 10)...) // B = 6 s
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu.shared", g+"::0").
		alloc("b", "pb", "c", "nvidia.com/gpu.shared", g+"::1").
		proc(1, g, g, 0, uidA, "c", "x").proc(2, g, g, 0, uidB, "c", "x").
		samples(g, 1, rep(40, 10)...). // 4 s
		samples(g, 2, rep(20, 10)...)  // 2 s; 40+20 = 60 = the device, no scaling
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	// share 1/4 each: 2.5 s allocated; 5 s unallocated.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Timeslicing), MethodMeasured, 0.25, 2.5, 4)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.Timeslicing), MethodMeasured, 0.25, 2.5, 2)
	wantResiduals(t, gc, 5, 0, 4)
}

func TestMPSOverlapScaledToDevice(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(5)).label(LabelSharingStrategy, "mps").label(LabelReplicas, "2")
	// Periods 1-4: a 100% + b 60% = 160% but the device says 100%, so
	// each period scales by 1/1.6: a 0.625 s, b 0.375 s. Period 5: a 30%,
	// b 10%, device 50%: no scaling, 0.1 s busy without a process.
	o.wholeGPU(g, 100, 100, 100, 100, 50)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"::1").
		proc(1, g, g, 0, uidA, "c", "x").proc(2, g, g, 0, uidB, "c", "x").
		samples(g, 1, 100, 100, 100, 100, 30).
		samples(g, 2, 60, 60, 60, 60, 10)
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	// a = 4 x 0.625 + 0.3 = 2.8; b = 4 x 0.375 + 0.1 = 1.6.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MPS), MethodMeasured, 0.5, 2.5, 2.8)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.MPS), MethodMeasured, 0.5, 2.5, 1.6)
	// B = 4.5; unattributed 0.1; idle 0.5.
	wantResiduals(t, gc, 0, 0.1, 0.5)
}

func TestMPSServerViewPoolSplitByShare(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "mps").label(LabelReplicas, "4")
	o.wholeGPU(g, rep(90, 10)...)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		pod("c", "pc", uidC, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0", g+"::1"). // share 0.5, running
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"::2").          // 0.25, running
		alloc("c", "pc", "c", "nvidia.com/gpu", g+"::3").          // 0.25, no process
		proc(1, g, g, 1000, uidA, "c", "x").proc(2, g, g, 500, uidB, "c", "x").
		proc(4000000, g, g, 0, "", "", "nvidia-cuda-mps-server").
		samples(g, 4000000, rep(90, 10)...) // the server carries all 9 s
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	// 9 s split 0.5 : 0.25 between a and b: 6 and 3; a's two slices 3 each.
	wantRow(t, ctrOf(t, gc, "pa", "c", g+"::0"), string(tenancy.MPS), MethodEstimated, 0.25, 2.5, 3)
	wantRow(t, ctrOf(t, gc, "pa", "c", g+"::1"), string(tenancy.MPS), MethodEstimated, 0.25, 2.5, 3)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.MPS), MethodEstimated, 0.25, 2.5, 3)
	wantRow(t, ctrOf(t, gc, "pc", "c", ""), string(tenancy.MPS), MethodMeasured, 0.25, 2.5, 0)
	wantNear(t, "a memory per slice", ctrOf(t, gc, "pa", "c", g+"::0").MemoryMiB, 500)
	wantResiduals(t, gc, 0, 0, 1)
}

func TestMPSServerWithoutRunningHoldersIsUnattributed(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "mps").label(LabelReplicas, "4")
	o.wholeGPU(g, rep(50, 10)...)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
		proc(4000000, g, g, 0, "", "", "nvidia-cuda-mps-server").
		samples(g, 4000000, rep(50, 10)...)
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MPS), MethodMeasured, 0.25, 2.5, 0)
	wantResiduals(t, gc, 7.5, 5, 5)
}

// migGPU adds a MIG GPU whose instances have the given slices and DCGM
// activity (negative: no DCGM values).
func (o *tobs) migGPU(uuid string, first int, slices []int, active []float64) *GPU {
	g := GPU{UUID: uuid, MIGEnabled: true}
	for i, s := range slices {
		m := MIGInstance{UUID: migID(first + i), Profile: "x", Slices: s, GPUInstanceID: i + 1}
		if active[i] >= 0 {
			m.DCGM = &DCGMValues{GrEngineActive: active[i]}
		}
		g.MIG = append(g.MIG, m)
	}
	return o.gpu(g)
}

func TestMIGSingleHolder(t *testing.T) {
	g := gpuID(1)
	i1, i2, i3 := migID(11), migID(12), migID(13)
	o := newObs(at(0), at(7))
	o.migGPU(g, 11, []int{3, 1, 2}, []float64{0.5, 0.2, -1})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-3g.40gb", i1).
		proc(1, g, i1, 100, uidA, "c", "x")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// I1: w = 3/7, busy = 3/7 x 0.5 x 7 = 1.5, all to its one holder.
	wantRow(t, ctrOf(t, gc, "pa", "c", i1), string(tenancy.MIG), MethodMeasured, 3.0/7, 3, 1.5)
	// I2 busy 1/7 x 0.2 x 7 = 0.2 nobody holds; I3 has no DCGM: its
	// 2/7 x 7 = 2 s are blind. unattributed 2.2; idle 7-1.5-2.2 = 3.3.
	wantResiduals(t, gc, 4, 2.2, 3.3)
	_, _ = i2, i3
}

func TestMIGTimeslicingReplicasEstimated(t *testing.T) {
	g := gpuID(1)
	i1 := migID(11)
	o := newObs(at(0), at(14)).label(LabelSharingStrategy, "time-slicing") // no replicas label
	o.migGPU(g, 11, []int{3}, []float64{0.5})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-3g.40gb", i1+"::0").
		alloc("b", "pb", "c", "nvidia.com/mig-3g.40gb", i1+"::1").
		proc(1, g, i1, 0, uidA, "c", "x").proc(2, g, i1, 0, uidB, "c", "x").
		proc(3, g, i1, 0, "", "", "dcgm-probe") // a host process: one more replica
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// Two distinct ::n seen -> replicas 2 (estimated); share (3/7)/2 =
	// 3/14, allocated 3 s each. Busy 3/7 x 0.5 x 14 = 3 s split equally
	// among a, b and the host process: 1 s each, the host's unattributed.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MIGTimeslicing), MethodEstimated, 3.0/14, 3, 1)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.MIGTimeslicing), MethodEstimated, 3.0/14, 3, 1)
	wantResiduals(t, gc, 8, 1, 11)
}

func TestMIGSharedWithoutRunningHoldersIsUnattributed(t *testing.T) {
	g := gpuID(1)
	i1 := migID(11)
	o := newObs(at(0), at(7)).label(LabelSharingStrategy, "mps").label(LabelReplicas, "2")
	o.migGPU(g, 11, []int{7}, []float64{0.4})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", i1+"::0").
		alloc("b", "pb", "c", "nvidia.com/gpu", i1+"::1")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// Nobody runs anything, so the busy time is unattributed; the holders'
	// zero is still an estimate, as on any instance shared by replicas.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MIGMPS), MethodEstimated, 0.5, 3.5, 0)
	wantResiduals(t, gc, 0, 2.8, 4.2)
}

func TestHAMiTrusted(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g).MemoryMiB = 80000
	o.pod("a", "pa", uidA, time.Time{}, nil, map[string]string{HAMiAnnotation: g + ",NVIDIA,20000,25:;"}, "c").
		pod("b", "pb", uidB, time.Time{}, nil, map[string]string{HAMiAnnotation: "GPU-x,NVIDIA,1,1:;" + g + ",NVIDIA,40000,0:;"}, "side", "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"-0").
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"-1")
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	// a: 25 cores -> 0.25. b is container 1, whose part gives no cores
	// and 40000 of 80000 MiB -> 0.5.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.25, 2.5, 0)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.5, 5, 0)
	wantResiduals(t, gc, 2.5, 0, 10)
	if len(res.Anomalies) != 0 {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
}

// The annotation, not kubelet, names the GPUs (ledger.md, "HAMi, as it is
// deployed"). This test used to encode the old rule (b's annotation names
// another GPU than kubelet's ID, so b was charged 1/N of kubelet's GPU as
// an estimate); under the new contract b is charged on the GPU its
// annotation names and kubelet's ID charges nothing by itself.
func TestHAMiAnnotationNamesAnotherGPU(t *testing.T) {
	g, other := gpuID(1), gpuID(2)
	o := newObs(at(0), at(10))
	o.wholeGPU(g)
	o.wholeGPU(other)
	o.pod("a", "pa", uidA, time.Time{}, nil, map[string]string{HAMiAnnotation: g + ",NVIDIA,20000,25:;"}, "c").
		pod("b", "pb", uidB, time.Time{}, nil, map[string]string{HAMiAnnotation: other + ",NVIDIA,20000,90:;"}, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"-0").
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"-2")
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	// g: only a's 25 cores; b's kubelet ID on g charges nothing.
	if len(gc.Containers) != 1 {
		t.Fatalf("rows on %s: %+v, want only pa's", g, gc.Containers)
	}
	wantRow(t, ctrOf(t, gc, "pa", "c", g+"-0"), string(tenancy.HAMi), MethodMeasured, 0.25, 2.5, 0)
	wantResiduals(t, gc, 7.5, 0, 10)
	// other: b's 90 cores, measured; b has no kubelet ID naming other, so
	// the slice is the GPU's UUID.
	oc := gpuOf(t, res, other)
	wantRow(t, ctrOf(t, oc, "pb", "c", other), string(tenancy.HAMi), MethodMeasured, 0.9, 9, 0)
	wantResiduals(t, oc, 1, 0, 10)
	if len(res.Anomalies) != 0 {
		t.Errorf("anomalies %+v, want none: the annotation is the truth", res.Anomalies)
	}
}

func TestHAMiOvercommitScaledDown(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g)
	o.pod("a", "pa", uidA, time.Time{}, nil, map[string]string{HAMiAnnotation: g + ",NVIDIA,1,60:;"}, "c").
		pod("b", "pb", uidB, time.Time{}, nil, map[string]string{HAMiAnnotation: g + ",NVIDIA,1,90:;"}, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"-0").
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"-1")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// 0.6 + 0.9 = 1.5 > 1: scaled to 0.4 and 0.6.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.4, 4, 0)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.6, 6, 0)
	wantResiduals(t, gc, 0, 0, 10)
}

func TestHostProcessUnattributed(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g, rep(40, 10)...)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g).
		proc(1, g, g, 0, uidA, "c", "x").
		proc(500, g, g, 300, "", "", "nvidia-smi").
		samples(g, 1, rep(30, 10)...).
		samples(g, 500, rep(10, 10)...)
	// An unresolved owner counts as unattributed too.
	o.Processes = append(o.Processes, Process{PID: 501, GPU: g, Device: g, Owner: Owner{Resolved: false}})
	o.samples(g, 501, rep(5, 10)...) // sums to 45% > 40%: scaled by 40/45
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// c: 3 x 40/45 = 8/3; host + unresolved 1.5 x 40/45 = 4/3; idle 6.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Exclusive), MethodMeasured, 1, 10, 8.0/3)
	wantResiduals(t, gc, 0, 4.0/3, 6)
}

func TestPodStartingMidWindow(t *testing.T) {
	g1, g2 := gpuID(1), gpuID(2)
	o := newObs(at(0), at(10))
	o.wholeGPU(g1)
	o.wholeGPU(g2)
	o.pod("a", "pa", uidA, at(4), nil, nil, "c"). // holds 6 of 10 s
							pod("b", "pb", uidB, at(12), nil, nil, "c"). // starts after Time: 0
							alloc("a", "pa", "c", "nvidia.com/gpu", g1).
							alloc("b", "pb", "c", "nvidia.com/gpu", g2)
	res := attributeOnce(t, Config{}, o)
	wantRow(t, ctrOf(t, gpuOf(t, res, g1), "pa", "c", ""), string(tenancy.Exclusive), MethodMeasured, 1, 6, 0)
	wantResiduals(t, gpuOf(t, res, g1), 4, 0, 10)
	wantRow(t, ctrOf(t, gpuOf(t, res, g2), "pb", "c", ""), string(tenancy.Exclusive), MethodMeasured, 1, 0, 0)
	wantResiduals(t, gpuOf(t, res, g2), 10, 0, 10)
}

func TestMissingReplicasLabelEstimated(t *testing.T) {
	g := gpuID(1)
	e := NewEngine(Config{})
	mk := func(prev, now float64, ids map[string]string) Observation {
		o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing")
		o.wholeGPU(g)
		for pod, id := range ids {
			o.pod("ns", pod, uidFor(pod), time.Time{}, nil, nil, "c").alloc("ns", pod, "c", "nvidia.com/gpu", id)
		}
		return o.Observation
	}
	e.Observe(mk(0, 0, nil))
	res := e.Observe(mk(0, 10, map[string]string{"p0": g + "::0", "p3": g + "::3"}))
	checkCycle(t, res)
	// Two distinct replica IDs seen: 1/2 each, estimated.
	wantRow(t, ctrOf(t, res.GPUs[0], "p0", "c", ""), string(tenancy.Timeslicing), MethodEstimated, 0.5, 5, 0)
	// A third appears; the first two remain counted though p3 left.
	res = e.Observe(mk(10, 20, map[string]string{"p0": g + "::0", "p5": g + "::5"}))
	checkCycle(t, res)
	wantRow(t, ctrOf(t, res.GPUs[0], "p0", "c", ""), string(tenancy.Timeslicing), MethodEstimated, 1.0/3, 10.0/3, 0)
	wantResiduals(t, res.GPUs[0], 10.0/3, 0, 10)
}

func uidFor(name string) string { return "00000000-0000-4000-8000-" + (name + "000000000000")[:12] }

func TestTeamNamespaceLabelWins(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g)
	o.ns("search-ns", map[string]string{"team": "search"}).ns("free-ns", map[string]string{"env": "x"})
	forged := map[string]string{"team": "ads"}
	o.pod("search-ns", "forger", uidA, time.Time{}, forged, nil, "c").
		pod("free-ns", "labelled", uidB, time.Time{}, forged, nil, "c").
		pod("bare-ns", "bare", uidC, time.Time{}, nil, nil, "c").
		alloc("search-ns", "forger", "c", "nvidia.com/gpu", g+"::0").
		alloc("free-ns", "labelled", "c", "nvidia.com/gpu", g+"::1").
		alloc("bare-ns", "bare", "c", "nvidia.com/gpu", g+"::2")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	for pod, want := range map[string]string{"forger": "search", "labelled": "ads", "bare": "bare-ns"} {
		if got := ctrOf(t, gc, pod, "c", "").Team; got != want {
			t.Errorf("team of %s = %q, want %q", pod, got, want)
		}
	}
}

func TestUnknownAndMalformedDeviceIDs(t *testing.T) {
	g, gone := gpuID(1), gpuID(9)
	o := newObs(at(0), at(10))
	o.wholeGPU(g)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", gone, "garbage", migID(5))
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	if len(gc.Containers) != 0 {
		t.Errorf("rows for bad IDs: %+v", gc.Containers)
	}
	wantResiduals(t, gc, 10, 0, 10)
	for kind, key := range map[string]string{AnomalyUnknownDevice: gone, AnomalyBadDeviceID: "garbage"} {
		if !hasAnomaly(res, kind, key) {
			t.Errorf("want anomaly %s %s in %+v", kind, key, res.Anomalies)
		}
	}
	if !hasAnomaly(res, AnomalyUnknownDevice, migID(5)) {
		t.Errorf("want unknown MIG anomaly in %+v", res.Anomalies)
	}
}

func TestProcessWithoutSliceGetsRow(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "2")
	o.wholeGPU(g, rep(50, 10)...)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
		proc(1, g, g, 0, uidA, "c", "x").proc(2, g, g, 64, uidB, "c", "x").
		samples(g, 1, rep(30, 10)...).samples(g, 2, rep(20, 10)...)
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Timeslicing), MethodMeasured, 0.5, 5, 3)
	// b holds nothing here but ran: a row named after the device.
	wantRow(t, ctrOf(t, gc, "pb", "c", g), string(tenancy.Timeslicing), MethodMeasured, 0, 0, 2)
	wantResiduals(t, gc, 5, 0, 5)
}

func TestDegradedNVMLWholeWindowUnattributed(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.gpu(GPU{UUID: g}) // no samples, no DCGM, no process samples
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g)
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	wantResiduals(t, gc, 0, 10, 0)

	// DCGM stands in for missing device samples.
	o = newObs(at(0), at(10))
	o.gpu(GPU{UUID: g, SamplePeriod: time.Second, DCGM: &DCGMValues{GrEngineActive: 0.5}})
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g).
		proc(1, g, g, 0, uidA, "c", "x").samples(g, 1, rep(30, 10)...)
	gc = gpuOf(t, attributeOnce(t, Config{}, o), g)
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Exclusive), MethodMeasured, 1, 10, 3)
	wantResiduals(t, gc, 0, 2, 5)
}

func TestSamplesOfExitedProcessGoToLastOwner(t *testing.T) {
	g := gpuID(1)
	e := NewEngine(Config{})
	mk := func(prev, now float64, running bool) *tobs {
		o := newObs(at(prev), at(now))
		o.wholeGPU(g, rep(50, int(now-prev))...)
		o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", "nvidia.com/gpu", g)
		if running {
			o.proc(7, g, g, 0, uidA, "c", "x")
		}
		return o
	}
	e.Observe(mk(0, 0, true).Observation)
	// The process exited before the poll; its last samples still count.
	o := mk(0, 4, false).samples(g, 7, 50, 50, 50, 50)
	res := e.Observe(o.Observation)
	checkCycle(t, res)
	wantRow(t, ctrOf(t, res.GPUs[0], "pa", "c", ""), string(tenancy.Exclusive), MethodMeasured, 1, 4, 2)
}

// Whole-percent rounding can make time-sliced processes add up to a little
// more or less than the device's own rounded sample. Within half a percent
// per sample that is noise: the samples stay as measured and no busy time
// is invented as unattributed.
func TestRoundingNoiseIsNotScaledAway(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(4)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "2")
	// Device 10%; processes 6% + 5% = 11% (over by 1 point, slack 1.5),
	// then 4% + 5% = 9% (under by 1 point).
	o.wholeGPU(g, 10, 10, 10, 10)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
		alloc("b", "pb", "c", "nvidia.com/gpu", g+"::1").
		proc(1, g, g, 0, uidA, "c", "x").proc(2, g, g, 0, uidB, "c", "x").
		samples(g, 1, 6, 6, 4, 4).
		samples(g, 2, 5, 5, 5, 5)
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// a = 0.06+0.06+0.04+0.04 = 0.20 s; b = 4 x 0.05 = 0.20 s; idle 3.6 s.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Timeslicing), MethodMeasured, 0.5, 2, 0.2)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.Timeslicing), MethodMeasured, 0.5, 2, 0.2)
	wantResiduals(t, gc, 0, 0, 3.6)
}
