package attribution

import (
	"strconv"
	"strings"
	"testing"
)

const tu = "6f1f0f5e-0000-4000-8000-00000000abcd"

func TestParseDeviceID(t *testing.T) {
	tests := []struct {
		in   string
		want SliceID
	}{
		{"GPU-" + tu, SliceID{Kind: SliceKindGPU, UUID: "GPU-" + tu, Replica: -1, GI: -1, CI: -1}},
		{"GPU-" + tu + "::0", SliceID{Kind: SliceKindGPU, UUID: "GPU-" + tu, Replica: 0, GI: -1, CI: -1}},
		{"GPU-" + tu + "::13", SliceID{Kind: SliceKindGPU, UUID: "GPU-" + tu, Replica: 13, GI: -1, CI: -1}},
		{"GPU-" + tu + "-2", SliceID{Kind: SliceKindGPU, UUID: "GPU-" + tu, Replica: 2, HAMi: true, GI: -1, CI: -1}},
		{"MIG-" + tu, SliceID{Kind: SliceKindMIG, UUID: "MIG-" + tu, Replica: -1, GI: -1, CI: -1}},
		{"MIG-" + tu + "::3", SliceID{Kind: SliceKindMIG, UUID: "MIG-" + tu, Replica: 3, GI: -1, CI: -1}},
		{"MIG-GPU-" + tu + "/1/0", SliceID{Kind: SliceKindMIG, UUID: "MIG-GPU-" + tu + "/1/0", Replica: -1,
			Legacy: true, Parent: "GPU-" + tu, GI: 1, CI: 0}},
		{"MIG-GPU-" + strings.ToUpper(tu) + "/14/2::1", SliceID{Kind: SliceKindMIG, UUID: "MIG-GPU-" + strings.ToUpper(tu) + "/14/2",
			Replica: 1, Legacy: true, Parent: "GPU-" + strings.ToUpper(tu), GI: 14, CI: 2}},
	}
	// GKE's device plugin (GoogleCloudPlatform/container-engine-accelerators):
	// "nvidia%d" of the NVML minor (pkg/gpu/nvidia/manager.go), "/gi<n>" of
	// a MIG partition (pkg/gpu/nvidia/mig/mig.go), "%s/vgpu%d" per shared
	// client (manager.go ListDevices; gpusharing.go's comments give
	// 'nvidia0/vgpu0' and 'nvidia0/gi0/vgpu0').
	gke := []struct {
		in   string
		want SliceID
	}{
		{"nvidia0", SliceID{Kind: SliceKindGPU, GKE: true, Minor: 0, Replica: -1, GI: -1, CI: -1}},
		{"nvidia7", SliceID{Kind: SliceKindGPU, GKE: true, Minor: 7, Replica: -1, GI: -1, CI: -1}},
		{"nvidia0/vgpu0", SliceID{Kind: SliceKindGPU, GKE: true, Minor: 0, Replica: 0, GI: -1, CI: -1}},
		{"nvidia3/vgpu47", SliceID{Kind: SliceKindGPU, GKE: true, Minor: 3, Replica: 47, GI: -1, CI: -1}},
		{"nvidia0/gi0", SliceID{Kind: SliceKindMIG, GKE: true, Minor: 0, Replica: -1, GI: 0, CI: -1}},
		{"nvidia1/gi13", SliceID{Kind: SliceKindMIG, GKE: true, Minor: 1, Replica: -1, GI: 13, CI: -1}},
		{"nvidia0/gi0/vgpu0", SliceID{Kind: SliceKindMIG, GKE: true, Minor: 0, Replica: 0, GI: 0, CI: -1}},
		{"nvidia2/gi5/vgpu3", SliceID{Kind: SliceKindMIG, GKE: true, Minor: 2, Replica: 3, GI: 5, CI: -1}},
	}
	tests = append(tests, gke...)
	for _, tt := range tests {
		got, err := ParseDeviceID(tt.in)
		if err != nil {
			t.Errorf("ParseDeviceID(%q): %v", tt.in, err)
			continue
		}
		tt.want.Raw = tt.in
		if got != tt.want {
			t.Errorf("ParseDeviceID(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
}

func TestParseDeviceIDErrors(t *testing.T) {
	for _, in := range []string{
		"", "GPU-", "gpu-" + tu, "GPU-" + tu[:35], "GPU-" + tu + "x",
		"GPU-" + strings.Replace(tu, "-", "_", 1), "GPU-" + strings.Replace(tu, "6", "g", 1),
		"GPU-" + tu + "::", "GPU-" + tu + "::-1", "GPU-" + tu + "::01", "GPU-" + tu + "::1234567",
		"GPU-" + tu + "-", "GPU-" + tu + "-x", "GPU-" + tu + ":1", "MIG-" + tu + "-1",
		"MIG-GPU-" + tu, "MIG-GPU-" + tu + "/1", "MIG-GPU-" + tu + "/a/0", "MIG-GPU-" + tu[:30] + "/1/0",
		"0000:3b:00.1", "GPU-" + tu + "::1::2",
		// GKE shapes gone wrong: leading zeros, signs, too many digits,
		// unknown or repeated parts, wrong order, empty numbers.
		"nvidia", "nvidia00", "nvidia01", "nvidia-1", "nvidia+1", "nvidia1234567", "nvidiaX",
		"nvidia0/", "nvidia0/vgpu", "nvidia0/vgpu01", "nvidia0/gi", "nvidia0/gi01", "nvidia0/gi1/gi2",
		"nvidia0/vgpu1/gi2", "nvidia0/vgpu1/vgpu2", "nvidia0/gi1/vgpu2/x", "nvidia0/mig1", "nvidia0//vgpu1",
		"nvidia0/gi1/", "NVIDIA0", "nvidia 0", "nvidia0/gi-1", "nvidia0::1",
	} {
		_, err := ParseDeviceID(in)
		if err == nil {
			t.Errorf("ParseDeviceID(%q) succeeded, want an error", in)
			continue
		}
		if !strings.Contains(err.Error(), strconv.Quote(in)) {
			t.Errorf("error %q does not name the input %q", err, in)
		}
	}
}

func FuzzParseDeviceID(f *testing.F) {
	for _, s := range []string{
		"GPU-" + tu, "GPU-" + tu + "::3", "GPU-" + tu + "-7", "MIG-" + tu, "MIG-" + tu + "::0",
		"MIG-GPU-" + tu + "/1/0", "MIG-GPU-" + tu + "/1/0::2", "GPU-", "MIG-GPU-/", "", "::",
		"nvidia0", "nvidia1/vgpu2", "nvidia0/gi7", "nvidia3/gi1/vgpu0", "nvidia0/", "nvidia/gi/vgpu",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseDeviceID(s)
		if err != nil {
			if id != (SliceID{}) {
				t.Fatalf("error with non-zero result %+v", id)
			}
			return
		}
		if id.Raw != s || id.String() != s {
			t.Fatalf("round trip: %q -> %+v -> %q", s, id, id.String())
		}
		if id.Kind != SliceKindGPU && id.Kind != SliceKindMIG {
			t.Fatalf("kind %q", id.Kind)
		}
		if id.HAMi && (id.Kind != SliceKindGPU || id.Replica < 0) {
			t.Fatalf("bad HAMi id %+v", id)
		}
		if !strings.HasPrefix(s, id.UUID) {
			t.Fatalf("uuid %q not a prefix of %q", id.UUID, s)
		}
		if id.GKE {
			// Numbered, not named: no UUID, and a MIG kind exactly when
			// a GPU instance is named.
			if id.UUID != "" || id.HAMi || id.Legacy || id.Minor < 0 || (id.Kind == SliceKindMIG) != (id.GI >= 0) {
				t.Fatalf("bad GKE id %+v", id)
			}
		} else if id.Minor != 0 {
			t.Fatalf("minor on a non-GKE id %+v", id)
		}
		again, err := ParseDeviceID(id.String())
		if err != nil || again != id {
			t.Fatalf("reparse: %+v, %v", again, err)
		}
	})
}
