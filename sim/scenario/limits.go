package scenario

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// maxLimits bounds a container's limits map.
const maxLimits = 32

// limits checks a container's extended-resource limits: names with a '/'
// (nvidia.com/gpucores), values decimal integers from 0 to 2^31-1, at
// most maxLimits of them. Nil stays nil (not given); an empty map says
// the container sets none.
func (c *converter) limits(path string, raw map[string]string) map[string]string {
	if raw == nil {
		return nil
	}
	if len(raw) > maxLimits {
		c.p.addf(path, "has %d entries, at most %d allowed", len(raw), maxLimits)
		return nil
	}
	out := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := strings.TrimSpace(raw[k])
		if !strings.Contains(k, "/") || len(k) > 253 {
			c.p.addf(field(path, k), "is not an extended resource name such as nvidia.com/gpucores")
			continue
		}
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			c.p.addf(field(path, k), "%q is not a whole number from 0 to 2147483647", short(raw[k]))
			continue
		}
		out[k] = strconv.FormatUint(n, 10)
	}
	return out
}

// short is v cut to 64 bytes for an error message.
func short(v string) string {
	if len(v) > 64 {
		return v[:64] + "..."
	}
	return v
}
