package attribution

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// A replica count that is not a positive integer is an anomaly and the
// slices it would divide stay unallocated, as for any unplaceable ID;
// before, a garbage label read as absent and the replicas were estimated
// from the IDs seen, so a lone holder was charged the whole GPU.
func TestGarbageReplicasLabelLeavesCapacityUnallocated(t *testing.T) {
	for _, v := range []string{"four", "0", "-4", "NaN", "", "4.0", "1e3"} {
		t.Run(v, func(t *testing.T) {
			g := gpuID(1)
			o := newObs(at(0), at(10)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, v)
			o.wholeGPU(g, rep(50, 10)...)
			o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
				alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
				proc(1, g, g, 1000, uidA, "c", "x").
				samples(g, 1, rep(50, 10)...)
			res := attributeOnce(t, Config{}, o)
			gc := gpuOf(t, res, g)
			// Its usage is still its own (5 s), it holds nothing.
			c := ctrOf(t, gc, "pa", "c", "")
			wantNear(t, "allocated", c.Allocated, 0)
			wantNear(t, "used", c.Used, 5)
			wantResiduals(t, gc, 10, 0, 5)
			if !hasAnomaly(res, AnomalyBadReplicas, LabelReplicas) {
				t.Errorf("no %s anomaly for %q in %+v", AnomalyBadReplicas, v, res.Anomalies)
			}
		})
	}
}

// The same for a MIG profile's replicas label and GKE's clients label.
func TestGarbageResourceAndGKEReplicaLabels(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "time-slicing").
		label(LabelReplicas, "4").label("nvidia.com/mig-1g.10gb.replicas", "-2")
	gp := o.wholeGPU(g)
	gp.MIGEnabled = true
	gp.DeviceSamplesOK = false
	gp.MIG = []MIGInstance{{UUID: migID(1), Profile: "1g.10gb", Slices: 1, GPUInstanceID: 9}}
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-1g.10gb.shared", migID(1)+"::0")
	res := attributeOnce(t, Config{}, o)
	if gc := gpuOf(t, res, g); len(gc.Containers) != 0 || !near(gc.Unallocated, 10) {
		t.Errorf("MIG slice of a garbage label placed: %+v", gc)
	}
	if !hasAnomaly(res, AnomalyBadReplicas, "nvidia.com/mig-1g.10gb.replicas") {
		t.Errorf("anomalies %+v", res.Anomalies)
	}

	o = newObs(at(0), at(10)).label(LabelGKEMaxClients, "many")
	gp = o.wholeGPU(g)
	gp.Minor, gp.HasMinor = 0, true
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", "nvidia0/vgpu1")
	res = attributeOnce(t, Config{}, o)
	if gc := gpuOf(t, res, g); len(gc.Containers) != 0 || !near(gc.Unallocated, 10) {
		t.Errorf("GKE slice of a garbage label placed: %+v", gc)
	}
	if !hasAnomaly(res, AnomalyBadReplicas, LabelGKEMaxClients) {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
}

// A pod cannot bill another team: in a namespace without a team label,
// with an empty one or one under a differently cased key, a pod labelled
// team=finance (any case, padded) is billed to its namespace because a
// labelled namespace owns finance; so is one naming an unlabelled
// namespace. A team no namespace bills still comes from the pod's label,
// as the ledger format says. Before, the pod's label was taken wherever
// the namespace had none.
func TestPodTeamLabelCannotBillAnotherTeam(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "16")
	o.wholeGPU(g)
	o.ns("fin", map[string]string{"team": "Finance"}).
		ns("bare", nil).
		ns("empty", map[string]string{"team": ""}).
		ns("cased", map[string]string{"Team": "ops"}).
		ns("sandbox", nil)
	pods := []struct{ ns, name, label, want string }{
		{"bare", "forger", "finance", "bare"},
		{"empty", "forger", "finance", "empty"},
		{"cased", "forger", "finance", "cased"},
		{"nowhere", "forger", "finance", "nowhere"}, // namespace not even listed
		{"bare", "upper", "FINANCE", "bare"},
		{"bare", "padded", " finance ", "bare"},
		{"bare", "other-ns", "sandbox", "bare"},  // an unlabelled namespace's name is its team
		{"bare", "vision", "vision", "vision"},   // nobody bills vision: the contract's fallback
		{"fin", "in-fin", "vision", "Finance"},   // the namespace label wins
		{"sandbox", "own", "sandbox", "sandbox"}, // its own namespace: the same bill
		{"bare", "blank", "  ", "bare"},
	}
	for i, p := range pods {
		o.pod(p.ns, p.name, uidFor(p.ns+p.name), time.Time{}, map[string]string{"team": p.label}, nil, "c").
			alloc(p.ns, p.name, "c", "nvidia.com/gpu", fmt.Sprintf("%s::%d", g, i))
	}
	for _, ignore := range []bool{false, true} {
		res := attributeOnce(t, Config{IgnorePodTeamLabel: ignore}, o)
		gc := gpuOf(t, res, g)
		if len(gc.Containers) != len(pods) {
			t.Fatalf("%d rows, want %d", len(gc.Containers), len(pods))
		}
		for _, p := range pods {
			want := p.want
			if ignore && p.ns != "fin" {
				want = p.ns // the operator turned pod labels off: the namespace pays
			}
			for _, c := range gc.Containers {
				if c.Namespace == p.ns && c.Pod == p.name && c.Team != want {
					t.Errorf("ignore=%v: team of %s/%s (label %q) = %q, want %q", ignore, p.ns, p.name, p.label, c.Team, want)
				}
			}
		}
		for _, forged := range []string{"bare/forger", "empty/forger", "cased/forger", "nowhere/forger", "bare/upper", "bare/padded", "bare/other-ns"} {
			if got := hasAnomaly(res, AnomalyForgedTeam, forged); got == ignore {
				t.Errorf("ignore=%v: %s anomaly for %s: %v", ignore, AnomalyForgedTeam, forged, got)
			}
		}
		if hasAnomaly(res, AnomalyForgedTeam, "bare/vision") {
			t.Errorf("an allowed pod label raised %s", AnomalyForgedTeam)
		}
	}
}

