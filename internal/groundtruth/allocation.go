package groundtruth

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/collector/scenario"
)

const (
	labelReplicas = "nvidia.com/gpu.replicas"
	labelStrategy = "nvidia.com/gpu.sharing-strategy"
	annotHAMi     = "hami.io/vgpu-devices-allocated"
)

// deviceMemoryMiB is what NVML reports as total memory per model; HAMi
// memory-only shares are fractions of it.
var deviceMemoryMiB = map[string]float64{
	"A100-SXM4-40GB": 40960,
	"A100-SXM4-80GB": 81920,
	"H100-SXM5-80GB": 81920,
	"H200-141GB":     143771,
}

// holding is one slice a container holds and its nominal share of the GPU.
type holding struct {
	slice
	share     float64
	estimated bool // HAMi annotation not trusted: share is 1/N
}

// member is one GPU-holding or GPU-using container of the scenario.
type member struct {
	key        string
	pod        *scenario.Pod
	start, end time.Duration // pod lifetime, clipped to the scenario
	holdings   []holding
	allocated  float64
}

// replicaCounts is the number of replicas per GPU or MIG instance UUID: the
// node label, else the distinct ::<n> IDs seen on that device.
func replicaCounts(sc *scenario.Scenario, idx *deviceIndex) (func(uuid string) int, error) {
	if v, ok := sc.Node.Labels[labelReplicas]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("node.labels[%s]: %q is not a positive integer", labelReplicas, v)
		}
		return func(string) int { return n }, nil
	}
	seen := make(map[string]map[string]bool)
	forEachID(sc, func(id string) {
		s, ok := idx.resolveSlice(id)
		if !ok || s.kind != sliceReplica {
			return
		}
		u := s.dev.uuid()
		if seen[u] == nil {
			seen[u] = make(map[string]bool)
		}
		seen[u][id] = true
	})
	return func(uuid string) int { return max(1, len(seen[uuid])) }, nil
}

// hamiIDCounts is N per GPU UUID: the distinct HAMi device IDs on that GPU.
func hamiIDCounts(sc *scenario.Scenario, idx *deviceIndex) map[string]int {
	seen := make(map[string]map[string]bool)
	forEachID(sc, func(id string) {
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

func forEachID(sc *scenario.Scenario, f func(id string)) {
	for _, p := range sc.Pods {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					f(id)
				}
			}
		}
	}
}

func (d device) uuid() string {
	if d.instance != "" {
		return d.instance
	}
	return d.gpu.UUID
}

// hamiEntry is one device of a container's part of the HAMi annotation.
type hamiEntry struct{ memMiB, cores float64 }

// parseHAMi splits hami.io/vgpu-devices-allocated into per-container parts
// (";"), each a set of "UUID,NVIDIA,<memMiB>,<cores>" devices (":").
// Malformed entries are skipped: the pipeline must not trust them either.
func parseHAMi(annotation string) []map[string]hamiEntry {
	var parts []map[string]hamiEntry
	for part := range strings.SplitSeq(annotation, ";") {
		entries := make(map[string]hamiEntry)
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
			entries[f[0]] = hamiEntry{memMiB: mem, cores: cores}
		}
		parts = append(parts, entries)
	}
	return parts
}

// hamiShare is the share of a HAMi slice held by container ci of pod p:
// from the annotation when it names the GPU kubelet gave, else 1/N.
func hamiShare(p *scenario.Pod, ci int, s slice, hamiN map[string]int) (share float64, estimated bool) {
	parts := parseHAMi(p.Annotations[annotHAMi])
	if ci < len(parts) {
		if e, ok := parts[ci][s.dev.gpu.UUID]; ok {
			if e.cores > 0 {
				return e.cores / 100, false
			}
			if mem := deviceMemoryMiB[s.dev.gpu.Model]; mem > 0 {
				return e.memMiB / mem, false
			}
		}
	}
	return 1 / float64(max(1, hamiN[s.dev.gpu.UUID])), true
}

// buildMembers lists every container that holds a GPU slice or runs a GPU
// process, with its holdings and nominal shares.
func buildMembers(sc *scenario.Scenario, idx *deviceIndex) ([]*member, error) {
	replicas, err := replicaCounts(sc, idx)
	if err != nil {
		return nil, err
	}
	hamiN := hamiIDCounts(sc, idx)
	seen := make(map[string]bool)
	var out []*member
	for pi := range sc.Pods {
		p := &sc.Pods[pi]
		start, end := podLifetime(sc, p)
		if end < start {
			return nil, fmt.Errorf("pods[%d] (%s/%s): end %v before start %v", pi, p.Namespace, p.Name, end, start)
		}
		for ci, c := range p.Containers {
			if len(c.Devices) == 0 && len(c.Processes) == 0 {
				continue
			}
			key := p.Namespace + "/" + p.Name + "/" + c.Name
			if seen[key] {
				return nil, fmt.Errorf("pods[%d].containers[%d]: container %q listed twice", pi, ci, key)
			}
			seen[key] = true
			m := &member{key: key, pod: p, start: start, end: end}
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					s, ok := idx.resolveSlice(id)
					if !ok {
						continue // unknown device: its capacity stays unallocated
					}
					h := holding{slice: s}
					switch s.kind {
					case sliceWhole:
						h.share = s.dev.weight
					case sliceReplica:
						h.share = s.dev.weight / float64(replicas(s.dev.uuid()))
					case sliceHAMi:
						h.share, h.estimated = hamiShare(p, ci, s, hamiN)
					}
					m.holdings = append(m.holdings, h)
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

func podLifetime(sc *scenario.Scenario, p *scenario.Pod) (time.Duration, time.Duration) {
	end := p.End
	if end == 0 || end > sc.Duration {
		end = sc.Duration
	}
	return max(p.Start, 0), end
}

// allocate integrates each member's shares over its pod's lifetime, scaling
// a GPU's shares down wherever the live ones add up to more than 1, and
// returns the allocated seconds per GPU UUID.
func allocate(members []*member) map[string]float64 {
	type span struct {
		m          *member
		share      float64
		start, end time.Duration
	}
	perGPU := make(map[string][]span)
	for _, m := range members {
		for _, h := range m.holdings {
			u := h.dev.gpu.UUID
			perGPU[u] = append(perGPU[u], span{m: m, share: h.share, start: m.start, end: m.end})
		}
	}
	total := make(map[string]float64, len(perGPU))
	for _, u := range sortedKeys(perGPU) {
		spans := perGPU[u]
		var cuts []time.Duration
		for _, s := range spans {
			cuts = append(cuts, s.start, s.end)
		}
		cuts = sortedUnique(cuts)
		for i := 0; i+1 < len(cuts); i++ {
			a, b := cuts[i], cuts[i+1]
			sum := 0.0
			for _, s := range spans {
				if s.start <= a && s.end >= b {
					sum += s.share
				}
			}
			scale := 1.0
			if sum > 1 {
				scale = 1 / sum
			}
			for _, s := range spans {
				if s.start <= a && s.end >= b {
					sec := s.share * scale * (b - a).Seconds()
					s.m.allocated += sec
					total[u] += sec
				}
			}
		}
	}
	return total
}
