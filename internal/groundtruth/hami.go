package groundtruth

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

const annotHAMi = "hami.io/vgpu-devices-allocated"

// deviceMemoryMiB is what NVML reports as total memory per model; HAMi
// memory-only shares are fractions of it.
var deviceMemoryMiB = map[string]float64{
	"A100-SXM4-40GB": 40960,
	"A100-SXM4-80GB": 81920,
	"H100-SXM5-80GB": 81920,
	"H200-141GB":     143771,
}

// hamiEntry is one device of a container's entry in the HAMi annotation.
type hamiEntry struct {
	uuid          string
	memMiB, cores float64
}

// parseHAMi splits hami.io/vgpu-devices-allocated into per-container
// entries, each ended by ";" (so a trailing empty part is no entry), each a
// list of "UUID,NVIDIA,<memMiB>,<cores>" devices (":") in the order
// written. Malformed devices are skipped: the pipeline must not trust
// them either.
func parseHAMi(annotation string) [][]hamiEntry {
	raw := strings.Split(annotation, ";")
	if len(raw) > 1 && strings.TrimSpace(raw[len(raw)-1]) == "" {
		raw = raw[:len(raw)-1]
	}
	parts := make([][]hamiEntry, 0, len(raw))
	for _, part := range raw {
		var entries []hamiEntry
		for dev := range strings.SplitSeq(part, ":") {
			f := strings.Split(strings.TrimSpace(dev), ",")
			if len(f) != 4 {
				continue
			}
			mem, errM := strconv.ParseFloat(f[2], 64)
			cores, errC := strconv.ParseFloat(f[3], 64)
			if errM != nil || errC != nil || mem < 0 || cores < 0 || cores > 100 {
				continue
			}
			entries = append(entries, hamiEntry{uuid: f[0], memMiB: mem, cores: cores})
		}
		parts = append(parts, entries)
	}
	return parts
}

// hamiEntryIndex is which entry of an annotation with n entries belongs to
// container k of pod p, or -1. HAMi 2.9+ writes one entry per container in
// spec order, init containers first; older HAMi one per regular container
// only. The count tells them apart; a count that fits neither form
// belongs to no container (the annotation cannot be read).
func hamiEntryIndex(p *scenario.Pod, n int, k ctr) int {
	inits, regular := len(p.InitContainers), len(p.Containers)
	switch {
	case n == inits+regular && k.init:
		return k.pos
	case n == inits+regular:
		return inits + k.pos
	case n == regular && !k.init:
		return k.pos
	}
	return -1
}

// annotationAt is the pod's annotation key as it stands at offset t: the
// spec's value with every change made at or before t applied in order.
func annotationAt(p *scenario.Pod, key string, t time.Duration) (string, bool) {
	v, ok := p.Annotations[key]
	changes := slices.Clone(p.AnnotationChanges)
	slices.SortStableFunc(changes, func(a, b scenario.AnnotationChange) int { return cmp.Compare(a.At, b.At) })
	for _, ch := range changes {
		if ch.At > t {
			break
		}
		if nv, set := ch.Annotations[key]; set {
			v, ok = nv, true
		}
	}
	return v, ok
}

// hamiHoldings are the GPUs container k holds through HAMi. The value in
// force is the annotation as it stood when the container started (the
// first value observed while it runs; later edits move no cost), and the
// annotation, not kubelet's GPU-<uuid>-<n> IDs, names the GPUs: those IDs
// may name other GPUs and only say that the container holds HAMi devices.
// A GPU the entry names that is not on this node holds nothing (its share
// stays unallocated). Only where the container has no entry with devices
// is it charged as kubelet says, one virtual device (1/N) per ID, as an
// estimate.
func hamiHoldings(idx *deviceIndex, p *scenario.Pod, k ctr, kubelet []slice, hamiN map[string]int) (_ []holding, byAnnotation bool) {
	value, _ := annotationAt(p, annotHAMi, k.win.start)
	parts := parseHAMi(value)
	if i := hamiEntryIndex(p, len(parts), k); i >= 0 && len(parts[i]) > 0 {
		return entryHoldings(idx, parts[i], k.c.Limits, kubelet), true
	}
	var out []holding
	for _, s := range kubelet {
		n := float64(max(1, hamiN[s.dev.gpu.UUID]))
		out = append(out, holding{dev: s.dev, share: 1 / n, mode: scenario.ModeHAMi, hami: true, estimated: true})
	}
	return out, false
}

