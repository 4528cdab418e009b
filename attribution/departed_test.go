package attribution

import (
	"testing"
	"time"
)

// A pod that ends inside the window is gone from the metadata at the poll,
// but its process's last samples still belong to it, not to unattributed.
func TestDepartedPodKeepsItsLastSamples(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(2)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "2")
	o.wholeGPU(g, 40, 40)
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g+"::0").
		proc(1, g, g, 100, uidA, "c", "x")
	e := NewEngine(Config{})
	base := o.Observation
	base.Time, base.Samples = base.Prev, nil
	e.Observe(base)

	// Cycle 2: the pod and its allocation are gone; the process exited
	// within the window and left 40% over both sample periods.
	gone := o.Observation
	gone.Metadata.Pods, gone.Allocations = nil, nil
	gone.Processes[0].Exited = true
	gone.Samples = []ProcessSample{
		{GPU: g, PID: 1, At: at(1), SMUtil: 40},
		{GPU: g, PID: 1, At: at(2), SMUtil: 40},
	}
	res := e.Observe(gone)
	checkCycle(t, res)
	if len(res.Anomalies) != 0 {
		t.Errorf("anomalies %+v, want none for a pod that just left", res.Anomalies)
	}
	gc := gpuOf(t, res, g)
	c := ctrOf(t, gc, "pa", "c", g)
	wantNear(t, "used", c.Used, 0.8)
	wantNear(t, "allocated", c.Allocated, 0)
	wantResiduals(t, gc, 2, 0, 1.2)

	// Cycle 3: the departed pod is carried only once.
	later := gone
	later.Prev, later.Time = at(2), at(3)
	later.GPUs = []GPU{gone.GPUs[0]}
	later.GPUs[0].DeviceSamples = []UtilSample{{At: at(3), Percent: 40}}
	later.Samples = []ProcessSample{{GPU: g, PID: 1, At: at(3), SMUtil: 40}}
	res = e.Observe(later)
	if len(res.Anomalies) == 0 {
		t.Errorf("a pod gone for two cycles must not be resurrected")
	}
}
