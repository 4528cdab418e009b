package groundtruth

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpuledger/gpuledger/collector/scenario"
)

// edgeTolFloor is the tolerance left where no pod edge blurs allocation.
const edgeTolFloor = 1e-6

// Compute derives the ground truth of sc, a scenario as scenario.Load
// returns it, and reads the expected findings from the flags.yaml sidecar
// in sc.Dir when there is one.
func Compute(sc *scenario.Scenario) (*Truth, error) {
	if sc == nil {
		return nil, errors.New("cannot compute ground truth: no scenario")
	}
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("cannot compute ground truth of %q: duration %v is not positive", sc.Name, sc.Duration)
	}
	t, err := compute(sc)
	if err != nil {
		return nil, fmt.Errorf("cannot compute ground truth of %q: %w", sc.Name, err)
	}
	flags, err := LoadFlags(sc.Dir)
	if err != nil {
		return nil, err
	}
	t.ExpectFlags, t.ForbidFlags = flags.Expect, flags.Forbid
	return t, nil
}

func compute(sc *scenario.Scenario) (*Truth, error) {
	idx, err := indexDevices(sc)
	if err != nil {
		return nil, err
	}
	members, err := buildMembers(sc, idx)
	if err != nil {
		return nil, err
	}
	allocated := allocate(members)
	tracks, err := collectTracks(sc, idx)
	if err != nil {
		return nil, err
	}
	u := measure(sc, tracks)
	groups, estimated := estimatedGroups(sc, members, u)

	t := &Truth{
		Scenario:       sc.Name,
		Duration:       sc.Duration.Seconds(),
		LedgerInterval: sc.LedgerInterval.Seconds(),
		Containers:     make(map[string]ContainerTruth, len(members)),
		GPUs:           gpuTruths(sc, allocated, u.unattributed(idx)),
		InstanceGroups: groups,
	}
	for _, m := range members {
		ct := ContainerTruth{
			Allocated:   m.allocated,
			Used:        u.usedBy(m.key),
			EdgeTol:     edgeTol(sc, m),
			SharingMode: sharingMode(sc, m, tracks),
			Team:        team(sc, m.pod),
		}
		if estimated[m.key] {
			ct.Method = MethodEstimated
		}
		t.Containers[m.key] = ct
	}
	return t, nil
}

// edgeTol allows one poll interval of the container's share at each edge
// of its pod that falls inside the scenario: the pipeline sees a pod only
// at polls (the rule that reproduces the contract examples).
func edgeTol(sc *scenario.Scenario, m *member) float64 {
	edges := 0
	if m.start > 0 {
		edges++
	}
	if m.end < sc.Duration {
		edges++
	}
	share := 0.0
	for _, h := range m.holdings {
		share += h.share
	}
	return share*sc.PollInterval.Seconds()*float64(edges) + edgeTolFloor
}

// sharingMode names the mode of the container's first slice, or of the
// GPU its first process runs on when it holds none.
func sharingMode(sc *scenario.Scenario, m *member, tracks []track) string {
	if len(m.holdings) > 0 {
		h := m.holdings[0]
		if h.dev.gpu.Mode != scenario.ModeMIG || h.kind != sliceReplica {
			return h.dev.gpu.Mode
		}
		if sc.Node.Labels[labelStrategy] == "mps" {
			return "mig+mps"
		}
		return "mig+timeslicing"
	}
	for _, t := range tracks {
		if t.owner == m.key {
			return t.dev.gpu.Mode
		}
	}
	return ""
}

// team is the namespace's team label, else the pod's, else the namespace:
// a pod cannot move its cost to another team's bill.
func team(sc *scenario.Scenario, p *scenario.Pod) string {
	for _, ns := range sc.Namespaces {
		if ns.Name == p.Namespace && ns.Labels["team"] != "" {
			return ns.Labels["team"]
		}
	}
	if v := p.Labels["team"]; v != "" {
		return v
	}
	return p.Namespace
}

// gpuTruths lists every GPU with its nonzero residuals.
func gpuTruths(sc *scenario.Scenario, allocated, unattributed map[string]float64) map[string]GPUTruth {
	d := sc.Duration.Seconds()
	out := make(map[string]GPUTruth, len(sc.GPUs))
	for _, g := range sc.GPUs {
		gt := GPUTruth{Model: g.Model}
		if free := d - allocated[g.UUID]; free > 1e-9*d {
			gt.Unallocated = &free
		}
		if un := unattributed[g.UUID]; un > 0 {
			gt.Unattributed = &un
		}
		out[g.UUID] = gt
	}
	return out
}

// estimatedGroups finds the containers whose usage the pipeline can only
// estimate: replicas of one MIG instance whose pods overlap in time, and
// every holder of an MPS GPU whose NVML shows only the server; plus HAMi
// containers whose annotation was not trusted (allocation estimated).
func estimatedGroups(sc *scenario.Scenario, members []*member, u *usage) ([]InstanceGroup, map[string]bool) {
	estimated := make(map[string]bool)
	for _, m := range members {
		for _, h := range m.holdings {
			if h.estimated {
				estimated[m.key] = true
			}
		}
	}
	var groups []InstanceGroup
	for gi := range sc.GPUs {
		g := &sc.GPUs[gi]
		switch {
		case g.Mode == scenario.ModeMIG:
			for _, in := range g.MIGInstances {
				holders := overlapping(holdersOf(members, in.UUID))
				groups = appendGroup(groups, holders, u.on[in.UUID], estimated)
			}
		case g.Mode == scenario.ModeMPS && g.MPSProcessView == "server":
			holders := holdersOf(members, g.UUID)
			for _, m := range holders {
				estimated[m.key] = true
			}
			groups = appendGroup(groups, holders, u.on[g.UUID], estimated)
		}
	}
	return groups, estimated
}

func appendGroup(groups []InstanceGroup, holders []*member, used map[string]float64, estimated map[string]bool) []InstanceGroup {
	if len(holders) < 2 {
		return groups
	}
	g := InstanceGroup{}
	for _, m := range holders {
		estimated[m.key] = true
		g.Members = append(g.Members, m.key)
	}
	slices.Sort(g.Members)
	for _, k := range g.Members {
		g.Used += used[k]
	}
	return append(groups, g)
}

// holdersOf lists the members holding a slice of device uuid (a MIG
// instance, or a whole GPU with its replicas).
func holdersOf(members []*member, uuid string) []*member {
	var out []*member
	for _, m := range members {
		for _, h := range m.holdings {
			if h.dev.uuid() == uuid {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// overlapping keeps the holders whose pods share some time with another
// holder's: only while several hold an instance is its usage split.
func overlapping(holders []*member) []*member {
	var out []*member
	for i, a := range holders {
		for j, b := range holders {
			if i != j && overlap(a.start, a.end, b.start, b.end) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

func overlap(a0, a1, b0, b1 time.Duration) bool {
	return max(a0, b0) < min(a1, b1)
}
