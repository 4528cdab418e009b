package nvmlsource

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// decodeSampleValue reads NVML's nvmlValue_t union, which go-nvml hands
// over as raw bytes, according to the value type GetSamples reported. The
// union is in host byte order; NVML runs on little-endian hosts only.
// unsigned long is 8 bytes on the LP64 Linux hosts NVML supports.
func decodeSampleValue(vt nvml.ValueType, raw [8]byte) (float64, error) {
	le := binary.LittleEndian
	switch vt {
	case nvml.VALUE_TYPE_DOUBLE:
		v := math.Float64frombits(le.Uint64(raw[:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("sample value %v is not a number", v)
		}
		return v, nil
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(le.Uint32(raw[:4])), nil
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(le.Uint64(raw[:])), nil
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(le.Uint64(raw[:]))), nil
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(le.Uint32(raw[:4]))), nil
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(le.Uint16(raw[:2])), nil
	default:
		return 0, fmt.Errorf("unknown sample value type %d", vt)
	}
}
