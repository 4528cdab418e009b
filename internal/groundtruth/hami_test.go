package groundtruth

import (
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

func hamiGPUs() []scenario.GPU {
	return []scenario.GPU{
		{UUID: gpuA, Model: "H100-SXM5-80GB", Mode: scenario.ModeHAMi},
		{UUID: gpuB, Model: "H100-SXM5-80GB", Mode: scenario.ModeHAMi},
	}
}

func hamiDev(uuid, mem, cores string) string { return uuid + ",NVIDIA," + mem + "," + cores + ":" }

func TestHAMiEntriesFollowSpecOrderInitContainersFirst(t *testing.T) {
	// HAMi 2.9: four entries for istio-init, prep, main, logger.
	fresh := scenario.Pod{UID: "u1", Namespace: "ns", Name: "fresh",
		Annotations: map[string]string{annotHAMi: ";" + hamiDev(gpuA, "1000", "20") + ";" + hamiDev(gpuA, "2000", "50") + ";;"},
		Containers:  []scenario.Container{ctrHolding("main", []string{gpuA + "-1"}), ctrHolding("logger", nil)}}
	fresh = withInits(fresh, 100, plainInit("istio-init", 5, nil), plainInit("prep", 20, []string{gpuA + "-0"}))
	// Older HAMi: one entry, for the only regular container.
	old := scenario.Pod{UID: "u2", Namespace: "ns", Name: "old",
		Annotations: map[string]string{annotHAMi: hamiDev(gpuB, "0", "30") + ";"},
		Containers:  []scenario.Container{ctrHolding("main", []string{gpuB + "-0"})}}
	old = withInits(old, 100, plainInit("istio-init", 10, nil))
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), fresh, old))

	wantNear(t, "allocated(fresh/prep)", tr.Containers["ns/fresh/prep"].Allocated, 0.2*15)
	// Regular containers start when the last plain init container ends:
	// fresh's main at 20 s, old's at 10 s.
	wantNear(t, "allocated(fresh/main)", tr.Containers["ns/fresh/main"].Allocated, 0.5*80)
	wantNear(t, "allocated(old/main)", tr.Containers["ns/old/main"].Allocated, 0.3*90)
	for _, k := range []string{"ns/fresh/prep", "ns/fresh/main", "ns/old/main"} {
		if c := tr.Containers[k]; c.Method != "" || c.SharingMode != "hami" {
			t.Errorf("%s: method/mode %q/%q, want measured/hami", k, c.Method, c.SharingMode)
		}
	}
	for _, k := range []string{"ns/fresh/istio-init", "ns/fresh/logger", "ns/old/istio-init"} {
		if _, ok := tr.Containers[k]; ok {
			t.Errorf("%s holds no GPU, yet has a truth", k)
		}
	}
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 100-3-40)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 100-27)
}

func TestHAMiAnnotationNamesTheGPUs(t *testing.T) {
	// HAMi issue 1741: kubelet lists two IDs of GPU A for a two-GPU
	// container; the annotation gives it half of A and half of B.
	multi := hamiPod("multi", hamiDev(gpuA, "0", "50")+hamiDev(gpuB, "0", "50")+";", gpuA+"-0",
		proc(1, gpuA, seg(0, 100, 0.4)), proc(2, gpuB, seg(0, 100, 0.3)))
	multi.Containers[0].Devices[0].IDs = append(multi.Containers[0].Devices[0].IDs, gpuA+"-1")
	// stray's annotation names B, its process runs on A: it holds a
	// quarter of B, its usage on A is still its own, and it is estimated.
	stray := hamiPod("stray", hamiDev(gpuB, "0", "25")+";", gpuA+"-2", proc(3, gpuA, seg(0, 100, 0.2)))
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), multi, stray))

	m, s := tr.Containers["llm/multi/c"], tr.Containers["llm/stray/c"]
	wantNear(t, "allocated(multi)", m.Allocated, 50+50)
	wantNear(t, "used(multi)", m.Used, 40+30)
	if m.Method != "" {
		t.Errorf("multi: method %q, want measured", m.Method)
	}
	wantNear(t, "allocated(stray)", s.Allocated, 25)
	wantNear(t, "used(stray)", s.Used, 20)
	if s.Method != MethodEstimated {
		t.Errorf("stray: method %q, want estimated", s.Method)
	}
	if len(tr.InstanceGroups) != 1 || len(tr.InstanceGroups[0].Members) != 1 || tr.InstanceGroups[0].Members[0] != "llm/stray/c" {
		t.Fatalf("groups %+v, want stray alone", tr.InstanceGroups)
	}
	wantNear(t, "stray single used", tr.InstanceGroups[0].Used, 20)
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 50)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 25)
}