// hamiPod adds a pod with one container "c" holding HAMi ID id, annotated
// ann, with limits (nil: the metadata does not say), running process pid
// with memMiB on gpu at pct percent.
func (o *tobs) hamiPod(ns, name, uid, ann string, limits map[string]string, id, gpu string, pid uint32, memMiB uint64, pct float64) *tobs {
	o.pod(ns, name, uid, time.Time{}, nil, map[string]string{HAMiAnnotation: ann}, "c")
	p := &o.Metadata.Pods[len(o.Metadata.Pods)-1]
	p.Containers[0].Limits, p.Containers[0].LimitsKnown = limits, limits != nil
	o.alloc(ns, name, "c", "nvidia.com/gpu", id)
	if pid != 0 {
		o.proc(pid, gpu, gpu, memMiB, uid, "c", "python")
		o.samples(gpu, pid, rep(pct, 10)...)
	}
	return o
}

// A container whose annotation gives 0 cores and 0 MiB but runs half the
// time used to be allocated nothing, measured, with no anomaly. Without
// limits in the metadata its share is its framebuffer (20000 of 80000
// MiB: a quarter), estimated, and hami_zero_share is raised; with no core
// limit it holds at least what it used, half of the 10 s.
func TestHAMiZeroShareChargedItsFramebuffer(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g, rep(50, 10)...).MemoryMiB = 80000
	o.hamiPod("a", "free", uidA, g+",NVIDIA,0,0:;", nil, g+"-0", g, 1, 20000, 50)
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	wantRow(t, ctrOf(t, gc, "free", "c", ""), string(tenancy.HAMi), MethodEstimated, 0.25, 5, 5)
	if !hasAnomaly(res, AnomalyHAMiZeroShare, "a/free/c "+g) {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
}

// With the pod spec's limits known, they decide the share whatever the
// annotation says (it may have been edited before the container started,
// and the first value seen is the edited one); the disagreement is an
// anomaly and the container pays at least its framebuffer. Without a core
// limit it pays at least its use (50% busy: 5 of the 10 s).
func TestHAMiLimitsDecideTheShare(t *testing.T) {
	g := gpuID(1)
	lim := map[string]string{HAMiResourceCores: "50", HAMiResourceMem: "20000", "nvidia.com/gpu": "1"}
	for _, tc := range []struct {
		name, ann   string
		limits      map[string]string
		mem         uint64
		share       float64
		method      string
		mismatch    bool
		description string
	}{
		{"agrees", g + ",NVIDIA,20000,50:;", lim, 10000, 0.5, MethodMeasured, false, "annotation as the limits ask"},
		{"edited-down", g + ",NVIDIA,0,0:;", lim, 10000, 0.5, MethodEstimated, true, "edited to nothing: the limits' 50%"},
		{"edited-cores", g + ",NVIDIA,20000,1:;", lim, 10000, 0.5, MethodEstimated, true, "cores 50 -> 1"},
		{"framebuffer-above", g + ",NVIDIA,20000,1:;", lim, 60000, 0.75, MethodEstimated, true, "holds 60000 of 80000 MiB"},
		// No HAMi limits at all: HAMi's defaults, no core limit and all
		// of the device's memory, so the whole GPU.
		{"defaults", g + ",NVIDIA,80000,0:;", map[string]string{"nvidia.com/gpu": "1"}, 1000, 1, MethodMeasured, false, "defaults"},
		{"defaults-edited", g + ",NVIDIA,100,0:;", map[string]string{}, 1000, 1, MethodEstimated, true, "defaults, annotation lowered"},
		{"percentage", g + ",NVIDIA,20000,0:;", map[string]string{HAMiResourceMemPercentage: "25"}, 1000, 0.25, MethodMeasured, false, "25% of 80000 MiB"},
		{"percentage-edited", g + ",NVIDIA,8000,0:;", map[string]string{HAMiResourceMemPercentage: "25"}, 1000, 0.25, MethodEstimated, true, "25% asked, 10% annotated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newObs(at(0), at(10))
			o.wholeGPU(g, rep(50, 10)...).MemoryMiB = 80000
			o.hamiPod("a", "pa", uidA, tc.ann, tc.limits, g+"-0", g, 1, tc.mem, 50)
			res := attributeOnce(t, Config{}, o)
			alloc := 10 * tc.share
			if tc.limits[HAMiResourceCores] == "" {
				alloc = max(alloc, 5) // no core limit: at least its 50% busy
			}
			wantRow(t, ctrOf(t, gpuOf(t, res, g), "pa", "c", ""), string(tenancy.HAMi), tc.method, tc.share, alloc, 5)
			if got := hasAnomaly(res, AnomalyHAMiLimitsMismatch, "a/pa/c "+g); got != tc.mismatch {
				t.Errorf("%s: mismatch anomaly %v, want %v: %+v", tc.description, got, tc.mismatch, res.Anomalies)
			}
		})
	}
}

