package scenario

import (
	"maps"
	"strings"
	"testing"
)

// limitsScenario is a HAMi scenario whose container carries limits.
func limitsScenario(limits string) string {
	return `apiVersion: gpuledger/v1
kind: Scenario
name: limits
start: "2026-11-03T00:00:00Z"
duration: 60s
node:
  name: n
gpus:
  - index: 0
    uuid: GPU-6f1f0f5e-0000-4000-8000-000000000000
    model: H100-SXM5-80GB
    mode: hami
pods:
  - uid: 11111111-2222-4333-8444-555555555555
    namespace: ns
    name: p
    annotations:
      hami.io/vgpu-devices-allocated: GPU-6f1f0f5e-0000-4000-8000-000000000000,NVIDIA,20000,25:;
    containers:
      - name: main
        devices:
          - resource: nvidia.com/gpu
            ids: [GPU-6f1f0f5e-0000-4000-8000-000000000000-0]
` + limits
}

func TestContainerLimits(t *testing.T) {
	s, err := Parse([]byte(limitsScenario("        limits:\n          nvidia.com/gpu: 1\n          nvidia.com/gpucores: \"25\"\n          nvidia.com/gpumem: 20000\n")), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "25", "nvidia.com/gpumem": "20000"}
	if got := s.Pods[0].Containers[0].Limits; !maps.Equal(got, want) {
		t.Errorf("limits %v, want %v", got, want)
	}
	// Absent: nil (the metadata does not say); empty: none set.
	s, err = Parse([]byte(limitsScenario("")), t.TempDir())
	if err != nil || s.Pods[0].Containers[0].Limits != nil {
		t.Errorf("absent limits: %v, err %v", s.Pods[0].Containers[0].Limits, err)
	}
	s, err = Parse([]byte(limitsScenario("        limits: {}\n")), t.TempDir())
	if err != nil || s.Pods[0].Containers[0].Limits == nil || len(s.Pods[0].Containers[0].Limits) != 0 {
		t.Errorf("empty limits: %v, err %v", s.Pods[0].Containers[0].Limits, err)
	}
	if c := s.Clone().Pods[0].Containers[0]; c.Limits == nil {
		t.Error("clone lost the empty limits")
	}
}

func TestContainerLimitsRejected(t *testing.T) {
	for _, tc := range []struct{ limits, want string }{
		{"nvidia.com/gpucores: -4", `limits.nvidia.com/gpucores: "-4" is not a whole number`},
		{"nvidia.com/gpucores: four", `"four" is not a whole number`},
		{"nvidia.com/gpumem: 1.5", `"1.5" is not a whole number`},
		{"nvidia.com/gpumem: 99999999999", `"99999999999" is not a whole number`},
		{"cpu: 4", "limits.cpu: is not an extended resource name"},
	} {
		_, err := Parse([]byte(limitsScenario("        limits:\n          "+tc.limits+"\n")), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pods[0].containers[0]") {
			t.Errorf("%s: error %v, want one naming %q", tc.limits, err, tc.want)
		}
	}
	var b strings.Builder
	b.WriteString("        limits:\n")
	for i := range maxLimits + 1 {
		b.WriteString("          example.com/r" + strings.Repeat("x", i) + ": 1\n")
	}
	if _, err := Parse([]byte(limitsScenario(b.String())), t.TempDir()); err == nil || !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("too many limits: %v", err)
	}
}
