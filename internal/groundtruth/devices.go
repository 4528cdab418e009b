package groundtruth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// device is where a process runs or a slice lives: a whole GPU, or one MIG
// instance of it with its allocation weight.
type device struct {
	gpu      *scenario.GPU
	instance string  // MIG UUID, "" for the whole GPU
	weight   float64 // compute slices / 7 for an instance, 1 for a GPU
}

// deviceIndex resolves GPU and MIG UUIDs of one scenario, and GPUs by
// NVML minor number (GKE's device IDs name them so).
type deviceIndex struct {
	byUUID map[string]device
	// byMinor is nil for a minor two GPUs claim: IDs naming it are
	// ambiguous and resolve to nothing.
	byMinor map[int]*scenario.GPU
}

func indexDevices(sc *scenario.Scenario) (*deviceIndex, error) {
	idx := &deviceIndex{byUUID: make(map[string]device), byMinor: make(map[int]*scenario.GPU)}
	for gi := range sc.GPUs {
		g := &sc.GPUs[gi]
		if g.UUID == "" {
			return nil, fmt.Errorf("gpus[%d].uuid: empty", gi)
		}
		if _, dup := idx.byUUID[g.UUID]; dup {
			return nil, fmt.Errorf("gpus[%d].uuid: %q listed twice", gi, g.UUID)
		}
		idx.byUUID[g.UUID] = device{gpu: g, weight: 1}
		if _, dup := idx.byMinor[g.Minor]; dup {
			idx.byMinor[g.Minor] = nil
		} else {
			idx.byMinor[g.Minor] = g
		}
		for ii, in := range g.MIGInstances {
			w, err := migWeight(in.Profile)
			if err != nil {
				return nil, fmt.Errorf("gpus[%d].migInstances[%d].profile: %w", gi, ii, err)
			}
			if _, dup := idx.byUUID[in.UUID]; dup {
				return nil, fmt.Errorf("gpus[%d].migInstances[%d].uuid: %q listed twice", gi, ii, in.UUID)
			}
			idx.byUUID[in.UUID] = device{gpu: g, instance: in.UUID, weight: w}
		}
	}
	return idx, nil
}

// migWeight is the compute slices of a MIG profile over the seven slices
// of a whole GPU: the leading digit of "3g.40gb", and of a compute
// instance "1c.3g.40gb" its own compute slices, the "c" number (its
// GPU instance's other slices are nobody's).
func migWeight(profile string) (float64, error) {
	g, _, ok := strings.Cut(profile, "g.")
	if c, gi, isCI := strings.Cut(g, "c."); isCI {
		nc, errC := strconv.Atoi(c)
		ng, errG := strconv.Atoi(gi)
		if !ok || errC != nil || errG != nil || nc < 1 || nc > ng || ng > 7 {
			return 0, fmt.Errorf("MIG profile %q: want <c>c.<g>g.<memory> with 1 <= c <= g <= 7", profile)
		}
		return float64(nc) / 7, nil
	}
	n, err := strconv.Atoi(g)
	if !ok || err != nil || n < 1 || n > 7 {
		return 0, fmt.Errorf("MIG profile %q: want <1-7>g.<memory>", profile)
	}
	return float64(n) / 7, nil
}

// Slice kinds, from the form of the kubelet device ID.
const (
	sliceWhole     = iota // GPU-<uuid> or MIG-<uuid>
	sliceReplica          // <uuid>::<n>
	sliceHAMi             // GPU-<uuid>-<n>
	sliceGKE              // nvidia<minor> or nvidia<minor>/gi<id>
	sliceGKEShared        // nvidia<minor>[/gi<id>]/vgpu<k>
)

// slice is one device ID a container holds, resolved.
type slice struct {
	id   string
	dev  device
	kind int
}

// resolveSlice maps a kubelet device ID onto this scenario's devices. ok is
// false for IDs naming no device here; their capacity stays unallocated.
func (idx *deviceIndex) resolveSlice(id string) (slice, bool) {
	if base, n, found := strings.Cut(id, "::"); found {
		d, known := idx.byUUID[base]
		if !known || !isIndex(n) {
			return slice{}, false
		}
		return slice{id: id, dev: d, kind: sliceReplica}, true
	}
	if d, known := idx.byUUID[id]; known {
		return slice{id: id, dev: d, kind: sliceWhole}, true
	}
	if cut := strings.LastIndexByte(id, '-'); cut > 0 && isIndex(id[cut+1:]) {
		d, known := idx.byUUID[id[:cut]]
		if known && d.instance == "" {
			return slice{id: id, dev: d, kind: sliceHAMi}, true
		}
	}
	return idx.resolveGKE(id)
}

// resolveGKE maps GKE's device plugin IDs: nvidia<minor>, then optionally
// /gi<GPU-instance ID>, then optionally /vgpu<k>. The minor is NVML's, not
// the GPU's index, and the GI is what NVML reports, not a position.
func (idx *deviceIndex) resolveGKE(id string) (slice, bool) {
	parts := strings.Split(id, "/")
	minor, ok := strings.CutPrefix(parts[0], "nvidia")
	if !ok || !isIndex(minor) || len(parts) > 3 {
		return slice{}, false
	}
	n, _ := strconv.Atoi(minor)
	g := idx.byMinor[n]
	if g == nil {
		return slice{}, false
	}
	d := idx.byUUID[g.UUID]
	rest := parts[1:]
	if len(rest) > 0 {
		if gi, isGI := strings.CutPrefix(rest[0], "gi"); isGI {
			in, found := instanceByGI(g, gi)
			if !found {
				return slice{}, false
			}
			d, rest = idx.byUUID[in], rest[1:]
		}
	}
	if g.Mode == scenario.ModeMIG && d.instance == "" {
		return slice{}, false // a MIG-enabled GPU is handed out only by instance
	}
	switch {
	case len(rest) == 0:
		return slice{id: id, dev: d, kind: sliceGKE}, true
	case len(rest) == 1 && strings.HasPrefix(rest[0], "vgpu") && isIndex(rest[0][len("vgpu"):]):
		return slice{id: id, dev: d, kind: sliceGKEShared}, true
	}
	return slice{}, false
}

func instanceByGI(g *scenario.GPU, gi string) (string, bool) {
	if !isIndex(gi) {
		return "", false
	}
	n, _ := strconv.Atoi(gi)
	for _, in := range g.MIGInstances {
		if in.GI == n {
			return in.UUID, true
		}
	}
	return "", false
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && strconv.Itoa(n) == s
}
