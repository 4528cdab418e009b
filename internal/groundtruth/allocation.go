package groundtruth

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

const (
	labelReplicas = "nvidia.com/gpu.replicas"
	labelStrategy = "nvidia.com/gpu.sharing-strategy"
)

// holding is one device a container holds, how it holds it and, for
// shares that do not change while the container runs, its share of the
// physical GPU (DRA shares change as holders come and go: see spans).
type holding struct {
	dev       device
	share     float64
	mode      string // sharing_mode of the ledger rows
	estimated bool   // the share is an estimate (replicas not labelled, HAMi fallback)
	hami      bool
	dra       bool
	// floor: a HAMi holding its annotation cannot vouch for, charged at
	// least the framebuffer the container's processes hold on the GPU.
	floor bool
	// useFloor: a HAMi holding charged at least the container's use of
	// the GPU where nobody else holds it (hamiuse.go): no core limit caps
	// it, or its annotation cannot vouch for it.
	useFloor bool
}

// span is a nominal share of one GPU held over a window, before shares
// above 1 on a GPU are scaled down.
type span struct {
	dev   device
	share float64
	win   window
	// useFloor spans are charged at least use, the container's busy
	// fraction of the device over win, out of what no span holds.
	useFloor bool
	use      float64
}

// member is one GPU-holding or GPU-using container of the scenario, init
// containers included.
type member struct {
	key       string
	pod       *scenario.Pod
	win       window // when it runs (and holds its devices)
	holdings  []holding
	spans     []span
	allocated float64
	// useSpans are its use-floored spans cut where its use changes, and
	// the whole GPUs it runs on unlisted (useFloors); allocate settles
	// them in place of its useFloor spans where a floor takes anything.
	useSpans []span
	// byAnnotation: charged by its HAMi annotation entry, which names
	// the GPUs it may run on.
	byAnnotation bool
}

// addSpan appends s, merging it into the previous span of the same device
// when it continues it at the same share.
func (m *member) addSpan(s span) {
	if s.win.end <= s.win.start {
		return
	}
	if n := len(m.spans); n > 0 {
		last := &m.spans[n-1]
		if last.dev.uuid() == s.dev.uuid() && last.win.end == s.win.start && last.share == s.share &&
			last.useFloor == s.useFloor && last.use == s.use {
			last.win.end = s.win.end
			return
		}
	}
	m.spans = append(m.spans, s)
}

// rules are the scenario-wide inputs of the allocation shares.
type rules struct {
	idx      *deviceIndex
	replicas *replicaRule
	hamiN    map[string]int
	dra      map[draKey]device
	labels   map[string]string
}

// buildMembers lists every container that holds a GPU slice or runs a GPU
// process, with its holdings and nominal shares over time.
func buildMembers(sc *scenario.Scenario, idx *deviceIndex) ([]*member, error) {
	rep, err := newReplicaRule(sc, idx)
	if err != nil {
		return nil, err
	}
	r := &rules{idx: idx, replicas: rep, hamiN: hamiIDCounts(sc, idx), dra: draDevices(sc, idx), labels: sc.Node.Labels}
	seen := make(map[string]bool)
	claims := make(map[draKey][]draHold)
	var out []*member
	for pi := range sc.Pods {
		p := &sc.Pods[pi]
		if start, end := podLifetime(sc, p); end < start {
			return nil, fmt.Errorf("pods[%d] (%s/%s): end %v before start %v", pi, p.Namespace, p.Name, end, start)
		}
		for _, k := range podContainers(sc, p, pi) {
			key := p.Namespace + "/" + p.Name + "/" + k.c.Name
			m := &member{key: key, pod: p, win: k.win}
			m.holdings, m.byAnnotation = r.holdings(p, k)
			m.holdings = append(m.holdings, draClaims(r.dra, m, k.c.Claims, claims)...)
			if len(m.holdings) == 0 && len(k.c.Processes) == 0 {
				continue // holds nothing here and runs nothing: no rows
			}
			if seen[key] {
				return nil, fmt.Errorf("%s: container %q listed twice", k.path, key)
			}
			seen[key] = true
			for _, h := range m.holdings {
				switch {
				case h.floor:
					floorSpans(m, h, k.c.Processes)
				case !h.dra:
					m.addSpan(span{dev: h.dev, share: h.share, win: m.win, useFloor: h.useFloor})
				}
			}
			out = append(out, m)
		}
	}
	for _, k := range sortedDRAKeys(claims) {
		draSpans(r.dra[k], claims[k])
	}
	return out, nil
}

// holdings resolves a container's kubelet device IDs (DRA claims apart).
// IDs naming no device here hold nothing: their capacity stays unallocated.
// byAnnotation says its HAMi devices are charged by its annotation entry.
func (r *rules) holdings(p *scenario.Pod, k ctr) (_ []holding, byAnnotation bool) {
	var out []holding
	var hami []slice
	for _, d := range k.c.Devices {
		for _, id := range d.IDs {
			s, ok := r.idx.resolveSlice(id)
			switch {
			case !ok:
			case s.kind == sliceHAMi:
				hami = append(hami, s)
			default:
				if h, ok := r.share(d.Resource, s); ok {
					out = append(out, h)
				}
			}
		}
	}
	if len(hami) > 0 {
		var hs []holding
		hs, byAnnotation = hamiHoldings(r.idx, p, k, hami, r.hamiN)
		out = append(out, hs...)
	}
	return out, byAnnotation
}

