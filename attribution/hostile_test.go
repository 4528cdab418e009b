package attribution

import (
	"fmt"
	"testing"
	"time"
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
