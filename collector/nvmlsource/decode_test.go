package nvmlsource

import (
	"math"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestDecodeSampleValue(t *testing.T) {
	tests := []struct {
		name string
		vt   nvml.ValueType
		raw  [8]byte
		want float64
	}{
		// 37.5 is 0x4042C00000000000.
		{"double", nvml.VALUE_TYPE_DOUBLE, [8]byte{0, 0, 0, 0, 0, 0xC0, 0x42, 0x40}, 37.5},
		// Only the low 4 bytes belong to an unsigned int.
		{"uint", nvml.VALUE_TYPE_UNSIGNED_INT, [8]byte{42, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 42},
		{"uint max", nvml.VALUE_TYPE_UNSIGNED_INT, [8]byte{0xff, 0xff, 0xff, 0xff}, 4294967295},
		{"ulong", nvml.VALUE_TYPE_UNSIGNED_LONG, [8]byte{0, 0, 0, 0, 1}, 4294967296},
		{"ulonglong", nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, [8]byte{0x10, 0x27}, 10000},
		{"slonglong", nvml.VALUE_TYPE_SIGNED_LONG_LONG, [8]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, -2},
		{"sint", nvml.VALUE_TYPE_SIGNED_INT, [8]byte{0xff, 0xff, 0xff, 0xff, 7, 7, 7, 7}, -1},
		{"ushort", nvml.VALUE_TYPE_UNSIGNED_SHORT, [8]byte{0x34, 0x12, 0xff, 0xff}, 4660},
	}
	for _, tt := range tests {
		got, err := decodeSampleValue(tt.vt, tt.raw)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestDecodeSampleValueRejects(t *testing.T) {
	nan := [8]byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f} // 0x7FF8000000000001
	inf := [8]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f} // +Inf
	for name, c := range map[string]struct {
		vt  nvml.ValueType
		raw [8]byte
	}{
		"unknown type":  {nvml.VALUE_TYPE_COUNT, [8]byte{1}},
		"negative type": {-1, [8]byte{1}},
		"NaN":           {nvml.VALUE_TYPE_DOUBLE, nan},
		"Inf":           {nvml.VALUE_TYPE_DOUBLE, inf},
	} {
		if v, err := decodeSampleValue(c.vt, c.raw); err == nil {
			t.Errorf("%s: got %v and no error", name, v)
		}
	}
}

func FuzzDecodeSampleValue(f *testing.F) {
	f.Add(int32(0), uint64(0x4042C00000000000))
	f.Add(int32(1), uint64(42))
	f.Add(int32(5), uint64(0xffffffff))
	f.Add(int32(7), uint64(1))
	f.Fuzz(func(t *testing.T, vt int32, bits uint64) {
		var raw [8]byte
		for i := range raw {
			raw[i] = byte(bits >> (8 * i))
		}
		v, err := decodeSampleValue(nvml.ValueType(vt), raw)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("type %d bits %#x decoded to %v", vt, bits, v)
		}
		if vt < int32(nvml.VALUE_TYPE_DOUBLE) || vt >= int32(nvml.VALUE_TYPE_COUNT) {
			t.Fatalf("unknown type %d accepted", vt)
		}
	})
}
