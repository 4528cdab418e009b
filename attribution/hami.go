package attribution

import (
	"fmt"
	"strconv"
	"strings"
)

// HAMiAnnotation is the pod annotation in which HAMi's scheduler records
// the virtual devices it gave each container.
const HAMiAnnotation = "hami.io/vgpu-devices-allocated"

// HAMiDevice is one virtual device of one container in HAMi's annotation.
type HAMiDevice struct {
	UUID      string // GPU-<uuid> of the physical GPU
	Vendor    string // e.g. NVIDIA
	MemoryMiB uint64 // device memory granted
	Cores     int    // percent of the GPU's compute granted; 0: not limited
}

// ParseHAMiAnnotation parses hami.io/vgpu-devices-allocated:
// "UUID,NVIDIA,<memMiB>,<cores>:" per device and ";" after each container,
// containers in pod spec order (HAMi 2.9+: init containers first; which
// container reads which entry is hamiEntryIndex's job). The result has one
// entry per container part, empty for a container without devices:
// ";;X:;" has three entries, "X:;;" two.
// A trailing ':' or ';' and empty parts are tolerated; anything else that
// is not four well-formed fields is an error naming the part.
func ParseHAMiAnnotation(s string) ([][]HAMiDevice, error) {
	parts := strings.Split(s, ";")
	// HAMi ends every container with ';', so the last part is empty.
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([][]HAMiDevice, 0, len(parts))
	for ci, part := range parts {
		devs, err := parseHAMiContainer(part)
		if err != nil {
			return nil, fmt.Errorf("cannot parse HAMi annotation container %d %q: %w", ci, part, err)
		}
		out = append(out, devs)
	}
	return out, nil
}

func parseHAMiContainer(part string) ([]HAMiDevice, error) {
	var devs []HAMiDevice
	for di, d := range strings.Split(part, ":") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		dev, err := parseHAMiDevice(d)
		if err != nil {
			return nil, fmt.Errorf("device %d %q: %w", di, d, err)
		}
		devs = append(devs, dev)
	}
	return devs, nil
}

func parseHAMiDevice(d string) (HAMiDevice, error) {
	f := strings.Split(d, ",")
	if len(f) != 4 {
		return HAMiDevice{}, fmt.Errorf("want 4 fields UUID,vendor,memMiB,cores, got %d", len(f))
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if f[0] == "" {
		return HAMiDevice{}, fmt.Errorf("empty UUID")
	}
	if f[1] == "" {
		return HAMiDevice{}, fmt.Errorf("empty vendor")
	}
	mem, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return HAMiDevice{}, fmt.Errorf("memory %q is not a number of MiB", f[2])
	}
	cores, err := strconv.Atoi(f[3])
	if err != nil || cores < 0 || cores > 100 {
		return HAMiDevice{}, fmt.Errorf("cores %q is not a percentage 0..100", f[3])
	}
	return HAMiDevice{UUID: f[0], Vendor: f[1], MemoryMiB: mem, Cores: cores}, nil
}