// entryHoldings charges each GPU an entry names once, on the GPU it names.
// Where the scenario gives the container's limits (the pod spec, which a
// tenant cannot edit) they decide the share, with HAMi's defaults where
// they are silent; else the annotation does: cores/100, or the memory's
// share of the GPU's (at most all of it) when cores is 0. A holding the
// annotation cannot vouch for (it disagrees with the limits, gives no
// share at all, or names its GPU twice) is an estimate, and floored: the
// container pays at least the framebuffer its processes hold there. Such
// a holding, and one without a core limit, pays at least the container's
// use of the GPU too (useFloors). A device naming a GPU this node does not
// have (a MIG instance's UUID included) is a ghost: HAMi gave the
// container a vGPU of this node, so it is charged, as an estimate and
// floored both ways, on the first GPU one of kubelet's HAMi IDs names
// that the entry has not charged yet; with none, its share stays
// unallocated.
func entryHoldings(idx *deviceIndex, entry []hamiEntry, limits map[string]string, kubelet []slice) []holding {
	var out []holding
	var ghosts []hamiEntry
	at := make(map[string]int)
	for _, e := range entry {
		d, ok := idx.byUUID[e.uuid]
		if !ok || d.instance != "" {
			ghosts = append(ghosts, e)
			continue
		}
		if i, seen := at[e.uuid]; seen {
			// Named again: once, at the larger annotated share.
			if limits == nil {
				out[i].share = max(out[i].share, annotatedShare(e, deviceMemoryMiB[d.gpu.Model]))
			}
			out[i].floor, out[i].estimated, out[i].useFloor = true, true, true
			continue
		}
		if h, ok := entryHolding(d, e, limits, false); ok {
			at[e.uuid] = len(out)
			out = append(out, h)
		}
	}
	for _, e := range ghosts {
		for _, s := range kubelet {
			u := s.dev.gpu.UUID
			if _, taken := at[u]; taken {
				continue
			}
			at[u] = -1
			if h, ok := entryHolding(device{gpu: s.dev.gpu, weight: 1}, e, limits, true); ok {
				at[u] = len(out)
				out = append(out, h)
			}
			break
		}
	}
	return out
}

// entryHolding is the holding of one entry device on GPU d; ok is false
// where nothing sizes it (no core limit, device memory unknown), which the
// pipeline's 1/N estimate covers and this truth does not model.
func entryHolding(d device, e hamiEntry, limits map[string]string, ghost bool) (_ holding, ok bool) {
	mem := deviceMemoryMiB[d.gpu.Model]
	share, suspect, uncapped := annotatedShare(e, mem), ghost, e.cores == 0
	if limits != nil {
		want := specFromLimits(limits)
		share, uncapped = want.shareOf(mem), want.cores == 0
		suspect = suspect || !want.matches(e, mem)
	}
	if share < 0 {
		return holding{}, false
	}
	if share == 0 {
		suspect = true
	}
	return holding{dev: d, share: share, mode: scenario.ModeHAMi, hami: true, floor: suspect, estimated: suspect,
		useFloor: suspect || uncapped}, true
}

// annotatedShare is an entry device's own share: cores/100, else its
// memory over the GPU's; -1 when neither says anything.
func annotatedShare(e hamiEntry, mem float64) float64 {
	switch {
	case e.cores > 0:
		return e.cores / 100
	case mem > 0:
		return min(e.memMiB/mem, 1)
	}
	return -1
}

// hamiAsk is what a container's limits ask HAMi for per GPU: cores in
// percent (0: no limit, HAMi's defaultCores), memory in MiB, or else a
// percentage of the device (100 by HAMi's defaultMemory of 0).
type hamiAsk struct{ cores, memMiB, memPct float64 }

func specFromLimits(limits map[string]string) hamiAsk {
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(limits[k], 64)
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	a := hamiAsk{cores: min(num("nvidia.com/gpucores"), 100), memMiB: num("nvidia.com/gpumem"), memPct: 100}
	if a.memMiB == 0 {
		if p := num("nvidia.com/gpumem-percentage"); p > 0 {
			a.memPct = min(p, 100)
		}
	}
	return a
}

func (a hamiAsk) shareOf(deviceMiB float64) float64 {
	switch {
	case a.cores > 0:
		return a.cores / 100
	case deviceMiB <= 0:
		return -1
	case a.memMiB > 0:
		return min(a.memMiB/deviceMiB, 1)
	}
	return a.memPct / 100
}

// matches: the annotation gives the same cores and the asked memory (a
// percentage within 1% of the device's memory).
func (a hamiAsk) matches(e hamiEntry, deviceMiB float64) bool {
	switch {
	case e.cores != a.cores:
		return false
	case a.memMiB > 0:
		return e.memMiB == a.memMiB
	case deviceMiB <= 0:
		return true
	}
	return math.Abs(e.memMiB-deviceMiB*a.memPct/100) <= deviceMiB/100
}

// hamiIDCounts is N per GPU UUID: the distinct HAMi device IDs on that GPU.
func hamiIDCounts(sc *scenario.Scenario, idx *deviceIndex) map[string]int {
	seen := make(map[string]map[string]bool)
	forEachID(sc, func(_, id string) {
		s, ok := idx.resolveSlice(id)
		if !ok || s.kind != sliceHAMi {
			return
		}
		u := s.dev.gpu.UUID
		if seen[u] == nil {
			seen[u] = make(map[string]bool)
		}
		seen[u][id] = true
	})
	n := make(map[string]int, len(seen))
	for u, ids := range seen {
		n[u] = len(ids)
	}
	return n
}
