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
	// quarter of B, its usage on A is still its own, it holds at least
	// that use on A (20 s of the 50 nobody holds), and it is estimated.
	stray := hamiPod("stray", hamiDev(gpuB, "0", "25")+";", gpuA+"-2", proc(3, gpuA, seg(0, 100, 0.2)))
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), multi, stray))

	m, s := tr.Containers["llm/multi/c"], tr.Containers["llm/stray/c"]
	wantNear(t, "allocated(multi)", m.Allocated, 50+50)
	wantNear(t, "used(multi)", m.Used, 40+30)
	if m.Method != "" {
		t.Errorf("multi: method %q, want measured", m.Method)
	}
	wantNear(t, "allocated(stray)", s.Allocated, 25+20)
	wantNear(t, "used(stray)", s.Used, 20)
	if s.Method != MethodEstimated {
		t.Errorf("stray: method %q, want estimated", s.Method)
	}
	if len(tr.InstanceGroups) != 1 || len(tr.InstanceGroups[0].Members) != 1 || tr.InstanceGroups[0].Members[0] != "llm/stray/c" {
		t.Fatalf("groups %+v, want stray alone", tr.InstanceGroups)
	}
	wantNear(t, "stray single used", tr.InstanceGroups[0].Used, 20)
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 50-20)
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
	// An entry naming only a GPU this node lacks is charged on the GPU its
	// kubelet ID names (B), at the annotated 50%, as an estimate.
	away := hamiPod("away", hamiDev(foreign, "0", "50")+";", gpuB+"-0", proc(1, gpuB, seg(0, 100, 0.1)))
	// Memory above the GPU's is at most the whole GPU.
	big := hamiPod("big", hamiDev(gpuB, "200000", "0")+";", gpuB+"-1")
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), odd, away, big))

	for _, k := range []string{"ns/odd/x", "ns/odd/y"} {
		wantNear(t, "allocated("+k+")", tr.Containers[k].Allocated, 50) // 2 HAMi IDs on A
		wantMethod(t, tr, k, MethodEstimated)
	}
	// B: away's 50% and big's whole GPU, 1.5, scaled down to 1.
	wantNear(t, "allocated(away)", tr.Containers["llm/away/c"].Allocated, 100*0.5/1.5)
	wantNear(t, "used(away)", tr.Containers["llm/away/c"].Used, 10)
	wantMethod(t, tr, "llm/away/c", MethodEstimated)
	wantNear(t, "allocated(big)", tr.Containers["llm/big/c"].Allocated, 100/1.5)
}

// A HAMi container pays at least what it uses, out of what nobody holds:
// hog has 4096 MiB of an H100 (5%) and no core limit and runs 60%, then
// 90%; capped holds 30 cores. 0-50 s: hog holds its 60%; 50-100 s: the
// 65% nobody holds of the 85% more it wants. ghost names a GPU the node
// lacks, its pod spec asks for 40 cores: charged on B, where kubelet's ID
// is, 40% though it runs 10%.
func TestHAMiUseFloors(t *testing.T) {
	const foreign = "GPU-ffffffff-0000-4000-8000-000000000000"
	hog := hamiPod("hog", hamiDev(gpuA, "4096", "0")+";", gpuA+"-0", proc(1, gpuA, seg(0, 50, 0.6), seg(50, 100, 0.9)))
	capped := hamiPod("capped", hamiDev(gpuA, "20000", "30")+";", gpuA+"-1", proc(2, gpuA, seg(0, 100, 0.1)))
	capped.Containers[0].Limits = map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30", "nvidia.com/gpumem": "20000"}
	ghost := hamiPod("ghost", hamiDev(foreign, "20000", "40")+";", gpuB+"-0", proc(3, gpuB, seg(0, 100, 0.1)))
	ghost.Containers[0].Limits = map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "40", "nvidia.com/gpumem": "20000"}
	tr := mustCompute(t, newScenario(100, nil, hamiGPUs(), hog, capped, ghost))
	wantNear(t, "allocated(hog)", tr.Containers["llm/hog/c"].Allocated, 0.6*50+0.7*50)
	wantMethod(t, tr, "llm/hog/c", "")
	wantNear(t, "allocated(capped)", tr.Containers["llm/capped/c"].Allocated, 30)
	wantNear(t, "allocated(ghost)", tr.Containers["llm/ghost/c"].Allocated, 40)
	wantMethod(t, tr, "llm/ghost/c", MethodEstimated)
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 100-65-30)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 60)
}
