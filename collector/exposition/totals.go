package exposition

import (
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
	seen      uint64    // cycle number that last saw the key
	created   time.Time // start of the window in which the key appeared
	podLabels []string  // allowlisted pod label values
	labels    *labelSet // built on first emission; shared by the 4 non-used series

	allocated, energy float64
	share, memBytes   float64 // gauges of the latest cycle
	used              []methodTotal
}

// methodTotal is the used counter of one method. A container keeps the
// totals of every method it has shown while it lives, so when its method
// flips both series stay, each monotonic, and their sum is its used seconds.
type methodTotal struct {
	method  string
	total   float64
	created time.Time
	labels  *labelSet // built on first emission
}

// gpuKey is the label set of the per-GPU counters.
type gpuKey struct{ uuid, model string }

// gpuTotals are one GPU's running totals.
type gpuTotals struct {
	seen                                      uint64
	created                                   time.Time
	labels                                    *labelSet // built on first emission
	capacity, idle, unallocated, unattributed float64
}

// totals are the running counters, keyed by label set. The maps live across
// cycles so a steady node allocates nothing for them; keys absent from a
// cycle are deleted when the snapshot is built.
type totals struct {
	cycle      uint64
	containers map[containerKey]*containerTotals
	gpus       map[gpuKey]*gpuTotals
}

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
		e = &gpuTotals{created: start}
		t.gpus[k] = e
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
		e = &containerTotals{created: start}
		t.containers[k] = e
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
	e.addUsed(c.Method, c.Used, start)
}

const mebibyte = 1 << 20

func (e *containerTotals) addUsed(method string, seconds float64, start time.Time) {
	for i := range e.used {
		if e.used[i].method == method {
			e.used[i].total += seconds
			return
		}
	}
	e.used = append(e.used, methodTotal{method: method, total: seconds, created: start})
}
