package groundtruth

import (
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// ctrHolding is a container named name holding ids (none when empty).
func ctrHolding(name string, ids []string, procs ...scenario.Process) scenario.Container {
	c := scenario.Container{Name: name, Processes: procs}
	if len(ids) > 0 {
		c.Devices = []scenario.DeviceRequest{{Resource: "nvidia.com/gpu", IDs: ids}}
	}
	return c
}

// plainInit is an init container exiting at offset end (seconds).
func plainInit(name string, end float64, ids []string, procs ...scenario.Process) scenario.Container {
	c := ctrHolding(name, ids, procs...)
	c.End = secs(end)
	return c
}

func sidecar(name string, ids []string) scenario.Container {
	c := ctrHolding(name, ids)
	c.RestartPolicy = "Always"
	return c
}

// withInits gives p its init containers, filling Start and End as
// scenario.Container documents the parser does (the truth must not need
// them, but the values must be what a parsed scenario carries).
func withInits(p scenario.Pod, podEnd float64, inits ...scenario.Container) scenario.Pod {
	turn := p.Start
	for i := range inits {
		inits[i].Start = turn
		if inits[i].RestartPolicy == "Always" {
			inits[i].End = secs(podEnd)
		} else {
			turn = inits[i].End
		}
	}
	for i := range p.Containers {
		p.Containers[i].Start, p.Containers[i].End = turn, secs(podEnd)
	}
	p.InitContainers = inits
	return p
}

func TestInitContainersHoldOnlyWhileTheyRun(t *testing.T) {
	gpus := []scenario.GPU{
		{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeExclusive},
		{UUID: gpuB, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing},
	}
	// Pod [10, 100): setup runs [10, 12) with no GPU; the sidecar starts at
	// its turn, 12, and runs to the pod's end; fetch runs [12, 30) on GPU A,
	// its process (busy 0.5 on paper from 0 to 100) only while it runs.
	p := scenario.Pod{UID: "u", Namespace: "ns", Name: "p", Start: secs(10),
		Containers: []scenario.Container{ctrHolding("main", []string{gpuB + "::1"})}}
	p = withInits(p, 100,
		plainInit("setup", 12, nil),
		sidecar("mesh", []string{gpuB + "::0"}),
		plainInit("fetch", 30, []string{gpuA}, proc(1, gpuA, seg(0, 100, 0.5))))
	sc := newScenario(100, map[string]string{labelReplicas: "2"}, gpus, p)
	tr := mustCompute(t, sc)

	if _, ok := tr.Containers["ns/p/setup"]; ok {
		t.Error("an init container without GPUs or processes has a truth")
	}
	wantNear(t, "allocated(fetch)", tr.Containers["ns/p/fetch"].Allocated, 18)
	wantNear(t, "used(fetch)", tr.Containers["ns/p/fetch"].Used, 0.5*18)
	wantNear(t, "allocated(mesh)", tr.Containers["ns/p/mesh"].Allocated, 0.5*88)
	// main starts when fetch, the last plain init container, ends at 30.
	wantNear(t, "allocated(main)", tr.Containers["ns/p/main"].Allocated, 0.5*70)
	wantNear(t, "unallocated(A)", *tr.GPUs[gpuA].Unallocated, 100-18)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 100-44-35)
	// Edges inside the scenario: fetch starts and stops, mesh only starts.
	wantNear(t, "edge_tol(fetch)", tr.Containers["ns/p/fetch"].EdgeTol, 2+1e-6)
	wantNear(t, "edge_tol(mesh)", tr.Containers["ns/p/mesh"].EdgeTol, 0.5+1e-6)
	if m := tr.Containers["ns/p/fetch"].SharingMode; m != "exclusive" {
		t.Errorf("mode(fetch) = %q, want exclusive", m)
	}
}

func TestInitContainerWindowsIgnoreParserStartEnd(t *testing.T) {
	// A plain init container whose End lies past the pod's end is cut at
	// the pod's end; what Start the parser wrote does not matter.
	gpus := []scenario.GPU{{UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeExclusive}}
	p := scenario.Pod{UID: "u", Namespace: "ns", Name: "p", End: secs(40)}
	p = withInits(p, 40, plainInit("long", 60, []string{gpuA}))
	p.InitContainers[0].Start = secs(35) // a wrong value must not leak in
	tr := mustCompute(t, newScenario(100, nil, gpus, p))
	wantNear(t, "allocated(long)", tr.Containers["ns/p/long"].Allocated, 40)
}