// share is the allocation share and mode of one device-plugin slice; ok
// is false for a replica slice whose replica label is garbage: it holds
// nothing and its capacity stays unallocated.
func (r *rules) share(resource string, s slice) (_ holding, ok bool) {
	h := holding{dev: s.dev, share: s.dev.weight, mode: s.dev.gpu.Mode}
	mig := s.dev.instance != ""
	switch s.kind {
	case sliceReplica:
		n, est, ok := r.replicas.count(resource, s)
		if !ok {
			return h, false
		}
		h.share, h.estimated = s.dev.weight/float64(n), est
		if mig {
			h.mode = migShared(r.labels[labelStrategy] == "mps")
		}
	case sliceGKE:
		h.mode = scenario.ModeExclusive
		if mig {
			h.mode = scenario.ModeMIG
		}
	case sliceGKEShared:
		n, est, ok := r.replicas.count(resource, s)
		if !ok {
			return h, false
		}
		h.share, h.estimated = s.dev.weight/float64(n), est
		mps := r.labels[labelGKEStrategy] == "mps"
		switch {
		case mig:
			h.mode = migShared(mps)
		case mps:
			h.mode = scenario.ModeMPS
		default:
			h.mode = scenario.ModeTimeslicing
		}
	}
	return h, true
}

func migShared(mps bool) string {
	if mps {
		return "mig+mps"
	}
	return "mig+timeslicing"
}

func (d device) uuid() string {
	if d.instance != "" {
		return d.instance
	}
	return d.gpu.UUID
}

func podLifetime(sc *scenario.Scenario, p *scenario.Pod) (time.Duration, time.Duration) {
	end := p.End
	if end == 0 || end > sc.Duration {
		end = sc.Duration
	}
	return max(p.Start, 0), end
}

// allocate integrates each member's spans, scaling a GPU's shares down
// wherever the live ones add up to more than 1, and returns the allocated
// seconds per GPU UUID. On a GPU where some use floor takes capacity
// (useFloors), the floored spans are settled in their pieces; elsewhere
// the spans are settled whole, so a floor that never binds changes no
// figure, not even in its last digit.
func allocate(members []*member) map[string]float64 {
	perGPU := make(map[string][]owned)
	floored := make(map[string][]owned)
	for _, m := range members {
		for _, s := range m.spans {
			u := s.dev.gpu.UUID
			perGPU[u] = append(perGPU[u], owned{m, s})
			if !s.useFloor || len(m.useSpans) == 0 {
				floored[u] = append(floored[u], owned{m, s})
			}
		}
		for _, s := range m.useSpans {
			u := s.dev.gpu.UUID
			floored[u] = append(floored[u], owned{m, s})
		}
	}
	total := make(map[string]float64, len(perGPU))
	for _, u := range sortedKeys(floored) {
		spans := perGPU[u]
		if settle(floored[u], nil) {
			spans = floored[u]
		}
		settle(spans, func(o owned, sec float64) {
			o.m.allocated += sec
			total[u] += sec
		})
	}
	return total
}

// owned is a span and the member holding it.
type owned struct {
	m *member
	span
}

// settle sweeps one GPU's spans, giving each piece's seconds to add: the
// shares, scaled down where they add up to more than 1, and for use
// floors what no span holds, each the same fraction of its unmet use
// when they want more than that. It reports whether a use floor took
// anything.
func settle(spans []owned, add func(o owned, sec float64)) (floorTook bool) {
	wins := make([]window, len(spans))
	for i, s := range spans {
		wins[i] = s.win
	}
	sweep(wins, func(a, b time.Duration, live []int) {
		sum := 0.0
		for _, i := range live {
			sum += spans[i].share
		}
		scale := 1.0
		if sum > 1 {
			scale = 1 / sum
		}
		unmet := 0.0
		for _, i := range live {
			if spans[i].useFloor {
				unmet += max(spans[i].use-spans[i].share*scale, 0)
			}
		}
		give := 0.0
		if free := 1 - sum*scale; unmet > floorNoise && free > floorNoise {
			give, floorTook = min(1, free/unmet), true
		}
		if add == nil {
			return
		}
		for _, i := range live {
			share := spans[i].share * scale
			if spans[i].useFloor && give > 0 {
				share += max(spans[i].use-share, 0) * give
			}
			add(spans[i], share*(b-a).Seconds())
		}
	})
	return floorTook
}

// floorNoise is a share below which a floor's unmet use or a GPU's free
// capacity is the rounding of the scaled shares, not capacity.
const floorNoise = 1e-12

// floorSpans adds holding h's spans over m's window at its share or, where
// more, the framebuffer m's processes hold on its GPU over the GPU's
// memory: piecewise constant between the processes' starts and ends and
// their memory intervals' edges.
func floorSpans(m *member, h holding, procs []scenario.Process) {
	uuid, mem := h.dev.gpu.UUID, deviceMemoryMiB[h.dev.gpu.Model]
	cuts := []time.Duration{m.win.start, m.win.end}
	for i := range procs {
		if p := &procs[i]; p.Device == uuid {
			cuts = append(cuts, p.Start, p.End)
			for _, s := range p.Memory {
				cuts = append(cuts, s.From, s.To)
			}
		}
	}
	cuts = sortedUnique(cuts)
	for i := 0; i+1 < len(cuts); i++ {
		a, b := cuts[i], cuts[i+1]
		if a < m.win.start || b > m.win.end {
			continue
		}
		used := 0.0
		for j := range procs {
			if p := &procs[j]; p.Device == uuid && p.Start <= a && a < p.End {
				used += float64(p.MemoryAt(a))
			}
		}
		share := h.share
		if mem > 0 {
			share = max(share, min(used/mem, 1))
		}
		m.addSpan(span{dev: h.dev, share: share, win: window{start: a, end: b}, useFloor: h.useFloor})
	}
}
