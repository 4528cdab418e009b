package groundtruth

import (
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// podRes is pod() with the device IDs listed under resource.
func podRes(ns, name, resource string, ids []string, procs ...scenario.Process) scenario.Pod {
	p := pod(ns, name, 0, 0, ids, procs...)
	p.Containers[0].Devices[0].Resource = resource
	return p
}

func TestMIGReplicasComeFromTheProfileLabelOnly(t *testing.T) {
	gpus := []scenario.GPU{
		{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeMIG, MIGInstances: []scenario.MIGInstance{
			{UUID: migX, Profile: "3g.40gb", GI: 1}, {UUID: migY, Profile: "1g.10gb", GI: 2}}},
		{UUID: gpuB, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing},
	}
	labels := map[string]string{
		labelStrategy: "time-slicing", labelReplicas: "4",
		"nvidia.com/mig-3g.40gb.replicas": "2", // no label for 1g.10gb
	}
	sc := newScenario(70, labels, gpus,
		// The renamed resource still takes its profile's label: 2, not 4.
		podRes("ns", "a", "nvidia.com/mig-3g.40gb.shared", []string{migX + "::0"}, proc(1, migX, seg(0, 70, 0.5))),
		// No 1g label, and the whole-GPU one never applies: 2 IDs seen.
		podRes("ns", "c", "nvidia.com/mig-1g.10gb", []string{migY + "::0"}),
		podRes("ns", "d", "nvidia.com/mig-1g.10gb", []string{migY + "::1"}),
		podRes("ns", "e", "nvidia.com/gpu.shared", []string{gpuB + "::0"}))
	tr := mustCompute(t, sc)

	a := tr.Containers["ns/a/c"]
	wantNear(t, "allocated(a)", a.Allocated, 70*3.0/7/2)
	wantNear(t, "used(a)", a.Used, 3.0/7*0.5*70)
	if a.Method != "" || a.SharingMode != "mig+timeslicing" {
		t.Errorf("a: method/mode %q/%q, want measured/mig+timeslicing", a.Method, a.SharingMode)
	}
	for _, k := range []string{"ns/c/c", "ns/d/c"} {
		wantNear(t, "allocated("+k+")", tr.Containers[k].Allocated, 70*1.0/7/2)
		if tr.Containers[k].Method != MethodEstimated {
			t.Errorf("%s: method %q, want estimated", k, tr.Containers[k].Method)
		}
	}
	wantNear(t, "allocated(e)", tr.Containers["ns/e/c"].Allocated, 70.0/4)
	if m := tr.Containers["ns/e/c"].Method; m != "" {
		t.Errorf("e: method %q, want measured (gpu.shared takes nvidia.com/gpu.replicas)", m)
	}
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 70-15-5-5)
}

// A replica label that is not a positive integer divides nothing: the
// slices it decides hold nothing (their capacity stays unallocated), the
// others keep their labels; the scenario is still scored.
func TestGarbageReplicasLabelsHoldNothing(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing}}
	for _, v := range []string{"two", "0", "-4", "NaN", "+2", ""} {
		sc := newScenario(10, map[string]string{labelReplicas: v}, gpus,
			podRes("ns", "a", "nvidia.com/gpu.shared", []string{gpuA + "::0"}))
		tr := mustCompute(t, sc)
		wantNear(t, "allocated("+v+")", tr.Containers["ns/a/c"].Allocated, 0)
		wantNear(t, "unallocated("+v+")", *tr.GPUs[gpuA].Unallocated, 10)
	}
	sc := newScenario(10, map[string]string{"nvidia.com/mig-1g.10gb.replicas": "0", labelReplicas: "2"}, gpus,
		podRes("ns", "a", "nvidia.com/gpu.shared", []string{gpuA + "::0"}))
	wantNear(t, "allocated beside a garbage profile label", mustCompute(t, sc).Containers["ns/a/c"].Allocated, 5)
}
