package groundtruth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/collector/scenario"
)

// device is where a process runs or a slice lives: a whole GPU, or one MIG
// instance of it with its allocation weight.
type device struct {
	gpu      *scenario.GPU
	instance string  // MIG UUID, "" for the whole GPU
	weight   float64 // compute slices / 7 for an instance, 1 for a GPU
}

// deviceIndex resolves GPU and MIG UUIDs of one scenario.
type deviceIndex struct {
	byUUID map[string]device
}

func indexDevices(sc *scenario.Scenario) (*deviceIndex, error) {
	idx := &deviceIndex{byUUID: make(map[string]device)}
	for gi := range sc.GPUs {
		g := &sc.GPUs[gi]
		if g.UUID == "" {
			return nil, fmt.Errorf("gpus[%d].uuid: empty", gi)
		}
		if _, dup := idx.byUUID[g.UUID]; dup {
			return nil, fmt.Errorf("gpus[%d].uuid: %q listed twice", gi, g.UUID)
		}
		idx.byUUID[g.UUID] = device{gpu: g, weight: 1}
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

// migWeight is the compute slices of a MIG profile (its leading digit, as in
// "3g.40gb") over the seven slices of a whole GPU.
func migWeight(profile string) (float64, error) {
	g, _, ok := strings.Cut(profile, "g.")
	n, err := strconv.Atoi(g)
	if !ok || err != nil || n < 1 || n > 7 {
		return 0, fmt.Errorf("MIG profile %q: want <1-7>g.<memory>", profile)
	}
	return float64(n) / 7, nil
}

// Slice kinds, from the form of the kubelet device ID.
const (
	sliceWhole   = iota // GPU-<uuid> or MIG-<uuid>
	sliceReplica        // <uuid>::<n>
	sliceHAMi           // GPU-<uuid>-<n>
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
	return slice{}, false
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && strconv.Itoa(n) == s
}
