package gpu

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestParseProfile: what each profile name is charged, in sevenths of
// the GPU. A compute-instance profile is charged its compute slices.
func TestParseProfile(t *testing.T) {
	for in, want := range map[string]struct {
		p      Profile
		slices int
	}{
		"1g.5gb":         {Profile{GPUSlices: 1, MemoryGB: 5}, 1},
		"1g.10gb+me":     {Profile{GPUSlices: 1, MemoryGB: 10, Extensions: "me"}, 1},
		"1g.10gb+me.all": {Profile{GPUSlices: 1, MemoryGB: 10, Extensions: "me.all"}, 1},
		"2g.20gb":        {Profile{GPUSlices: 2, MemoryGB: 20}, 2},
		"3g.71gb":        {Profile{GPUSlices: 3, MemoryGB: 71}, 3},
		"4g.40gb":        {Profile{GPUSlices: 4, MemoryGB: 40}, 4},
		"7g.141gb":       {Profile{GPUSlices: 7, MemoryGB: 141}, 7},
		"1c.3g.40gb":     {Profile{Compute: 1, GPUSlices: 3, MemoryGB: 40}, 1},
		"2c.3g.20gb":     {Profile{Compute: 2, GPUSlices: 3, MemoryGB: 20}, 2},
		"3c.3g.40gb":     {Profile{Compute: 3, GPUSlices: 3, MemoryGB: 40}, 3},
		"1c.7g.80gb+me":  {Profile{Compute: 1, GPUSlices: 7, MemoryGB: 80, Extensions: "me"}, 1},
	} {
		got, err := ParseProfile(in)
		if err != nil || got != want.p || got.Slices() != want.slices {
			t.Errorf("ParseProfile(%q) = %+v (%d slices), %v; want %+v (%d)", in, got, got.Slices(), err, want.p, want.slices)
		}
		if got.String() != in {
			t.Errorf("ParseProfile(%q).String() = %q", in, got.String())
		}
		if n, err := ProfileSlices(in); err != nil || n != want.slices {
			t.Errorf("ProfileSlices(%q) = %d, %v; want %d", in, n, err, want.slices)
		}
	}
	for _, bad := range []string{"", "8g.80gb", "0g.10gb", "3g", "g.10gb", "3g.40", "3g.0gb", "3x.40gb", "mig-3g.40gb",
		"4c.3g.40gb", "0c.3g.40gb", "1c.1c.3g.40gb", "3g.40gb+", "3g.40gb+ME", "3g.40gb+x y", "99999g.1gb", "1g.99999gb",
		"3g.40gb.1c", "c.3g.40gb", " 3g.40gb", "01g.1gb", "1g.010gb"} {
		if p, err := ParseProfile(bad); err == nil {
			t.Errorf("ParseProfile(%q) = %+v, no error", bad, p)
		}
	}
}

// TestComputeInstancesShareTheirGPUInstance: three 1c.3g.40gb compute
// instances of one 3g GPU instance add up to the GPU instance's 3/7, not
// to 9/7.
func TestComputeInstancesShareTheirGPUInstance(t *testing.T) {
	p, err := ParseProfile("1c.3g.40gb")
	if err != nil {
		t.Fatal(err)
	}
	if sum := 3 * p.Slices(); sum != 3 {
		t.Errorf("three 1c.3g.40gb: %d slices, want the GPU instance's 3", sum)
	}
	if w := p.Weight(); w != 1.0/7 {
		t.Errorf("weight %v, want 1/7", w)
	}
	if gi := p.GPUInstance(); gi.String() != "3g.40gb" || gi.Slices() != 3 {
		t.Errorf("GPU instance of 1c.3g.40gb: %v (%d slices), want 3g.40gb", gi, gi.Slices())
	}
}

