package attribution

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseHAMiAnnotation(t *testing.T) {
	a := "GPU-" + tu
	tests := []struct {
		in   string
		want [][]HAMiDevice
	}{
		{a + ",NVIDIA,20000,25:;", [][]HAMiDevice{{{a, "NVIDIA", 20000, 25}}}},
		{a + ",NVIDIA,20000,25", [][]HAMiDevice{{{a, "NVIDIA", 20000, 25}}}},
		{a + ",NVIDIA,1,0:" + a + ",NVIDIA,2,100:;", [][]HAMiDevice{{{a, "NVIDIA", 1, 0}, {a, "NVIDIA", 2, 100}}}},
		// A container without devices keeps its place.
		{";" + a + ",NVIDIA,3,30:;", [][]HAMiDevice{nil, {{a, "NVIDIA", 3, 30}}}},
		{a + ",NVIDIA,3,30:;;", [][]HAMiDevice{{{a, "NVIDIA", 3, 30}}, nil}},
		{"", [][]HAMiDevice{}},
		{";", [][]HAMiDevice{nil}},
		{" " + a + " , NVIDIA , 5 , 7 :;", [][]HAMiDevice{{{a, "NVIDIA", 5, 7}}}},
	}
	for _, tt := range tests {
		got, err := ParseHAMiAnnotation(tt.in)
		if err != nil {
			t.Errorf("ParseHAMiAnnotation(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseHAMiAnnotation(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestParseHAMiAnnotationErrors(t *testing.T) {
	a := "GPU-" + tu
	for _, tt := range []struct{ in, part string }{
		{a + ",NVIDIA,20000:;", a + ",NVIDIA,20000"},
		{a + ",NVIDIA,x,25:;", a + ",NVIDIA,x,25"},
		{a + ",NVIDIA,-1,25:;", a + ",NVIDIA,-1,25"},
		{a + ",NVIDIA,1,101:;", a + ",NVIDIA,1,101"},
		{a + ",NVIDIA,1,-5:;", a + ",NVIDIA,1,-5"},
		{",NVIDIA,1,5:;", ",NVIDIA,1,5"},
		{a + ",,1,5:;", a + ",,1,5"},
		{a + ",NVIDIA,1,5:;garbage", "garbage"},
		{a + ",NVIDIA,1,5,9:;", a + ",NVIDIA,1,5,9"},
	} {
		_, err := ParseHAMiAnnotation(tt.in)
		if err == nil {
			t.Errorf("ParseHAMiAnnotation(%q) succeeded, want an error", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), strconv.Quote(tt.part)) {
			t.Errorf("error %q does not name the part %q", err, tt.part)
		}
	}
}

// formatHAMi writes parts back in HAMi's own encoding.
func formatHAMi(parts [][]HAMiDevice) string {
	var b strings.Builder
	for _, p := range parts {
		for _, d := range p {
			b.WriteString(d.UUID + "," + d.Vendor + "," + strconv.FormatUint(d.MemoryMiB, 10) + "," + strconv.Itoa(d.Cores) + ":")
		}
		b.WriteString(";")
	}
	return b.String()
}

func FuzzParseHAMiAnnotation(f *testing.F) {
	for _, s := range []string{
		"GPU-" + tu + ",NVIDIA,20000,25:;", "GPU-" + tu + ",NVIDIA,1,0:GPU-x,NVIDIA,2,100:;;",
		";", "", ":::;;;", "a,b,c,d", "a,b,1,2;x", ",,,:;",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := ParseHAMiAnnotation(s)
		if err != nil {
			if parts != nil {
				t.Fatalf("error with a result")
			}
			return
		}
		for _, p := range parts {
			for _, d := range p {
				if d.UUID == "" || d.Vendor == "" || d.Cores < 0 || d.Cores > 100 {
					t.Fatalf("accepted bad device %+v from %q", d, s)
				}
			}
		}
		again, err := ParseHAMiAnnotation(formatHAMi(parts))
		if err != nil {
			t.Fatalf("cannot reparse %q (from %q): %v", formatHAMi(parts), s, err)
		}
		if len(again) != len(parts) {
			t.Fatalf("reparse has %d parts, want %d", len(again), len(parts))
		}
		for i := range parts {
			if len(again[i]) != len(parts[i]) || (len(parts[i]) > 0 && !reflect.DeepEqual(again[i], parts[i])) {
				t.Fatalf("part %d: %+v != %+v", i, again[i], parts[i])
			}
		}
	})
}

func TestResolveTeam(t *testing.T) {
	ns := map[string]string{"team": "search", "owner": "x"}
	pod := map[string]string{"team": "ads", "owner": "y"}
	tests := []struct {
		ns, pod   map[string]string
		key, want string
	}{
		{ns, pod, "", "search"},
		{ns, pod, "team", "search"},
		{ns, pod, "owner", "x"},
		{nil, pod, "", "ads"},
		{map[string]string{"team": ""}, pod, "", "ads"},
		{nil, nil, "", "the-ns"},
		{ns, pod, "cost-center", "the-ns"},
	}
	for _, tt := range tests {
		if got := ResolveTeam(tt.ns, tt.pod, "the-ns", tt.key); got != tt.want {
			t.Errorf("ResolveTeam(%v, %v, key %q) = %q, want %q", tt.ns, tt.pod, tt.key, got, tt.want)
		}
	}
}

func TestNormaliseModel(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA A100-SXM4-80GB":  "A100-SXM4-80GB",
		"NVIDIA H100 80GB HBM3":  "H100-80GB-HBM3",
		"NVIDIA-H100-80GB-HBM3":  "H100-80GB-HBM3",
		"  NVIDIA  H200  141GB ": "H200-141GB",
		"Tesla T4":               "Tesla-T4",
		"A100-SXM4-40GB":         "A100-SXM4-40GB",
		"":                       "",
	} {
		if got := NormaliseModel(in); got != want {
			t.Errorf("NormaliseModel(%q) = %q, want %q", in, got, want)
		}
	}
}
