package groundtruth

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
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
	tracks, err := collectTracks(sc, idx)
	if err != nil {
		return nil, err
	}
	useFloors(members, tracks)
	allocated := allocate(members)
	u := measure(sc, tracks)
	groups, estimated := estimatedGroups(sc, members, u, tracks)

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
			SharingMode: sharingMode(m, tracks),
			Team:        team(sc, m.pod),
		}
		if estimated[m.key] {
			ct.Method = MethodEstimated
		}
		t.Containers[m.key] = ct
	}
	return t, nil
}

// edgeTol allows one poll interval of every change of the container's
// nominal share inside the scenario: the pipeline sees pods start and stop
// only at polls, its own (the rule that reproduces the contract examples)
// and, for a DRA device divided among holders, the other holders' too.
func edgeTol(sc *scenario.Scenario, m *member) float64 {
	var cuts []time.Duration
	for _, s := range m.spans {
		cuts = append(cuts, s.win.start, s.win.end)
	}
	jumps := 0.0
	for _, t := range sortedUnique(cuts) {
		if t <= 0 || t >= sc.Duration {
			continue
		}
		before, after := 0.0, 0.0
		for _, s := range m.spans {
			if s.win.start < t && s.win.end >= t {
				before += s.share
			}
			if s.win.start <= t && s.win.end > t {
				after += s.share
			}
		}
		jumps += math.Abs(after-before) * sc.PollInterval.Seconds()
	}
	return jumps + edgeTolFloor
}

// sharingMode names the mode of the container's first holding, or of the
// GPU its first process runs on when it holds none.
func sharingMode(m *member, tracks []track) string {
	if len(m.holdings) > 0 {
		return m.holdings[0].mode
	}
	for _, t := range tracks {
		if t.owner == m.key {
			return t.dev.gpu.Mode
		}
	}
	return ""
}

// team is the namespace's team label where it is not blank; else the
// pod's own, unless it names (trimmed, in any case) a team some listed
// namespace bills: a labelled namespace's team or an unlabelled one's
// name; else the namespace's name. A pod cannot move its cost to another
// team's bill.
func team(sc *scenario.Scenario, p *scenario.Pod) string {
	billed := make(map[string]bool, len(sc.Namespaces))
	for _, ns := range sc.Namespaces {
		t := ns.Labels["team"]
		if strings.TrimSpace(t) == "" {
			billed[strings.ToLower(strings.TrimSpace(ns.Name))] = true
			continue
		}
		if ns.Name == p.Namespace {
			return t
		}
		billed[strings.ToLower(strings.TrimSpace(t))] = true
	}
	if v := p.Labels["team"]; strings.TrimSpace(v) != "" && !billed[strings.ToLower(strings.TrimSpace(v))] {
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
// every holder of an MPS GPU whose NVML shows only the server. It also
// marks estimated the containers whose allocation is an estimate (replicas
// not labelled, HAMi charged 1/N) or whose HAMi processes run on a GPU
// their annotation does not name; their usage is still measured exactly,
// so each gets a group of its own (singles) that keeps it checked.
func estimatedGroups(sc *scenario.Scenario, members []*member, u *usage, tracks []track) ([]InstanceGroup, map[string]bool) {
	estimated := make(map[string]bool)
	for _, m := range members {
		if allocationEstimated(m, tracks) {
			estimated[m.key] = true
		}
	}
	grouped := make(map[string]bool)
	var groups []InstanceGroup
	for gi := range sc.GPUs {
		g := &sc.GPUs[gi]
		switch {
		case g.Mode == scenario.ModeMIG:
			for _, in := range g.MIGInstances {
				holders := overlapping(holdersOf(members, in.UUID))
				groups = appendGroup(groups, holders, u.on[in.UUID], estimated, grouped)
			}
		case g.Mode == scenario.ModeMPS && g.MPSProcessView == "server":
			holders := holdersOf(members, g.UUID)
			for _, m := range holders {
				estimated[m.key] = true
			}
			groups = appendGroup(groups, holders, u.on[g.UUID], estimated, grouped)
		}
	}
	return append(groups, singles(members, u, tracks, estimated, grouped)...), estimated
}

// allocationEstimated: one of m's shares is an estimate, or m is charged
// by its HAMi annotation and runs processes on a GPU the annotation does
// not name (its usage there stays its own; ledger.md, "HAMi, as it is
// deployed").
func allocationEstimated(m *member, tracks []track) bool {
	named := make(map[string]bool)
	for _, h := range m.holdings {
		if h.estimated {
			return true
		}
		if h.hami {
			named[h.dev.gpu.UUID] = true
		}
	}
	if !m.byAnnotation {
		return false
	}
	for _, t := range tracks {
		if t.owner == m.key && !named[t.dev.gpu.UUID] {
			return true
		}
	}
	return false
}

// singles gives each estimated container outside any group a group of its
// own: truth.json has one method per container, and checkers skip the used
// check of an estimated container, but they check every group's summed
// used. Not on MPS GPUs, whose per-container split is only good to 3%.
func singles(members []*member, u *usage, tracks []track, estimated, grouped map[string]bool) []InstanceGroup {
	onMPS := make(map[string]bool)
	for _, t := range tracks {
		if t.dev.gpu.Mode == scenario.ModeMPS {
			onMPS[t.owner] = true
		}
	}
	var out []InstanceGroup
	for _, m := range members {
		if estimated[m.key] && !grouped[m.key] && !onMPS[m.key] {
			out = append(out, InstanceGroup{Members: []string{m.key}, Used: u.usedBy(m.key)})
		}
	}
	slices.SortFunc(out, func(a, b InstanceGroup) int { return strings.Compare(a.Members[0], b.Members[0]) })
	return out
}

func appendGroup(groups []InstanceGroup, holders []*member, used map[string]float64, estimated, grouped map[string]bool) []InstanceGroup {
	if len(holders) < 2 {
		return groups
	}
	g := InstanceGroup{}
	for _, m := range holders {
		estimated[m.key] = true
		grouped[m.key] = true
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

// overlapping keeps the holders whose running windows share some time with another
// holder's: only while several hold an instance is its usage split.
func overlapping(holders []*member) []*member {
	var out []*member
	for i, a := range holders {
		for j, b := range holders {
			if i != j && overlap(a.win.start, a.win.end, b.win.start, b.win.end) {
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