// An entry naming the same GPU 20,000 times used to be summed and scaled
// down with its neighbour's share: it took almost the whole GPU and
// squeezed a legitimate neighbour to nearly nothing. It is charged once
// (the larger annotated share, at least its framebuffer and its use: 30%
// busy, 3 of the 10 s), estimated, and hami_duplicate_gpu is raised; the
// neighbour keeps its 50%.
func TestHAMiSameGPUNamedManyTimes(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g, rep(80, 10)...).MemoryMiB = 80000
	ann := strings.Repeat(g+",NVIDIA,1000,10:", 20000) + ";"
	o.hamiPod("a", "greedy", uidA, ann, nil, g+"-0", g, 1, 4000, 30)
	o.hamiPod("b", "honest", uidB, g+",NVIDIA,40000,50:;", nil, g+"-1", g, 2, 30000, 50)
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g)
	wantRow(t, ctrOf(t, gc, "greedy", "c", ""), string(tenancy.HAMi), MethodEstimated, 0.1, 3, 3)
	wantRow(t, ctrOf(t, gc, "honest", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.5, 5, 5)
	wantResiduals(t, gc, 2, 0, 2)
	if !hasAnomaly(res, AnomalyHAMiDuplicateGPU, "a/greedy/c") {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
	// With limits known, the limits' share, once.
	o = newObs(at(0), at(10))
	o.wholeGPU(g, rep(80, 10)...).MemoryMiB = 80000
	o.hamiPod("a", "greedy", uidA, ann, map[string]string{HAMiResourceCores: "10", HAMiResourceMem: "1000"}, g+"-0", g, 1, 4000, 30)
	o.hamiPod("b", "honest", uidB, g+",NVIDIA,40000,50:;", nil, g+"-1", g, 2, 30000, 50)
	gc = gpuOf(t, attributeOnce(t, Config{}, o), g)
	wantRow(t, ctrOf(t, gc, "greedy", "c", ""), string(tenancy.HAMi), MethodEstimated, 0.1, 3, 3)
	wantRow(t, ctrOf(t, gc, "honest", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.5, 5, 5)
}

// FuzzHAMiSpec: pod limits are outside input. Whatever they hold, the
// spec stays in HAMi's ranges and its share is a fraction of one GPU (or
// -1 without a size), never more.
func FuzzHAMiSpec(f *testing.F) {
	for _, s := range [][3]string{{"50", "20000", ""}, {"0", "0", "0"}, {"-4", "1.5", "101"}, {"100", "", "25"}, {"99999999999", "x", "NaN"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, cores, mem, pct string) {
		s := hamiSpecOf(map[string]string{HAMiResourceCores: cores, HAMiResourceMem: mem, HAMiResourceMemPercentage: pct})
		if s.cores < 0 || s.cores > 100 || s.memPct < 1 || s.memPct > 100 {
			t.Fatalf("spec %+v out of range", s)
		}
		for _, gpuMem := range []uint64{0, 1, 81920} {
			if sh := s.share(gpuMem); sh > 1 || (sh < 0 && sh != -1) || (sh == 0) {
				t.Fatalf("share %v of %+v on %d MiB", sh, s, gpuMem)
			}
		}
	})
}

// A pod spec asking for two vGPUs whose entry names one GPU hides the
// other: a disagreement with the limits, keyed by the container.
func TestHAMiEntryNamingFewerGPUsThanLimitsAsk(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10))
	o.wholeGPU(g, rep(50, 10)...).MemoryMiB = 80000
	lim := map[string]string{ResourceGPU: "2", HAMiResourceCores: "30", HAMiResourceMem: "1000"}
	o.hamiPod("a", "pa", uidA, g+",NVIDIA,1000,30:;", lim, g+"-0", g, 1, 500, 50)
	res := attributeOnce(t, Config{}, o)
	wantRow(t, ctrOf(t, gpuOf(t, res, g), "pa", "c", ""), string(tenancy.HAMi), MethodMeasured, 0.3, 3, 5)
	if !hasAnomaly(res, AnomalyHAMiLimitsMismatch, "a/pa/c") {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
	lim[ResourceGPU] = "1"
	if res := attributeOnce(t, Config{}, o); len(res.Anomalies) != 0 {
		t.Errorf("anomalies %+v for an entry as the limits ask", res.Anomalies)
	}
}