func TestHAMiValueInForceIsTheOneAtContainerStart(t *testing.T) {
	// A tenant patches cores 25 -> 1 mid-run: nothing changes.
	tenant := hamiPod("tenant", hamiDev(gpuA, "0", "25")+";", gpuA+"-0")
	tenant.AnnotationChanges = []scenario.AnnotationChange{
		{At: secs(50), Annotations: map[string]string{annotHAMi: hamiDev(gpuA, "0", "1") + ";"}}}
	// A pod starting at 60 sees its annotation as changed at 30 (50 -> 10);
	// a change at 80 names another GPU and moves nothing.
	late := hamiPod("late", hamiDev(gpuA, "0", "50")+";", gpuA+"-1")
	late.Start = secs(60)
	late.AnnotationChanges = []scenario.AnnotationChange{
		{At: secs(80), Annotations: map[string]string{annotHAMi: hamiDev(gpuB, "0", "90") + ";"}},
		{At: secs(30), Annotations: map[string]string{annotHAMi: hamiDev(gpuA, "0", "10") + ";"}},
	}
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), tenant, late))
	wantNear(t, "allocated(tenant)", tr.Containers["llm/tenant/c"].Allocated, 25)
	wantNear(t, "allocated(late)", tr.Containers["llm/late/c"].Allocated, 0.1*40)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 100)
}

func TestHAMiUnreadableOrForeignEntries(t *testing.T) {
	const foreign = "GPU-ffffffff-0000-4000-8000-000000000000"
	// Three entries for two containers fit neither HAMi form: each
	// container is charged one virtual device per kubelet ID, 1/N.
	odd := scenario.Pod{UID: "u1", Namespace: "ns", Name: "odd",
		Annotations: map[string]string{annotHAMi: hamiDev(gpuA, "0", "60") + ";" + hamiDev(gpuA, "0", "60") + ";;"},
		Containers:  []scenario.Container{ctrHolding("x", []string{gpuA + "-0"}), ctrHolding("y", []string{gpuA + "-1"})}}
	odd = withInits(odd, 100)
	// An entry naming only a GPU this node lacks holds nothing here, and a
	// process on a GPU it does not name is an estimate.
	away := hamiPod("away", hamiDev(foreign, "0", "50")+";", gpuB+"-0", proc(1, gpuB, seg(0, 100, 0.1)))
	// Memory above the GPU's is at most the whole GPU.
	big := hamiPod("big", hamiDev(gpuB, "200000", "0")+";", gpuB+"-1")
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), odd, away, big))

	for _, k := range []string{"ns/odd/x", "ns/odd/y"} {
		wantNear(t, "allocated("+k+")", tr.Containers[k].Allocated, 50) // 2 HAMi IDs on A
		wantMethod(t, tr, k, MethodEstimated)
	}
	wantNear(t, "allocated(away)", tr.Containers["llm/away/c"].Allocated, 0)
	wantNear(t, "used(away)", tr.Containers["llm/away/c"].Used, 10)
	wantMethod(t, tr, "llm/away/c", MethodEstimated)
	wantNear(t, "allocated(big)", tr.Containers["llm/big/c"].Allocated, 100)
}
