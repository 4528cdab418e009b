// Package gpu is the catalogue of the GPU models gpuledger knows and of
// their MIG profiles, and the one parser of MIG profile names
// ("3g.40gb", "1g.10gb+me", "1c.3g.40gb") that the collector, attribution,
// the simulator, the advisor and the price book share, so a profile is
// charged the same whichever of them reads it. Standard library only: it
// sits below every other package.
package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// TotalSlices is the number of compute slices of every MIG-capable GPU
// in the catalogue.
const TotalSlices = 7

// Profile is a parsed MIG profile name.
//
// A plain profile "<g>g.<m>gb" is a GPU instance with a compute instance
// spanning all of it. A compute-instance profile "<c>c.<g>g.<m>gb" is one
// compute instance of c slices inside a GPU instance of g: the GPU
// instance's memory is shared by its compute instances, each of which is
// a MIG device of its own (its own UUID). Extensions ("+me") follow the
// memory.
type Profile struct {
	Compute    int    // c of "<c>c.": compute slices; 0 when the name has none
	GPUSlices  int    // g of "<g>g.": slices of the GPU instance
	MemoryGB   int    // m of "<m>gb", as the name rounds it
	Extensions string // what follows the first "+", "" when none
}

// maxNumber bounds every number in a profile name (4 digits), so a
// hostile name cannot overflow anything.
const maxNumber = 9999

// ParseProfile parses a MIG profile name. The GPU instance has 1 to 7
// slices; a compute instance 1 to its GPU instance's; memory is positive.
func ParseProfile(name string) (Profile, error) {
	base, ext, hasExt := strings.Cut(name, "+")
	if hasExt && !validExtensions(ext) {
		return Profile{}, fmt.Errorf("MIG profile %q: extension %q is not lower-case letters, dots and pluses", name, ext)
	}
	parts := strings.Split(base, ".")
	var p Profile
	p.Extensions = ext
	var ok bool
	switch len(parts) {
	case 2:
		p.GPUSlices, ok = numberWithUnit(parts[0], "g")
	case 3:
		var okC bool
		p.Compute, okC = numberWithUnit(parts[0], "c")
		p.GPUSlices, ok = numberWithUnit(parts[1], "g")
		ok = ok && okC
	}
	if !ok {
		return Profile{}, fmt.Errorf("MIG profile %q: want <g>g.<memory>gb or <c>c.<g>g.<memory>gb", name)
	}
	if p.MemoryGB, ok = numberWithUnit(parts[len(parts)-1], "gb"); !ok {
		return Profile{}, fmt.Errorf("MIG profile %q: memory %q is not <n>gb", name, parts[len(parts)-1])
	}
	if p.GPUSlices > TotalSlices {
		return Profile{}, fmt.Errorf("MIG profile %q: %d slices, a GPU has %d", name, p.GPUSlices, TotalSlices)
	}
	if p.Compute > p.GPUSlices {
		return Profile{}, fmt.Errorf("MIG profile %q: %d compute slices in a GPU instance of %d", name, p.Compute, p.GPUSlices)
	}
	return p, nil
}

// Slices is what the profile's MIG device is charged, in sevenths of the
// GPU: its compute slices. A compute-instance profile counts its own c,
// not its GPU instance's g: every compute instance of a GPU instance is a
// MIG device of its own, so charging each g would bill the GPU instance
// once per compute instance (three 1c.3g.40gb of one 3g GPU instance
// would add up to 9/7 of the GPU).
func (p Profile) Slices() int {
	if p.Compute > 0 {
		return p.Compute
	}
	return p.GPUSlices
}

// GPUInstance is the profile of the GPU instance a compute instance lives
// in ("3g.40gb" for "1c.3g.40gb"); a plain profile is its own.
func (p Profile) GPUInstance() Profile {
	p.Compute = 0
	return p
}

// Weight is Slices over TotalSlices.
func (p Profile) Weight() float64 { return float64(p.Slices()) / TotalSlices }

// String writes the profile back as NVIDIA names it.
func (p Profile) String() string {
	s := strconv.Itoa(p.GPUSlices) + "g." + strconv.Itoa(p.MemoryGB) + "gb"
	if p.Compute > 0 {
		s = strconv.Itoa(p.Compute) + "c." + s
	}
	if p.Extensions != "" {
		s += "+" + p.Extensions
	}
	return s
}

// ProfileSlices is ParseProfile(name).Slices().
func ProfileSlices(name string) (int, error) {
	p, err := ParseProfile(name)
	if err != nil {
		return 0, err
	}
	return p.Slices(), nil
}

// ProfileFromDeviceName returns the profile after the last " MIG " of an
// NVML MIG device name ("NVIDIA A100-SXM4-80GB MIG 3g.40gb"), or "" when
// there is none or it does not parse.
func ProfileFromDeviceName(name string) string {
	const marker = "MIG "
	i := strings.LastIndex(name, marker)
	if i < 0 || (i > 0 && name[i-1] != ' ') {
		return ""
	}
	rest := strings.TrimSpace(name[i+len(marker):])
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	if _, err := ParseProfile(rest); err != nil {
		return ""
	}
	return rest
}

// numberWithUnit reads a positive decimal number of at most four digits,
// without leading zeros (NVIDIA writes none, and a name must read back as
// itself), followed by unit.
func numberWithUnit(s, unit string) (int, bool) {
	digits, ok := strings.CutSuffix(s, unit)
	if !ok || digits == "" || len(digits) > 4 || digits[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n > 0 && n <= maxNumber
}

// validExtensions accepts "me", "me.all", "me+gfx": lower-case letters,
// dots and pluses, not empty, at most 32 bytes.
func validExtensions(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && c != '.' && c != '+' {
			return false
		}
	}
	return true
}

// NormaliseModel turns an NVML product name into the model string the
// ledger and the catalogue use: "NVIDIA A100-SXM4-80GB" -> "A100-SXM4-80GB".
// The vendor prefix is dropped (also the "NVIDIA-" form GPU feature
// discovery writes into node labels) and runs of whitespace become a
// single "-", so names from NVML, node labels and price books compare
// equal.
func NormaliseModel(productName string) string {
	s := strings.TrimSpace(productName)
	for _, p := range []string{"NVIDIA ", "NVIDIA-", "nvidia ", "nvidia-"} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	return strings.Join(strings.Fields(s), "-")
}
