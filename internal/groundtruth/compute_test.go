package groundtruth

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

const (
	gpuA = "GPU-aaaaaaaa-0000-4000-8000-000000000000"
	gpuB = "GPU-bbbbbbbb-0000-4000-8000-000000000000"
	migX = "MIG-11111111-0000-4000-8000-000000000000"
	migY = "MIG-22222222-0000-4000-8000-000000000000"
)

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

func seg(from, to, f float64) scenario.Segment {
	return scenario.Segment{From: secs(from), To: secs(to), Fraction: f}
}

func proc(pid uint32, dev string, segs ...scenario.Segment) scenario.Process {
	return scenario.Process{PID: pid, Device: dev, Busy: segs}
}

// pod builds a one-container pod "ns/name/c" holding ids.
func pod(ns, name string, start, end float64, ids []string, procs ...scenario.Process) scenario.Pod {
	return scenario.Pod{
		UID: "uid-" + name, Namespace: ns, Name: name,
		Start: secs(start), End: secs(end),
		Containers: []scenario.Container{{
			Name:      "c",
			Devices:   []scenario.DeviceRequest{{Resource: "nvidia.com/gpu", IDs: ids}},
			Processes: procs,
		}},
	}
}

func newScenario(duration float64, labels map[string]string, gpus []scenario.GPU, pods ...scenario.Pod) *scenario.Scenario {
	return &scenario.Scenario{
		Name: "hand", Duration: secs(duration), PollInterval: time.Second,
		LedgerInterval: time.Minute, DriverSamplePeriod: 200 * time.Millisecond,
		Node: scenario.Node{Name: "n", Labels: labels}, GPUs: gpus, Pods: pods,
	}
}

func mustCompute(t *testing.T, sc *scenario.Scenario) *Truth {
	t.Helper()
	tr, err := Compute(sc)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func wantNear(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func mpsGPU(view string) []scenario.GPU {
	return []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeMPS, MPSProcessView: view}}
}

func TestMPSOnePeriodSplitsByMeanActivity(t *testing.T) {
	// 0.8 + 0.4 over the one period [0, 0.2): busy 0.2 s, split 2/3 : 1/3.
	sc := newScenario(0.2, map[string]string{labelStrategy: "mps", labelReplicas: "2"}, mpsGPU("clients"),
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0, 0.2, 0.8))),
		pod("ns", "b", 0, 0, []string{gpuA + "::1"}, proc(2, gpuA, seg(0, 0.2, 0.4))))
	tr := mustCompute(t, sc)
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, 0.2*2/3)
	wantNear(t, "used(b)", tr.Containers["ns/b/c"].Used, 0.2/3)
	wantNear(t, "allocated(a)", tr.Containers["ns/a/c"].Allocated, 0.1)
	if m := tr.Containers["ns/a/c"].SharingMode; m != "mps" {
		t.Errorf("mode = %q, want mps", m)
	}
}

func TestMPSSplitIsPerPeriodNotPerInstant(t *testing.T) {
	// A = 1 on [0, 0.2), B = 1 on [0.1, 0.2), one period: busy 0.2 s, mean
	// activities 0.2 : 0.1. An instant-by-instant split would give A 0.15.
	sc := newScenario(0.2, map[string]string{labelReplicas: "2"}, mpsGPU("clients"),
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0, 0.2, 1))),
		pod("ns", "b", 0, 0, []string{gpuA + "::1"}, proc(2, gpuA, seg(0.1, 0.2, 1))))
	tr := mustCompute(t, sc)
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, 0.2*2/3)
	wantNear(t, "used(b)", tr.Containers["ns/b/c"].Used, 0.2/3)
}

func TestMPSPartialAndWholePeriods(t *testing.T) {
	// P = 0.2. A = 0.8 on [0.05, 1.05), B = 0.4 on [0, 1.05).
	// period 0: busy 0.05*0.4 + 0.15*1 = 0.17, areas A 0.12, B 0.08 -> A 0.102, B 0.068
	// periods 1-4: busy 0.8 split 2:1 -> A 0.8*2/3, B 0.8/3
	// period 5 [1.0, 1.05): busy 0.05 split 2:1
	sc := newScenario(2, map[string]string{labelReplicas: "2"}, mpsGPU("clients"),
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0.05, 1.05, 0.8))),
		pod("ns", "b", 0, 0, []string{gpuA + "::1"}, proc(2, gpuA, seg(0, 1.05, 0.4))))
	tr := mustCompute(t, sc)
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, 0.102+0.8*2/3+0.05*2/3)
	wantNear(t, "used(b)", tr.Containers["ns/b/c"].Used, 0.068+0.8/3+0.05/3)
}

