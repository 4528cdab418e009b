package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

func TestDCGMInstanceRelative(t *testing.T) {
	ctx := context.Background()
	sc := migScenario()
	// A process on GPU 1 at 0.5 from 1s to 2s: busy for half of (0.5s, 1.5s].
	sc.Pods = append(sc.Pods, scenario.Pod{UID: "uid-c", Namespace: "team-a", Name: "c", End: 10 * time.Second,
		Containers: []scenario.Container{{Name: "main", ID: hexID("c"),
			Processes: []scenario.Process{proc1(300, gpu1, 700, seg(1000*ms, 2*time.Second, 0.5))}}}})
	n := newNode(t, sc)
	dc := n.DCGM()
	if _, err := dc.Read(ctx); err == nil {
		t.Fatal("Read before Watch: no error")
	}
	if err := dc.Watch(ctx, time.Second); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	advance(t, n, 1500*ms)
	vals, err := dc.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	got := map[dcgmsource.Entity]dcgmsource.Values{}
	for _, v := range vals {
		got[v.Entity] = v
		if !v.At.Equal(t0.Add(1500 * ms)) {
			t.Errorf("%+v: At %v", v.Entity, v.At)
		}
	}
	if len(vals) != 4 || vals[0].Entity != (dcgmsource.Entity{GPUIndex: 0, GPUInstanceID: -1}) {
		t.Fatalf("entities %+v, want GPU 0, its 2 instances, GPU 1", vals)
	}
	// Window (0.5s, 1.5s]: instance 1 at 1.0, instance 2 at 0.7, GPU 1 at 0.5 for half the window.
	check := func(e dcgmsource.Entity, gr float64, fb uint64, watts float64) {
		t.Helper()
		v := got[e]
		if math.Abs(v.GrEngineActive-gr) > 1e-9 || v.SMActive != v.GrEngineActive || v.FBUsedMiB != fb || math.Abs(v.PowerWatts-watts) > 1e-6 {
			t.Errorf("%+v: %+v, want gr %v fb %d power %v", e, v, gr, fb, watts)
		}
	}
	check(dcgmsource.Entity{GPUIndex: 0, GPUInstanceID: 1}, 1, 3000, 0)
	check(dcgmsource.Entity{GPUIndex: 0, GPUInstanceID: 2}, 0.7, 600, 0) // pid 200 and host pid 50
	gpuBusy := 3.0/7 + 0.7/7
	check(dcgmsource.Entity{GPUIndex: 0, GPUInstanceID: -1}, gpuBusy, 3600, 60+340*gpuBusy)
	check(dcgmsource.Entity{GPUIndex: 1, GPUInstanceID: -1}, 0.25, 700, 70+630*0.25)
	// 70 W x 1.5 s + 630 W x 0.5 x 0.5 s = 105 + 157.5 J.
	if e := got[dcgmsource.Entity{GPUIndex: 1, GPUInstanceID: -1}].EnergyMilliJ; e != 262500 {
		t.Errorf("GPU 1 energy %d mJ, want 262500", e)
	}

	advance(t, n, 8*time.Second)
	vals, _ = dc.Read(ctx)
	// Window (7s, 8s]: only the host process, 0.2 on instance 2.
	if vals[1].GrEngineActive != 0 || math.Abs(vals[2].GrEngineActive-0.2) > 1e-9 || vals[2].FBUsedMiB != 600 {
		t.Errorf("at 8s: instances %+v %+v, want 0 and 0.2 with 600 MiB", vals[1], vals[2])
	}
	if err := dc.Watch(ctx, 0); err == nil {
		t.Error("Watch(0): no error")
	}
}

func TestDCGMMPSClamps(t *testing.T) {
	sc := baseScenario(scenario.ModeMPS, 10*time.Second)
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, gpu0, 1, seg(0, time.Second, 0.8)))
	addPod(sc, "uid-b", "b", 0, 10*time.Second, proc1(200, gpu0, 1, seg(500*ms, time.Second, 0.8)))
	n := newNode(t, sc)
	ctx := context.Background()
	if err := n.DCGM().Watch(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	advance(t, n, time.Second)
	vals, err := n.DCGM().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 0.8 x 0.5 s + 1 x 0.5 s over 1 s.
	if math.Abs(vals[0].GrEngineActive-0.9) > 1e-9 {
		t.Errorf("GR_ENGINE_ACTIVE %v, want 0.9", vals[0].GrEngineActive)
	}
}
