package groundtruth

import (
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

const gpuC = "GPU-cccccccc-0000-4000-8000-000000000000"

func claim(driver, device string) scenario.Claim {
	return scenario.Claim{Claim: "c-" + device, Request: "gpu", Driver: driver, Pool: "node", Device: device}
}

// claimPod is a pod [start, end) whose container "c" lists claims.
func claimPod(name string, start, end float64, claims ...scenario.Claim) scenario.Pod {
	p := pod("ns", name, start, end, nil)
	p.Containers[0].Devices = nil
	p.Containers[0].Claims = claims
	return p
}

func draScenario(pods ...scenario.Pod) *scenario.Scenario {
	gpus := []scenario.GPU{
		{UUID: gpuA, Model: "H100-SXM5-80GB", Mode: scenario.ModeTimeslicing},
		{UUID: gpuB, Model: "A100-SXM4-80GB", Mode: scenario.ModeMIG,
			MIGInstances: []scenario.MIGInstance{{UUID: migX, Profile: "2g.20gb", GI: 3}}},
		{UUID: gpuC, Model: "H100-SXM5-80GB", Mode: scenario.ModeExclusive},
	}
	sc := newScenario(100, nil, gpus, pods...)
	sc.Node.ResourceSlices = []scenario.ResourceSlice{
		{Driver: draGPUDriver, Pool: "node", Devices: []scenario.SliceDevice{
			{Name: "gpu-0", Attributes: map[string]string{"type": "gpu", "uuid": gpuA}},
			{Name: "mig-0", Attributes: map[string]string{"type": "mig", "gpu.nvidia.com/uuid": migX}},
			{Name: "gpu-2", Attributes: map[string]string{"type": "gpu"}},
			{Name: "gpu-9", Attributes: map[string]string{"uuid": "GPU-99999999-0000-4000-8000-000000000000"}},
		}},
		// Another driver publishing a device of the same pool and name,
		// even with a GPU's uuid, hands out no GPU.
		{Driver: "compute-domain.nvidia.com", Pool: "node", Devices: []scenario.SliceDevice{
			{Name: "gpu-2", Attributes: map[string]string{"uuid": gpuC}},
		}},
	}
	return sc
}

func TestDRAClaimsMapThroughResourceSlices(t *testing.T) {
	gpuClaim := func(dev string) scenario.Claim { return claim(draGPUDriver, dev) }
	shareA := claimPod("share-a", 0, 0, gpuClaim("gpu-0"))
	shareA.Containers[0].Processes = []scenario.Process{proc(1, gpuA, seg(0, 100, 0.3))}
	// share-b lists the device twice (two requests): it is one holder.
	shareB := claimPod("share-b", 0, 40, gpuClaim("gpu-0"), gpuClaim("gpu-0"))
	// share-c's init container holds gpu-0 while it runs, [50, 60).
	shareC := claimPod("share-c", 50, 0)
	warm := plainInit("warm", 60, nil)
	warm.Claims = []scenario.Claim{gpuClaim("gpu-0")}
	shareC = withInits(shareC, 100, warm)
	sc := draScenario(
		claimPod("solo", 0, 0, gpuClaim("mig-0")),
		shareA, shareB, shareC,
		claimPod("nic", 0, 0, claim("compute-domain.nvidia.com", "gpu-2")),
		claimPod("lost", 0, 0, gpuClaim("gpu-2"), gpuClaim("gpu-9")))
	tr := mustCompute(t, sc)

	wantNear(t, "allocated(solo)", tr.Containers["ns/solo/c"].Allocated, 100*2.0/7)
	// gpu-0: a and b [0, 40), a alone [40, 50), a and warm [50, 60), a alone.
	wantNear(t, "allocated(share-a)", tr.Containers["ns/share-a/c"].Allocated, 20+10+5+40)
	wantNear(t, "allocated(share-b)", tr.Containers["ns/share-b/c"].Allocated, 20)
	wantNear(t, "allocated(warm)", tr.Containers["ns/share-c/warm"].Allocated, 5)
	wantNear(t, "used(share-a)", tr.Containers["ns/share-a/c"].Used, 30)
	if tr.GPUs[gpuA].Unallocated != nil {
		t.Errorf("GPU A unallocated %v, want none", *tr.GPUs[gpuA].Unallocated)
	}
	wantNear(t, "unallocated(C)", *tr.GPUs[gpuC].Unallocated, 100)
	wantNear(t, "unallocated(B)", *tr.GPUs[gpuB].Unallocated, 100-100*2.0/7)
	for _, k := range []string{"ns/nic/c", "ns/lost/c", "ns/share-c/c"} {
		if _, ok := tr.Containers[k]; ok {
			t.Errorf("%s holds no GPU and runs nothing, yet has a truth", k)
		}
	}
	for _, k := range []string{"ns/solo/c", "ns/share-a/c", "ns/share-b/c", "ns/share-c/warm"} {
		c := tr.Containers[k]
		if c.SharingMode != "dra" || c.Method != "" {
			t.Errorf("%s: mode/method %q/%q, want dra/measured", k, c.SharingMode, c.Method)
		}
	}
	// Each change of share inside the scenario is one poll of blur:
	// a 1/2 -> 1 at 40, 1 -> 1/2 at 50, 1/2 -> 1 at 60.
	wantNear(t, "edge_tol(share-a)", tr.Containers["ns/share-a/c"].EdgeTol, 1.5+1e-6)
	wantNear(t, "edge_tol(share-b)", tr.Containers["ns/share-b/c"].EdgeTol, 0.5+1e-6)
	wantNear(t, "edge_tol(warm)", tr.Containers["ns/share-c/warm"].EdgeTol, 1+1e-6)
}
