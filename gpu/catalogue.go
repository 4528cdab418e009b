package gpu

import (
	"fmt"
	"slices"
	"strings"
)

// MIGProfile is one GPU-instance profile a model supports.
type MIGProfile struct {
	Name      string
	Slices    int    // compute slices out of TotalSlices
	MemoryMiB uint64 // framebuffer of an instance of this profile
}

// model describes one catalogued GPU model. profiles lists the names for
// the seven profile shapes NVIDIA defines on these GPUs, in shapeEighths
// order.
type model struct {
	memoryMiB uint64
	profiles  [7]string
}

// shapeEighths is the memory fraction (in eighths of the GPU) of each
// profile shape: 1g, 1g+me, 1g with two memory slices, 2g, 3g, 4g, 7g.
// Instance memory is derived from it rather than from the GB in the name,
// so instances never add up to more than the GPU has (the names round,
// e.g. 7g.141gb).
var shapeEighths = [7]uint64{1, 1, 2, 2, 4, 4, 8}

// models is the catalogue. memoryMiB is what NVML reports for the whole
// GPU, which the collector's devices hold and a memory-weighted price
// divides by.
var models = map[string]model{
	"A100-SXM4-40GB": {40960, [7]string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
	"A100-SXM4-80GB": {81920, [7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	"H100-SXM5-80GB": {81920, [7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	"H200-141GB":     {143771, [7]string{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
}

// Models lists the catalogued model names, sorted.
func Models() []string {
	out := make([]string, 0, len(models))
	for m := range models {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// ModelNames is Models joined with "|", for error messages.
func ModelNames() string { return strings.Join(Models(), "|") }

// KnownModel reports whether the catalogue has the model.
func KnownModel(name string) bool {
	_, ok := models[name]
	return ok
}

// MIGProfiles lists the GPU-instance profiles of a catalogued model, in
// the order of NVIDIA's profile shapes (1g, 1g+me, 1g with two memory
// slices, 2g, 3g, 4g, 7g).
func MIGProfiles(modelName string) ([]MIGProfile, error) {
	md, ok := models[modelName]
	if !ok {
		return nil, fmt.Errorf("model %q is not one of %s", modelName, ModelNames())
	}
	out := make([]MIGProfile, len(md.profiles))
	for i, name := range md.profiles {
		slices, err := ProfileSlices(name)
		if err != nil {
			return nil, fmt.Errorf("cannot build profile table of %s: %w", modelName, err)
		}
		out[i] = MIGProfile{Name: name, Slices: slices, MemoryMiB: md.memoryMiB * shapeEighths[i] / 8}
	}
	return out, nil
}

// ModelMemoryMiB is the framebuffer size of a catalogued model.
func ModelMemoryMiB(modelName string) (uint64, error) {
	md, ok := models[modelName]
	if !ok {
		return 0, fmt.Errorf("model %q is not one of %s", modelName, ModelNames())
	}
	return md.memoryMiB, nil
}

// LookupProfile finds a GPU-instance profile of a model by name.
// Compute-instance profiles are not in the catalogue: look up their
// GPUInstance.
func LookupProfile(modelName, profile string) (MIGProfile, bool) {
	profiles, err := MIGProfiles(modelName)
	if err != nil {
		return MIGProfile{}, false
	}
	for _, p := range profiles {
		if p.Name == profile {
			return p, true
		}
	}
	return MIGProfile{}, false
}
