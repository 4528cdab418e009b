package attribution

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

func TestLegacyMIGID(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(7))
	o.migGPU(g, 11, []int{2, 1}, []float64{0.5, 0}) // GPU instance IDs 1 and 2
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/mig-2g.20gb", "MIG-"+g+"/1/0").
		proc(1, g, migID(11), 0, uidA, "c", "x")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// Instance 1 is 2/7 of the GPU: 2 s allocated, 2/7 x 0.5 x 7 = 1 s used.
	wantRow(t, ctrOf(t, gc, "pa", "c", "MIG-"+g+"/1/0"), string(tenancy.MIG), MethodMeasured, 2.0/7, 2, 1)
	wantResiduals(t, gc, 5, 0, 6)
}

func TestFirstObservationOnlySetsBaselines(t *testing.T) {
	e := NewEngine(Config{})
	res := e.Observe(halfBusy(0, 0, true))
	if len(res.GPUs) != 1 || res.GPUs[0].Capacity != 0 || len(res.Rows) != 0 {
		t.Fatalf("baseline result %+v", res)
	}
	// A first observation that does have a window is attributed, but has
	// no energy baseline.
	e = NewEngine(Config{})
	res = e.Observe(halfBusy(0, 10, true))
	checkCycle(t, res)
	wantNear(t, "capacity", res.GPUs[0].Capacity, 10)
	wantNear(t, "used", res.GPUs[0].Containers[0].Used, 5)
	wantNear(t, "energy", res.GPUs[0].EnergyJoules, 0)
	res = e.Observe(halfBusy(10, 20, true))
	wantNear(t, "energy", res.GPUs[0].EnergyJoules, 1000)
}

func TestTimeGoingBackwards(t *testing.T) {
	e := NewEngine(Config{})
	e.Observe(halfBusy(0, 0, true))
	e.Observe(halfBusy(0, 10, true))
	res := e.Observe(halfBusy(10, 5, true))
	checkCycle(t, res)
	if !hasAnomaly(res, AnomalyBadWindow, "time_backwards") || res.GPUs[0].Capacity != 0 {
		t.Errorf("backwards window: %+v", res)
	}
	// The 10 s so far are emitted at the break rather than mixed up.
	if len(res.Rows) != 4 || !res.Rows[0].IntervalEnd.Equal(at(10)) {
		t.Errorf("rows %+v", res.Rows)
	}
}

func TestDegradedNVMLKeepsKnownGPUs(t *testing.T) {
	e := NewEngine(Config{})
	e.Observe(halfBusy(0, 0, true))
	e.Observe(halfBusy(0, 10, true))
	o := halfBusy(10, 20, true)
	o.GPUs, o.Processes, o.Samples = nil, nil, nil
	o.Degraded = map[string]bool{"nvml": true}
	res := e.Observe(o)
	checkCycle(t, res)
	if len(res.GPUs) != 1 {
		t.Fatalf("GPUs %+v", res.GPUs)
	}
	gc := res.GPUs[0]
	// Still allocated as kubelet says; nothing is known about use.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.Exclusive), MethodMeasured, 1, 10, 0)
	wantResiduals(t, gc, 0, 10, 0)
	if gc.Model != "A100-SXM4-80GB" {
		t.Errorf("model %q", gc.Model)
	}
}

func TestFlushWithoutObservations(t *testing.T) {
	res := NewEngine(Config{}).Flush(at(5))
	if len(res.Rows) != 0 || len(res.Findings) != 0 || !res.Start.Equal(at(5)) {
		t.Errorf("flush %+v", res)
	}
}

func TestEnergyCounterBackwards(t *testing.T) {
	e := NewEngine(Config{})
	e.Observe(halfBusy(0, 0, true))
	e.Observe(halfBusy(0, 10, true))
	o := halfBusy(10, 20, true)
	o.GPUs[0].EnergyMilliJoules = 5
	res := e.Observe(o)
	checkCycle(t, res)
	wantNear(t, "energy", res.GPUs[0].EnergyJoules, 0)
	if !hasAnomaly(res, AnomalyEnergyBackward, gpuID(1)+" nvml") {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
}

func TestEnergyFromDCGMWhenNVMLMissing(t *testing.T) {
	e := NewEngine(Config{})
	mk := func(prev, now float64) Observation {
		o := halfBusy(prev, now, true)
		o.GPUs[0].EnergyOK = false
		o.GPUs[0].DCGM = &DCGMValues{EnergyMilliJ: 1 + uint64(now*200_000)} // 200 W
		return o
	}
	e.Observe(mk(0, 0))
	res := e.Observe(mk(0, 10))
	checkCycle(t, res)
	wantNear(t, "energy", res.GPUs[0].EnergyJoules, 2000)
	wantNear(t, "container energy", res.GPUs[0].Containers[0].Energy, 1000)
}
