package scenario

import (
	"reflect"
	"testing"
)

func TestProfileSlices(t *testing.T) {
	for in, want := range map[string]int{"1g.5gb": 1, "1g.10gb+me": 1, "2g.20gb": 2, "3g.71gb": 3, "4g.40gb": 4, "7g.141gb": 7} {
		got, err := ProfileSlices(in)
		if err != nil || got != want {
			t.Errorf("ProfileSlices(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "8g.80gb", "0g.10gb", "3g", "g.10gb", "3g.40gb+xx", "mig-3g.40gb"} {
		if _, err := ProfileSlices(bad); err == nil {
			t.Errorf("ProfileSlices(%q): no error", bad)
		}
	}
}

// Memory is the model's framebuffer times the profile's memory fraction in
// eighths, as NVIDIA's profile tables give it (1g: 1/8, 1g with two memory
// slices and 2g: 2/8, 3g and 4g: 4/8, 7g: all).
func TestMIGProfiles(t *testing.T) {
	cases := map[string][]MIGProfile{
		"A100-SXM4-40GB": {{"1g.5gb", 1, 5120}, {"1g.5gb+me", 1, 5120}, {"1g.10gb", 1, 10240}, {"2g.10gb", 2, 10240}, {"3g.20gb", 3, 20480}, {"4g.20gb", 4, 20480}, {"7g.40gb", 7, 40960}},
		"A100-SXM4-80GB": {{"1g.10gb", 1, 10240}, {"1g.10gb+me", 1, 10240}, {"1g.20gb", 1, 20480}, {"2g.20gb", 2, 20480}, {"3g.40gb", 3, 40960}, {"4g.40gb", 4, 40960}, {"7g.80gb", 7, 81920}},
		"H100-SXM5-80GB": {{"1g.10gb", 1, 10240}, {"1g.10gb+me", 1, 10240}, {"1g.20gb", 1, 20480}, {"2g.20gb", 2, 20480}, {"3g.40gb", 3, 40960}, {"4g.40gb", 4, 40960}, {"7g.80gb", 7, 81920}},
		"H200-141GB":     {{"1g.18gb", 1, 17971}, {"1g.18gb+me", 1, 17971}, {"1g.35gb", 1, 35942}, {"2g.35gb", 2, 35942}, {"3g.71gb", 3, 71885}, {"4g.71gb", 4, 71885}, {"7g.141gb", 7, 143771}},
	}
	for model, want := range cases {
		got, err := MIGProfiles(model)
		if err != nil {
			t.Fatalf("MIGProfiles(%s): %v", model, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("MIGProfiles(%s) =\n%v\nwant\n%v", model, got, want)
		}
	}
	if _, err := MIGProfiles("V100"); err == nil {
		t.Error("MIGProfiles(V100): no error")
	}
}

func TestModelMemoryMiB(t *testing.T) {
	for model, want := range map[string]uint64{"A100-SXM4-40GB": 40960, "A100-SXM4-80GB": 81920, "H100-SXM5-80GB": 81920, "H200-141GB": 143771} {
		if got, err := ModelMemoryMiB(model); err != nil || got != want {
			t.Errorf("ModelMemoryMiB(%s) = %d, %v; want %d", model, got, err, want)
		}
	}
	if _, err := ModelMemoryMiB("NVIDIA A100-SXM4-80GB"); err == nil {
		t.Error("ModelMemoryMiB with the NVML product prefix: no error")
	}
}

func TestMIGInstanceWeight(t *testing.T) {
	if w := (MIGInstance{Profile: "3g.40gb"}).Weight(); w != 3.0/7 {
		t.Errorf("Weight(3g.40gb) = %v, want 3/7", w)
	}
	if w := (MIGInstance{Profile: "junk"}).Weight(); w != 0 {
		t.Errorf("Weight(junk) = %v, want 0", w)
	}
}
