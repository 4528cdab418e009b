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

// Annotations exactly as HAMi's encoder writes them (Project-HAMi/HAMi
// pkg/util/util.go: EncodeContainerDevices ends every device with ':',
// EncodePodSingleDevice every container with ';'; docs/develop/protocol.md
// shows "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,0:;..."), and
// how many entries each has: a container without GPUs is an empty entry,
// also at the end.
func TestParseHAMiAnnotationEntryCounts(t *testing.T) {
	const real = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448"
	a, b := "GPU-"+tu, gpuID(2)
	tests := []struct {
		in      string
		entries int
		devs    []int // devices per entry
	}{
		{real + ",NVIDIA,3000,0:;" + real + ",NVIDIA,5000,0:;", 2, []int{1, 1}},
		{a + ",NVIDIA,2000,50:;", 1, []int{1}},
		{a + ",NVIDIA,1000,30:" + b + ",NVIDIA,1000,30:;", 1, []int{2}},
		// Two init containers without GPUs, then one with (HAMi 2.9+).
		{";;" + a + ",NVIDIA,2000,50:;", 3, []int{0, 0, 1}},
		// Containers without GPUs after the last one that has some.
		{a + ",NVIDIA,2000,50:;;;", 3, []int{1, 0, 0}},
		{";" + a + ",NVIDIA,2000,50:;;", 3, []int{0, 1, 0}},
		{";;", 2, []int{0, 0}},
	}
	for _, tt := range tests {
		got, err := ParseHAMiAnnotation(tt.in)
		if err != nil {
			t.Errorf("ParseHAMiAnnotation(%q): %v", tt.in, err)
			continue
		}
		if len(got) != tt.entries {
			t.Errorf("ParseHAMiAnnotation(%q): %d entries, want %d", tt.in, len(got), tt.entries)
			continue
		}
		for i, n := range tt.devs {
			if len(got[i]) != n {
				t.Errorf("ParseHAMiAnnotation(%q) entry %d: %d devices, want %d", tt.in, i, len(got[i]), n)
			}
		}
	}
}

func TestHAMiEntryIndex(t *testing.T) {
	tests := []struct {
		n, nInit, nCtr, ci int
		idx                int
		ok                 bool
	}{
		{3, 2, 1, 2, 2, true},   // 2.9+: the container after two init ones
		{3, 2, 1, 0, 0, true},   // 2.9+: the first init container
		{1, 2, 1, 2, 0, true},   // older HAMi: regular containers only
		{1, 2, 1, 1, -1, true},  // older HAMi: an init container has no entry
		{2, 0, 2, 1, 1, true},   // no init containers: both forms agree
		{2, 2, 1, 2, -1, false}, // fits neither form
		{4, 2, 1, 2, -1, false},
		{0, 0, 1, 0, -1, false},
	}
	for _, tt := range tests {
		idx, ok := hamiEntryIndex(tt.n, tt.nInit, tt.nCtr, tt.ci)
		if idx != tt.idx || ok != tt.ok {
			t.Errorf("hamiEntryIndex(%d, %d, %d, %d) = %d, %v, want %d, %v", tt.n, tt.nInit, tt.nCtr, tt.ci, idx, ok, tt.idx, tt.ok)
		}
	}
}