func TestMPSHostProcessIsUnattributedShare(t *testing.T) {
	sc := newScenario(10, map[string]string{labelReplicas: "1"}, mpsGPU("clients"),
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0, 10, 0.9))))
	sc.HostProcesses = []scenario.Process{proc(500, gpuA, seg(0, 10, 0.3))}
	tr := mustCompute(t, sc)
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, 10*0.9/1.2)
	wantNear(t, "unattributed", *tr.GPUs[gpuA].Unattributed, 10*0.3/1.2)
	if tr.GPUs[gpuA].Unallocated != nil {
		t.Errorf("unallocated = %v, want none", *tr.GPUs[gpuA].Unallocated)
	}
}

func TestMPSServerViewIsEstimatedAndGrouped(t *testing.T) {
	sc := newScenario(1, map[string]string{labelReplicas: "2"}, mpsGPU("server"),
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0, 1, 0.6))),
		pod("ns", "b", 0, 0, []string{gpuA + "::1"}, proc(2, gpuA, seg(0, 1, 0.6))))
	tr := mustCompute(t, sc)
	for _, k := range []string{"ns/a/c", "ns/b/c"} {
		if tr.Containers[k].Method != MethodEstimated {
			t.Errorf("%s: method %q, want estimated", k, tr.Containers[k].Method)
		}
		wantNear(t, "used("+k+")", tr.Containers[k].Used, 0.5)
	}
	if len(tr.InstanceGroups) != 1 || len(tr.InstanceGroups[0].Members) != 2 {
		t.Fatalf("groups = %+v, want one of two", tr.InstanceGroups)
	}
	wantNear(t, "group used", tr.InstanceGroups[0].Used, 1)
}

func TestTimeslicingUsedIsOwnIntegral(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing}}
	sc := newScenario(100, map[string]string{labelReplicas: "4"}, gpus,
		pod("ns", "a", 0, 0, []string{gpuA + "::0"},
			proc(1, gpuA, seg(0, 50, 0.5), seg(50, 100, 0.1)), proc(2, gpuA, seg(10, 20, 0.2))),
		pod("ns", "b", 20, 60, []string{gpuA + "::1"}, proc(3, gpuA, seg(20, 60, 0.3))))
	tr := mustCompute(t, sc)
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, 25+5+2)
	wantNear(t, "used(b)", tr.Containers["ns/b/c"].Used, 12)
	wantNear(t, "allocated(a)", tr.Containers["ns/a/c"].Allocated, 25)
	wantNear(t, "allocated(b)", tr.Containers["ns/b/c"].Allocated, 10)
	wantNear(t, "unallocated", *tr.GPUs[gpuA].Unallocated, 100-35)
	// b starts and ends inside the scenario: two edges of a quarter GPU.
	wantNear(t, "edge_tol(b)", tr.Containers["ns/b/c"].EdgeTol, 0.5+1e-6)
	wantNear(t, "edge_tol(a)", tr.Containers["ns/a/c"].EdgeTol, 1e-6)
}

func TestProcessActivityIsClippedToItsLifetime(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeExclusive}}
	p := proc(1, gpuA, seg(0, 100, 0.5))
	p.Start, p.End = secs(10), secs(30)
	sc := newScenario(100, nil, gpus, pod("ns", "a", 0, 0, []string{gpuA}, p))
	wantNear(t, "used", mustCompute(t, sc).Containers["ns/a/c"].Used, 10)
}

func TestReplicasFromDistinctIDsWithoutLabel(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing}}
	sc := newScenario(30, map[string]string{labelStrategy: "time-slicing"}, gpus,
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0, 30, 0.1))),
		pod("ns", "b", 0, 0, []string{gpuA + "::1"}),
		pod("ns", "c", 0, 0, []string{gpuA + "::2"}))
	tr := mustCompute(t, sc)
	for _, k := range []string{"ns/a/c", "ns/b/c", "ns/c/c"} {
		wantNear(t, "allocated("+k+")", tr.Containers[k].Allocated, 10)
		// ledger.md: without the label the rows are marked estimated.
		if tr.Containers[k].Method != MethodEstimated {
			t.Errorf("%s: method %q, want estimated", k, tr.Containers[k].Method)
		}
	}
	if tr.GPUs[gpuA].Unallocated != nil {
		t.Errorf("unallocated = %v, want none", *tr.GPUs[gpuA].Unallocated)
	}
	// Only the share is estimated: each keeps its used checked alone.
	if len(tr.InstanceGroups) != 3 || tr.InstanceGroups[0].Members[0] != "ns/a/c" || len(tr.InstanceGroups[0].Members) != 1 {
		t.Fatalf("groups = %+v, want three singles, a first", tr.InstanceGroups)
	}
	wantNear(t, "single used(a)", tr.InstanceGroups[0].Used, 3)
}