func TestProfileFromDeviceName(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA A100-SXM4-80GB MIG 3g.40gb":       "3g.40gb",
		"NVIDIA H100 80GB HBM3 MIG 1g.10gb":       "1g.10gb",
		"NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb":    "1c.3g.20gb",
		"NVIDIA H100 80GB HBM3 MIG 1g.10gb+me":    "1g.10gb+me",
		"NVIDIA A100-SXM4-80GB MIG 7g.80gb ":      "7g.80gb",
		"MIG 2g.20gb":                             "2g.20gb",
		"NVIDIA A100-SXM4-80GB":                   "",
		"NVIDIA A100-SXM4-80GB MIG":               "",
		"NVIDIA A100-SXM4-80GB MIG 3g":            "",
		"NVIDIA A100-SXM4-80GB MIG g.40gb":        "",
		"NVIDIA A100-SXM4-80GB MIG 3x.40gb":       "",
		"NVIDIA A100-SXM4-80GB MIG 3g.40":         "",
		"NVIDIA A100-SXM4-80GB MIG 0g.10gb":       "",
		"NVIDIA A100-SXM4-80GB XMIG 3g.40gb":      "",
		"NVIDIA A100-SXM4-80GB MIG 1c.1c.3g.40gb": "",
		"NVIDIA A100-SXM4-80GB MIG 4c.3g.40gb":    "",
	} {
		if got := ProfileFromDeviceName(in); got != want {
			t.Errorf("ProfileFromDeviceName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Memory is the model's framebuffer times the profile's memory fraction
// in eighths, as NVIDIA's profile tables give it (1g: 1/8, 1g with two
// memory slices and 2g: 2/8, 3g and 4g: 4/8, 7g: all).
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
		for _, p := range want {
			if got, ok := LookupProfile(model, p.Name); !ok || got != p {
				t.Errorf("LookupProfile(%s, %s) = %v, %v", model, p.Name, got, ok)
			}
		}
	}
	if _, err := MIGProfiles("V100"); err == nil {
		t.Error("MIGProfiles(V100): no error")
	}
	if _, ok := LookupProfile("A100-SXM4-80GB", "1c.3g.40gb"); ok {
		t.Error("LookupProfile found a compute-instance profile among the GPU-instance profiles")
	}
	if got := strings.Join(Models(), "|"); got != "A100-SXM4-40GB|A100-SXM4-80GB|H100-SXM5-80GB|H200-141GB" || got != ModelNames() {
		t.Errorf("Models() = %s", got)
	}
}

func TestModelMemoryMiB(t *testing.T) {
	for model, want := range map[string]uint64{"A100-SXM4-40GB": 40960, "A100-SXM4-80GB": 81920, "H100-SXM5-80GB": 81920, "H200-141GB": 143771} {
		if got, err := ModelMemoryMiB(model); err != nil || got != want || !KnownModel(model) {
			t.Errorf("ModelMemoryMiB(%s) = %d, %v; want %d", model, got, err, want)
		}
	}
	if _, err := ModelMemoryMiB("NVIDIA A100-SXM4-80GB"); err == nil {
		t.Error("ModelMemoryMiB with the NVML product prefix: no error")
	}
}

// FuzzProfileFromName: whatever an NVML device name holds, the profile
// taken from it parses, has no space, writes back as itself and is
// charged 1 to 7 slices.
func FuzzProfileFromName(f *testing.F) {
	for _, s := range []string{"NVIDIA A100-SXM4-80GB MIG 3g.40gb", "MIG 1c.3g.20gb+me", "MIG .gb", "MIG 99999g.1gb", "MIG ", "x MIG 1g.5gb MIG 2g.10gb", "MIG 4c.3g.40gb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p := ProfileFromDeviceName(name)
		if p == "" {
			return
		}
		parsed, err := ParseProfile(p)
		if err != nil {
			t.Fatalf("ProfileFromDeviceName(%q) = %q, which ParseProfile rejects: %v", name, p, err)
		}
		if n := parsed.Slices(); n < 1 || n > TotalSlices {
			t.Fatalf("profile %q from %q has %d slices", p, name, n)
		}
		if parsed.String() != p {
			t.Fatalf("profile %q writes back as %q", p, parsed.String())
		}
		if strings.ContainsRune(p, ' ') {
			t.Fatalf("profile %q from %q has a space", p, name)
		}
	})
}

// FuzzParseProfile: profile names come from drivers, device plugins and
// scenario files. Any text parses to a profile that writes back as
// itself and is charged 1 to 7 slices, at most its GPU instance's, or
// gives an error naming the text; never a panic.
func FuzzParseProfile(f *testing.F) {
	for _, s := range []string{"3g.40gb", "1c.3g.40gb", "1g.10gb+me", "1g.10gb+me.all", "4c.3g.40gb", "0g.1gb", "9999g.9999gb", "+", "..", "1c..gb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProfile(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconvQuote(s)) {
				t.Fatalf("error %q does not name %q", err, s)
			}
			return
		}
		if p.String() != s {
			t.Fatalf("%q writes back as %q", s, p.String())
		}
		if n := p.Slices(); n < 1 || n > p.GPUSlices || p.GPUSlices > TotalSlices {
			t.Fatalf("%q: %d slices of a %d-slice GPU instance", s, n, p.GPUSlices)
		}
	})
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// TestNormaliseModel: NVML product names, GPU feature discovery's node
// label form and price book keys all come out as the catalogue's name.
func TestNormaliseModel(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA A100-SXM4-80GB":    "A100-SXM4-80GB",
		"NVIDIA H100 80GB HBM3":    "H100-80GB-HBM3",
		"NVIDIA-H100-80GB-HBM3":    "H100-80GB-HBM3",
		"  NVIDIA  H200  141GB ":   "H200-141GB",
		"Tesla T4":                 "Tesla-T4",
		"A100-SXM4-40GB":           "A100-SXM4-40GB",
		" NVIDIA L40S ":            "L40S",
		"NVIDIA GeForce  RTX 4090": "GeForce-RTX-4090",
		"A100 SXM4 80GB":           "A100-SXM4-80GB",
		" H100-SXM5-80GB ":         "H100-SXM5-80GB",
		"NVIDIA  L4":               "L4",
		"":                         "",
	} {
		if got := NormaliseModel(in); got != want {
			t.Errorf("NormaliseModel(%q) = %q, want %q", in, got, want)
		}
	}
}
