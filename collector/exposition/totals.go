package exposition

import (
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// containerKey is the full label set of a container series except method
// (one container entry carries a used total per method). The allowlisted pod
// label values are part of it: if a pod's labels change, its series are new
// series and their totals start again, rather than a new label set appearing
// with a total that Prometheus would count a second time.
type containerKey struct {
	gpu, slice, mode, namespace, pod, container, team string
	podLabels                                         string // podValues.joined
}

// containerTotals are one container series' running totals and last gauges.
type containerTotals struct {
	key       containerKey
	seen      uint64    // cycle number that last saw the key
	created   time.Time // start of the window in which the key appeared
	podLabels []string  // allowlisted pod label values
	labels    *labelSet // built on first emission; shared by the 4 non-used series

	allocated, energy float64
	share, memBytes   float64 // gauges of the latest cycle
	used              []*methodTotal
}

// methodTotal is the used counter of one method. A container keeps the
// totals of every method it has shown while it lives, so when its method
// flips both series stay, each monotonic, and their sum is its used seconds.
type methodTotal struct {
	owner   *containerTotals
	method  string
	total   float64
	created time.Time
	labels  *labelSet // built on first emission
}

// gpuKey is the label set of the per-GPU counters.
type gpuKey struct{ uuid, model string }

// gpuTotals are one GPU's running totals.
type gpuTotals struct {
	key                                       gpuKey
	seen                                      uint64
	created                                   time.Time
	labels                                    *labelSet // built on first emission
	capacity, idle, unallocated, unattributed float64
}

// totals are the running counters, keyed by label set. The maps live across
// cycles so a steady node allocates nothing for them; keys absent from a
// cycle are dropped when the snapshot is built.
//
// The live entries are also kept in lists in exposition order (by label
// set, as client_golang sorts series). Dropping keeps a list in order and a
// new entry is appended, so each Update only sorts the entries new in its
// cycle and merges them in: a steady node never sorts, and a scrape never
// does.
type totals struct {
	cycle      uint64
	containers map[containerKey]*containerTotals
	gpus       map[gpuKey]*gpuTotals

	containerOrder []*containerTotals
	usedOrder      []*methodTotal
	gpuOrder       []*gpuTotals
	added          [3]int // entries appended to each list since it was last in order

	containerSpare []*containerTotals // backing arrays for the next merge
	usedSpare      []*methodTotal
	gpuSpare       []*gpuTotals
}

// Indexes of totals.added.
const (
	addedContainers = iota
	addedUsed
	addedGPUs
)

func newTotals() *totals {
	return &totals{
		containers: make(map[containerKey]*containerTotals),
		gpus:       make(map[gpuKey]*gpuTotals),
	}
}

// windowStart is when a series first seen in res began to count.
func windowStart(res attribution.CycleResult) time.Time {
	if !res.Start.IsZero() {
		return res.Start
	}
	return res.End
}

// add folds one cycle into the totals. Gauges take the cycle's value; if one
// label set appears twice in a cycle (two pod incarnations of one name on a
// slice, say) its seconds and gauges are summed, so the snapshot never holds
// a duplicate series.
func (t *totals) add(res attribution.CycleResult, pods *podLabelIndex) {
	t.cycle++
	start := windowStart(res)
	for i := range res.GPUs {
		g := &res.GPUs[i]
		t.addGPU(g, start)
		for j := range g.Containers {
			t.addContainer(g.UUID, &g.Containers[j], pods, start)
		}
	}
}

func (t *totals) addGPU(g *attribution.GPUCycle, start time.Time) {
	k := gpuKey{g.UUID, g.Model}
	e := t.gpus[k]
	if e == nil {
		e = &gpuTotals{key: k, created: start}
		t.gpus[k] = e
		t.gpuOrder = append(t.gpuOrder, e)
		t.added[addedGPUs]++
	}
	e.seen = t.cycle
	e.capacity += g.Capacity
	e.idle += g.Idle
	e.unallocated += g.Unallocated
	e.unattributed += g.Unattributed
}

func (t *totals) addContainer(gpu string, c *attribution.ContainerCycle, pods *podLabelIndex, start time.Time) {
	pv := pods.lookup(c.Namespace, c.Pod)
	k := containerKey{
		gpu: gpu, slice: c.SliceID, mode: c.SharingMode,
		namespace: c.Namespace, pod: c.Pod, container: c.Container, team: c.Team,
		podLabels: pv.joined,
	}
	e := t.containers[k]
	if e == nil {
		e = &containerTotals{key: k, created: start}
		t.containers[k] = e
		t.containerOrder = append(t.containerOrder, e)
		t.added[addedContainers]++
	}
	if e.seen != t.cycle {
		e.seen = t.cycle
		e.podLabels = pv.values
		e.share, e.memBytes = 0, 0
	}
	e.allocated += c.Allocated
	e.energy += c.Energy
	e.share += c.Share
	e.memBytes += c.MemoryMiB * mebibyte
	t.addUsed(e, c.Method, c.Used, start)
}

const mebibyte = 1 << 20

func (t *totals) addUsed(e *containerTotals, method string, seconds float64, start time.Time) {
	for _, u := range e.used {
		if u.method == method {
			u.total += seconds
			return
		}
	}
	u := &methodTotal{owner: e, method: method, total: seconds, created: start}
	e.used = append(e.used, u)
	t.usedOrder = append(t.usedOrder, u)
	t.added[addedUsed]++
}

// prune forgets every key the latest cycle did not see. The entries added
// in this cycle, at the tails of the lists, all stay.
func (t *totals) prune() {
	live := func(seen uint64) bool { return seen == t.cycle }
	t.containerOrder = retain(t.containerOrder, func(e *containerTotals) bool {
		if live(e.seen) {
			return true
		}
		delete(t.containers, e.key)
		return false
	})
	// A used series lives as long as its container.
	t.usedOrder = retain(t.usedOrder, func(u *methodTotal) bool { return live(u.owner.seen) })
	t.gpuOrder = retain(t.gpuOrder, func(e *gpuTotals) bool {
		if live(e.seen) {
			return true
		}
		delete(t.gpus, e.key)
		return false
	})
}

// sortOrder puts the lists back in exposition order by merging in the
// entries added since the last sort. Every live entry must have its label
// set by then; one with invalid labels has an empty key and is never
// emitted.
func (t *totals) sortOrder() {
	t.containerOrder, t.containerSpare = mergeTail(t.containerOrder, t.added[addedContainers], t.containerSpare,
		func(a, b *containerTotals) int { return strings.Compare(a.labels.key, b.labels.key) })
	t.usedOrder, t.usedSpare = mergeTail(t.usedOrder, t.added[addedUsed], t.usedSpare,
		func(a, b *methodTotal) int { return strings.Compare(a.labels.key, b.labels.key) })
	t.gpuOrder, t.gpuSpare = mergeTail(t.gpuOrder, t.added[addedGPUs], t.gpuSpare,
		func(a, b *gpuTotals) int { return strings.Compare(a.labels.key, b.labels.key) })
	t.added = [3]int{}
}

// retain keeps the entries of s for which keep is true, in order. The
// dropped tail is cleared so the backing array does not keep forgotten
// entries alive.
func retain[T any](s []*T, keep func(*T) bool) []*T {
	out := s[:0]
	for _, e := range s {
		if keep(e) {
			out = append(out, e)
		}
	}
	clear(s[len(out):])
	return out
}

// mergeTail sorts the last added entries of s, whose head is already in
// order, and merges the two runs into spare's backing array. It returns the
// merged list and the array s used, emptied, as the next spare, so merging
// allocates only when a list outgrows its arrays.
func mergeTail[T any](s []*T, added int, spare []*T, cmp func(a, b *T) int) (merged, nextSpare []*T) {
	if added == 0 {
		return s, spare
	}
	head, tail := s[:len(s)-added], s[len(s)-added:]
	slices.SortFunc(tail, cmp)
	if len(head) == 0 || cmp(head[len(head)-1], tail[0]) <= 0 {
		return s, spare
	}
	out := slices.Grow(spare[:0], len(s))
	i, j := 0, 0
	for i < len(head) && j < len(tail) {
		if cmp(tail[j], head[i]) < 0 {
			out = append(out, tail[j])
			j++
		} else {
			out = append(out, head[i])
			i++
		}
	}
	out = append(append(out, head[i:]...), tail[j:]...)
	clear(s)
	return out, s[:0]
}