func migGPU() []scenario.GPU {
	return []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeMIG,
		MIGInstances: []scenario.MIGInstance{{UUID: migX, Profile: "3g.40gb"}, {UUID: migY, Profile: "1g.10gb+me"}}}}
}

func TestMIGWeightsUsageAndAllocation(t *testing.T) {
	sc := newScenario(70, nil, migGPU(),
		pod("ns", "a", 0, 0, []string{migX}, proc(1, migX, seg(0, 70, 0.5))),
		pod("ns", "b", 0, 0, []string{migY}, proc(2, migY, seg(0, 35, 1))))
	tr := mustCompute(t, sc)
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, 3.0/7*0.5*70)
	wantNear(t, "allocated(a)", tr.Containers["ns/a/c"].Allocated, 30)
	wantNear(t, "used(b)", tr.Containers["ns/b/c"].Used, 5)
	wantNear(t, "unallocated", *tr.GPUs[gpuA].Unallocated, 70-40)
	if m := tr.Containers["ns/a/c"].SharingMode; m != "mig" {
		t.Errorf("mode = %q, want mig", m)
	}
	if len(tr.InstanceGroups) != 0 {
		t.Errorf("groups = %+v, want none", tr.InstanceGroups)
	}
}

func TestMIGReplicasOverlappingAreGrouped(t *testing.T) {
	// a and b share instance X for [20, 40); c holds it only after b left.
	sc := newScenario(70, map[string]string{labelReplicas: "2", labelStrategy: "mps"}, migGPU(),
		pod("ns", "a", 0, 40, []string{migX + "::0"}, proc(1, migX, seg(0, 40, 0.35))),
		pod("ns", "b", 20, 50, []string{migX + "::1"}, proc(2, migX, seg(20, 50, 0.7))),
		pod("ns", "c", 55, 70, []string{migX + "::1"}, proc(3, migX, seg(55, 70, 0.7))))
	tr := mustCompute(t, sc)
	if len(tr.InstanceGroups) != 1 {
		t.Fatalf("groups = %+v, want one", tr.InstanceGroups)
	}
	g := tr.InstanceGroups[0]
	if strings.Join(g.Members, ",") != "ns/a/c,ns/b/c" {
		t.Errorf("members = %v, want a and b", g.Members)
	}
	wantNear(t, "group used", g.Used, 3.0/7*(0.35*40+0.7*30))
	if tr.Containers["ns/c/c"].Method != "" || tr.Containers["ns/a/c"].Method != MethodEstimated {
		t.Errorf("methods a/c = %q/%q, want estimated/measured", tr.Containers["ns/a/c"].Method, tr.Containers["ns/c/c"].Method)
	}
	if m := tr.Containers["ns/a/c"].SharingMode; m != "mig+mps" {
		t.Errorf("mode = %q, want mig+mps", m)
	}
	wantNear(t, "allocated(a)", tr.Containers["ns/a/c"].Allocated, 3.0/7/2*40)
}

func hamiPod(name, annotation, id string, procs ...scenario.Process) scenario.Pod {
	p := pod("llm", name, 0, 0, []string{id}, procs...)
	p.Annotations = map[string]string{annotHAMi: annotation}
	return p
}

func TestHAMiShares(t *testing.T) {
	gpus := []scenario.GPU{
		{UUID: gpuA, Model: "H100-SXM5-80GB", Mode: scenario.ModeHAMi},
		{UUID: gpuB, Model: "H100-SXM5-80GB", Mode: scenario.ModeHAMi},
	}
	sc := newScenario(100, nil, gpus,
		hamiPod("cores", gpuA+",NVIDIA,10000,30:;", gpuA+"-0", proc(1, gpuA, seg(0, 100, 0.3))),
		hamiPod("memory", gpuA+",NVIDIA,20480,0:;", gpuA+"-1"),
		// Kubelet's ID names A, the annotation B: the annotation wins.
		hamiPod("elsewhere", gpuB+",NVIDIA,1000,5:;", gpuA+"-2"),
		hamiPod("none", "", gpuA+"-3"))
	tr := mustCompute(t, sc)
	// On A: 0.3 + 20480/81920 + 1/4 (no entry: one of 4 HAMi IDs) < 1.
	wantNear(t, "allocated(cores)", tr.Containers["llm/cores/c"].Allocated, 30)
	wantNear(t, "allocated(memory)", tr.Containers["llm/memory/c"].Allocated, 25)
	wantNear(t, "allocated(elsewhere)", tr.Containers["llm/elsewhere/c"].Allocated, 5)
	wantNear(t, "allocated(none)", tr.Containers["llm/none/c"].Allocated, 25)
	wantNear(t, "used(cores)", tr.Containers["llm/cores/c"].Used, 30)
	for k, want := range map[string]string{"cores": "", "elsewhere": "", "none": MethodEstimated} {
		if got := tr.Containers["llm/"+k+"/c"].Method; got != want {
			t.Errorf("method(%s) = %q, want %q", k, got, want)
		}
	}
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 100-30-25-25)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 95)
}

