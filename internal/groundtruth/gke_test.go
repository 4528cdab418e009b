package groundtruth

import (
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// gkeGPUs: minors differ from indexes, and the MIG GPU's GPU-instance IDs
// are not its instances' positions.
func gkeGPUs() []scenario.GPU {
	return []scenario.GPU{
		{Index: 0, Minor: 1, UUID: gpuA, Model: "A100-SXM4-80GB", Mode: scenario.ModeExclusive},
		{Index: 1, Minor: 0, UUID: gpuB, Model: "A100-SXM4-80GB", Mode: scenario.ModeTimeslicing},
		{Index: 2, Minor: 2, UUID: gpuC, Model: "A100-SXM4-80GB", Mode: scenario.ModeMIG, MIGInstances: []scenario.MIGInstance{
			{UUID: migX, Profile: "3g.40gb", GI: 2}, {UUID: migY, Profile: "1g.10gb", GI: 9}}},
	}
}

func TestGKEDeviceIDs(t *testing.T) {
	labels := map[string]string{labelGKEStrategy: "time-sharing", labelGKEClients: "2"}
	sc := newScenario(100, labels, gkeGPUs(),
		pod("ns", "whole", 0, 0, []string{"nvidia1"}), // minor 1 is index 0
		pod("ns", "v0", 0, 0, []string{"nvidia0/vgpu0"}),
		pod("ns", "v1", 0, 0, []string{"nvidia0/vgpu3"}),
		pod("ns", "gi", 0, 0, []string{"nvidia2/gi9"}),
		pod("ns", "givg", 0, 0, []string{"nvidia2/gi2/vgpu0"}),
		pod("ns", "bad", 0, 0, []string{"nvidia2/gi1", "nvidia7", "nvidia2", "nvidia0/vgpu"}))
	tr := mustCompute(t, sc)
	want := map[string]struct {
		alloc float64
		mode  string
	}{
		"ns/whole/c": {100, "exclusive"},
		"ns/v0/c":    {50, "timeslicing"},
		"ns/v1/c":    {50, "timeslicing"},
		"ns/gi/c":    {100.0 / 7, "mig"},
		"ns/givg/c":  {100 * 3.0 / 7 / 2, "mig+timeslicing"},
	}
	for k, w := range want {
		c := tr.Containers[k]
		wantNear(t, "allocated("+k+")", c.Allocated, w.alloc)
		if c.SharingMode != w.mode || c.Method != "" {
			t.Errorf("%s: mode/method %q/%q, want %s/measured", k, c.SharingMode, c.Method, w.mode)
		}
	}
	if _, ok := tr.Containers["ns/bad/c"]; ok {
		t.Error("IDs naming no device here gave a truth")
	}
	if tr.GPUs[gpuA].Unallocated != nil || tr.GPUs[gpuB].Unallocated != nil {
		t.Error("GPUs A and B are fully held, yet have unallocated seconds")
	}
	wantNear(t, "unallocated(C)", *tr.GPUs[gpuC].Unallocated, 100-100.0/7-150.0/7)
}

func TestGKEWithoutClientsLabelCountsVGPUs(t *testing.T) {
	labels := map[string]string{labelGKEStrategy: "mps"}
	sc := newScenario(90, labels, gkeGPUs(),
		pod("ns", "v0", 0, 0, []string{"nvidia0/vgpu0"}),
		pod("ns", "v1", 0, 0, []string{"nvidia0/vgpu1"}),
		pod("ns", "v2", 0, 0, []string{"nvidia0/vgpu2"}),
		pod("ns", "givg", 0, 0, []string{"nvidia2/gi2/vgpu1"}))
	tr := mustCompute(t, sc)
	for _, k := range []string{"ns/v0/c", "ns/v1/c", "ns/v2/c"} {
		c := tr.Containers[k]
		wantNear(t, "allocated("+k+")", c.Allocated, 30)
		if c.SharingMode != "mps" || c.Method != MethodEstimated {
			t.Errorf("%s: mode/method %q/%q, want mps/estimated", k, c.SharingMode, c.Method)
		}
	}
	g := tr.Containers["ns/givg/c"]
	wantNear(t, "allocated(givg)", g.Allocated, 90*3.0/7)
	if g.SharingMode != "mig+mps" || g.Method != MethodEstimated {
		t.Errorf("givg: mode/method %q/%q, want mig+mps/estimated", g.SharingMode, g.Method)
	}
}
