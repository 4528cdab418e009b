package nvmlsource

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// migProfile tells a MIG device's profile and compute slices, preferring
// the profile in its name ("NVIDIA A100-SXM4-80GB MIG 3g.40gb") and the
// slice count in its attributes, each standing in for the other when
// missing.
func migProfile(name string, attrs nvml.DeviceAttributes, attrsOK bool, totalBytes uint64) (profile string, slices int) {
	profile = profileFromName(name)
	if attrsOK && attrs.GpuInstanceSliceCount > 0 {
		slices = int(attrs.GpuInstanceSliceCount)
	} else {
		slices = slicesFromProfile(profile)
	}
	if profile == "" && attrsOK && slices > 0 && attrs.MemorySizeMB > 0 {
		profile = fmt.Sprintf("%dg.%dgb", slices, migMemoryGB(attrs.MemorySizeMB, totalBytes))
	}
	return profile, slices
}

// profileFromName returns the profile after the last " MIG " of a MIG
// device name, or "" when there is none or it does not look like one.
func profileFromName(name string) string {
	const marker = "MIG "
	i := strings.LastIndex(name, marker)
	if i < 0 || (i > 0 && name[i-1] != ' ') {
		return ""
	}
	rest := strings.TrimSpace(name[i+len(marker):])
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	if !validProfile(rest) {
		return ""
	}
	return rest
}

// validProfile accepts "<g>g.<m>gb", "<c>c.<g>g.<m>gb" and either with
// "+<extension>" suffixes such as "+me".
func validProfile(p string) bool {
	base, _, _ := strings.Cut(p, "+")
	i := strings.LastIndexByte(base, '.')
	if i < 0 || !numberWithUnit(base[i+1:], "gb") {
		return false
	}
	gi := base[:i]
	if c, g, ok := strings.Cut(gi, "."); ok {
		return numberWithUnit(c, "c") && numberWithUnit(g, "g")
	}
	return numberWithUnit(gi, "g")
}

// slicesFromProfile returns the GPU instance slices of a profile name:
// 3 for "3g.40gb" and "1c.3g.40gb", 0 when it cannot tell.
func slicesFromProfile(p string) int {
	if p == "" {
		return 0
	}
	base, _, _ := strings.Cut(p, "+")
	for part := range strings.SplitSeq(base, ".") {
		if numberWithUnit(part, "g") {
			n, err := strconv.Atoi(strings.TrimSuffix(part, "g"))
			if err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// numberWithUnit reports whether s is a positive decimal number followed
// by unit.
func numberWithUnit(s, unit string) bool {
	digits, ok := strings.CutSuffix(s, unit)
	if !ok || digits == "" || len(digits) > 4 {
		return false
	}
	positive := false
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
		positive = positive || c != '0'
	}
	return positive
}

// migMemoryGB rounds a MIG instance's memory to the GB of its profile name
// the way NVIDIA's device plugin does: the fraction of the GPU's memory,
// rounded up to eighths, times the GPU's memory in whole GB. So 40192 MB
// on an 80 GB A100 is "40gb", not 39.
func migMemoryGB(instanceMB, totalBytes uint64) uint64 {
	const gib = 1 << 30
	if totalBytes == 0 {
		return (instanceMB + 1023) / 1024
	}
	fraction := float64(instanceMB<<20) / float64(totalBytes)
	fraction = math.Ceil(fraction*8) / 8
	totalGB := float64((totalBytes + gib - 1) / gib)
	return uint64(math.Round(fraction * totalGB))
}
