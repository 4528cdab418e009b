package nvmlsource

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestMIGProfile(t *testing.T) {
	const a100_80, a100_40 = 81920 << 20, 40960 << 20 // bytes
	tests := []struct {
		name       string
		attrs      nvml.DeviceAttributes
		attrsOK    bool
		total      uint64
		wantProf   string
		wantSlices int
	}{
		{"NVIDIA A100-SXM4-80GB MIG 3g.40gb", nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 3}, true, a100_80, "3g.40gb", 3},
		{"NVIDIA A100-SXM4-80GB MIG 3g.40gb", nvml.DeviceAttributes{}, false, a100_80, "3g.40gb", 3},
		// A compute instance is charged its own compute slices, from the
		// name alone or from the attributes (whose compute-instance
		// count wins over the GPU instance's).
		{"NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb", nvml.DeviceAttributes{}, false, a100_40, "1c.3g.20gb", 1},
		{"NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb", nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 1}, true, a100_80, "1c.3g.40gb", 1},
		{"NVIDIA A100-SXM4-80GB MIG 2c.3g.40gb", nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 2}, true, a100_80, "2c.3g.40gb", 2},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 1, MemorySizeMB: 40192}, true, a100_80, "1c.3g.40gb", 1},
		// A driver that leaves the compute count 0: the GPU instance's.
		{"NVIDIA A100-SXM4-80GB MIG 3g.40gb", nvml.DeviceAttributes{GpuInstanceSliceCount: 3}, true, a100_80, "3g.40gb", 3},
		// Built from attributes, rounded as NVIDIA names profiles.
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 3, MemorySizeMB: 40192}, true, a100_80, "3g.40gb", 3},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 1, MemorySizeMB: 9856}, true, a100_80, "1g.10gb", 1},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 7, MemorySizeMB: 80896}, true, a100_80, "7g.80gb", 7},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 1, MemorySizeMB: 4864}, true, a100_40, "1g.5gb", 1},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 2, MemorySizeMB: 9728}, true, 0, "2g.10gb", 2}, // total unknown: ceil GiB
		{"", nvml.DeviceAttributes{}, false, a100_80, "", 0},
	}
	for _, tt := range tests {
		prof, slices := migProfile(tt.name, tt.attrs, tt.attrsOK, tt.total)
		if prof != tt.wantProf || slices != tt.wantSlices {
			t.Errorf("migProfile(%q, %+v, %v) = %q, %d; want %q, %d", tt.name, tt.attrs, tt.attrsOK, prof, slices, tt.wantProf, tt.wantSlices)
		}
	}
}
