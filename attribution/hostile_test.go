package attribution

import (
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