func TestHAMiSharesAboveOneAreScaledWhileLive(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "H100-SXM5-80GB", Mode: scenario.ModeHAMi}}
	late := hamiPod("late", gpuA+",NVIDIA,0,60:", gpuA+"-1")
	late.Start = secs(50)
	sc := newScenario(100, nil, gpus, hamiPod("early", gpuA+",NVIDIA,0,80:", gpuA+"-0"), late)
	tr := mustCompute(t, sc)
	// [0,50): 0.8 alone; [50,100): 0.8 and 0.6 scaled by 1/1.4.
	wantNear(t, "allocated(early)", tr.Containers["llm/early/c"].Allocated, 40+50*0.8/1.4)
	wantNear(t, "allocated(late)", tr.Containers["llm/late/c"].Allocated, 50*0.6/1.4)
	wantNear(t, "unallocated", *tr.GPUs[gpuA].Unallocated, 10)
}

func TestTeamPrecedence(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing}}
	forged := pod("payments", "forged", 0, 0, []string{gpuA + "::0"})
	forged.Labels = map[string]string{"team": "marketing"}
	podLabel := pod("research", "labelled", 0, 0, []string{gpuA + "::1"})
	podLabel.Labels = map[string]string{"team": "vision"}
	sc := newScenario(10, map[string]string{labelReplicas: "3"}, gpus,
		forged, podLabel, pod("sandbox", "plain", 0, 0, []string{gpuA + "::2"}))
	sc.Namespaces = []scenario.Namespace{
		{Name: "payments", Labels: map[string]string{"team": "payments"}},
		{Name: "research", Labels: map[string]string{"owner": "x"}},
	}
	tr := mustCompute(t, sc)
	for key, want := range map[string]string{"payments/forged/c": "payments", "research/labelled/c": "vision", "sandbox/plain/c": "sandbox"} {
		if got := tr.Containers[key].Team; got != want {
			t.Errorf("team(%s) = %q, want %q", key, got, want)
		}
	}
}

func TestUnknownSliceLeavesCapacityUnallocated(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeExclusive}}
	sc := newScenario(10, nil, gpus, pod("ns", "a", 0, 0, []string{"GPU-not-on-this-node"}))
	tr := mustCompute(t, sc)
	wantNear(t, "allocated", tr.Containers["ns/a/c"].Allocated, 0)
	wantNear(t, "unallocated", *tr.GPUs[gpuA].Unallocated, 10)
}

func TestComputeRejectsBadInput(t *testing.T) {
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing}}
	cases := map[string]struct {
		sc   *scenario.Scenario
		want string
	}{
		"nil":            {nil, "no scenario"},
		"zero duration":  {newScenario(0, nil, gpus), "duration"},
		"unknown device": {newScenario(10, nil, gpus, pod("ns", "a", 0, 0, nil, proc(7, "GPU-x"))), `device "GPU-x"`},
		"process on MIG GPU": {newScenario(10, nil, migGPU(), pod("ns", "a", 0, 0, nil, proc(7, gpuA))),
			"MIG-enabled"},
		"bad profile": {newScenario(10, nil, []scenario.GPU{{UUID: gpuA, Mode: scenario.ModeMIG,
			MIGInstances: []scenario.MIGInstance{{UUID: migX, Profile: "big"}}}}), `"big"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Compute(tc.sc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestMPSDayLongScenario(t *testing.T) {
	// A day of 0.8 + 0.4 in 200 ms periods (432,000 of them), with a change
	// of B's fraction every 10 s so that the sweep meets many stretches:
	// B alternates 0.4 and 0.2, so per 20 s A gets 10*0.8/1.2 + 10*0.8/1.0.
	var bSegs []scenario.Segment
	for s := 0.0; s < 86400; s += 20 {
		bSegs = append(bSegs, seg(s, s+10, 0.4), seg(s+10, s+20, 0.2))
	}
	sc := newScenario(86400, map[string]string{labelReplicas: "2"}, mpsGPU("clients"),
		pod("ns", "a", 0, 0, []string{gpuA + "::0"}, proc(1, gpuA, seg(0, 86400, 0.8))),
		pod("ns", "b", 0, 0, []string{gpuA + "::1"}, scenario.Process{PID: 2, Device: gpuA, Busy: bSegs}))
	tr := mustCompute(t, sc)
	cycles := 86400.0 / 20
	wantNear(t, "used(a)", tr.Containers["ns/a/c"].Used, cycles*(10*0.8/1.2+10*0.8))
	wantNear(t, "used(b)", tr.Containers["ns/b/c"].Used, cycles*(10*0.4/1.2+10*0.2))
}
