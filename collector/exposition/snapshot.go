package exposition

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// snapshot is the immutable exposition one Update built: the families that
// have series, in name order, each with its series in the order
// client_golang would sort them. Both scrape paths read it; neither changes
// it, so any number of scrapes may share one.
type snapshot struct {
	families []familySamples
	series   int
}

// familySamples are the series of one family in a snapshot.
type familySamples struct {
	f       *family
	samples []sample
}

// sample is one series of a snapshot: its cached label set and its value.
type sample struct {
	ls *labelSet
	v  float64
}

// builder builds the next snapshot.
type builder struct {
	d      *descs
	cycle  uint64
	caches []labelCache // by family rank
	byRank [][]sample   // the series of each family, by rank
	unsort uint64       // bit per rank: series to sort before the snapshot is done
	lv     []string     // label value buffer, reused for every series

	bad      int // series left out for invalid label values
	firstErr error
}

func newBuilder(d *descs, cycle uint64, caches []labelCache) *builder {
	return &builder{d: d, cycle: cycle, caches: caches, byRank: make([][]sample, len(d.byName))}
}

// scratch holds what Update reuses across cycles besides the totals.
type scratch struct {
	caches []labelCache        // label sets of the small families, by rank
	gpus   map[string]struct{} // GPU UUIDs already in the inventory this cycle
}

func newScratch(d *descs) scratch {
	return scratch{caches: make([]labelCache, len(d.byName)), gpus: make(map[string]struct{})}
}

// sweep forgets the cached label sets cycle did not emit.
func (s *scratch) sweep(cycle uint64) {
	for i := range s.caches {
		s.caches[i].sweep(cycle)
	}
}

// noteBad counts a series left out. Label values come from the node (pod
// names, label values); a bad one costs that series, never the scrape.
func (b *builder) noteBad(err error) {
	b.bad++
	if b.firstErr == nil {
		b.firstErr = err
	}
}

// labelSet returns the cached label set of a totals entry, building it on
// the entry's first emission. An entry with invalid label values is
// reported once, when it is first seen, and emits nothing while it lives.
func (b *builder) labelSet(ls **labelSet, f *family, created time.Time, lv []string) {
	if *ls == nil {
		*ls = newLabelSet(f.desc, created, lv)
		if (*ls).err != nil {
			b.noteBad((*ls).err)
		}
	}
}

// small adds one series of a family with few series. Its label set comes
// from the family's cache; a series already added this cycle is skipped.
func (b *builder) small(f *family, v float64, lv ...string) {
	ls, fresh := b.caches[f.rank].get(f, b.cycle, lv)
	if ls == nil {
		return
	}
	if ls.err != nil {
		if fresh {
			b.noteBad(ls.err)
		}
		return
	}
	b.byRank[f.rank] = append(b.byRank[f.rank], sample{ls, v})
	b.unsort |= 1 << f.rank
}

// set gives a family its series, already in order.
func (b *builder) set(f *family, samples []sample) {
	b.byRank[f.rank] = samples
}

// snapshot finishes the snapshot: families by name, series sorted.
func (b *builder) snapshot() *snapshot {
	s := &snapshot{families: make([]familySamples, 0, len(b.byRank))}
	for rank, samples := range b.byRank {
		if len(samples) == 0 {
			continue
		}
		if b.unsort&(1<<rank) != 0 {
			slices.SortFunc(samples, func(x, y sample) int { return strings.Compare(x.ls.key, y.ls.key) })
		}
		s.families = append(s.families, familySamples{f: b.d.byName[rank], samples: samples})
		s.series += len(samples)
	}
	return s
}

// prices adds the price book's rates.
func (b *builder) prices(ps []Price) {
	for _, p := range ps {
		b.small(b.d.price, p.PerGPUHour, p.Model, p.Currency)
	}
}

// buildInfo adds gpuledger_build_info; ls is nil when its labels are invalid.
func (b *builder) buildInfo(ls *labelSet) {
	if ls != nil {
		b.set(b.d.buildInfo, []sample{{ls, 1}})
	}
}

// totals prunes the keys the latest cycle did not see, labels the new ones
// and puts the rest back in order.
func (b *builder) totals(t *totals) {
	t.prune()
	for _, e := range t.containerOrder {
		if e.labels == nil {
			b.lv = append(b.lv[:0], e.key.gpu, e.key.slice, e.key.mode, e.key.namespace, e.key.pod, e.key.container, e.key.team)
			b.lv = append(b.lv, e.podLabels...)
			// allocated, energy, ratio and memory share label names, so
			// one label set serves all four.
			b.labelSet(&e.labels, b.d.allocated, e.created, b.lv)
		}
		for _, u := range e.used {
			if u.labels == nil {
				b.lv = append(b.lv[:0], e.key.gpu, e.key.slice, e.key.mode, e.key.namespace, e.key.pod, e.key.container, e.key.team, u.method)
				b.lv = append(b.lv, e.podLabels...)
				b.labelSet(&u.labels, b.d.used, u.created, b.lv)
			}
		}
	}
	for _, e := range t.gpuOrder {
		if e.labels == nil {
			b.labelSet(&e.labels, b.d.capacity, e.created, append(b.lv[:0], e.key.uuid, e.key.model))
		}
	}
	t.sortOrder()
	b.containers(t)
	b.gpus(t)
}

// containers emits the container series of the live keys.
func (b *builder) containers(t *totals) {
	n := len(t.containerOrder)
	all := make([]sample, 4*n)
	allocated, energy, ratio, memory := all[:0:n], all[n:n:2*n], all[2*n:2*n:3*n], all[3*n:3*n:4*n]
	for _, e := range t.containerOrder {
		if ls := e.labels; ls.err == nil {
			allocated = append(allocated, sample{ls, e.allocated})
			energy = append(energy, sample{ls, e.energy})
			ratio = append(ratio, sample{ls, e.share})
			memory = append(memory, sample{ls, e.memBytes})
		}
	}
	b.set(b.d.allocated, allocated)
	b.set(b.d.energy, energy)
	b.set(b.d.ratio, ratio)
	b.set(b.d.memory, memory)

	used := make([]sample, 0, len(t.usedOrder))
	for _, u := range t.usedOrder {
		if u.labels.err == nil {
			used = append(used, sample{u.labels, u.total})
		}
	}
	b.set(b.d.used, used)
}

// gpus emits the per-GPU counters of the live GPUs.
func (b *builder) gpus(t *totals) {
	n := len(t.gpuOrder)
	all := make([]sample, 4*n)
	capacity, idle, unallocated, unattributed := all[:0:n], all[n:n:2*n], all[2*n:2*n:3*n], all[3*n:3*n:4*n]
	for _, e := range t.gpuOrder {
		if ls := e.labels; ls.err == nil {
			capacity = append(capacity, sample{ls, e.capacity})
			idle = append(idle, sample{ls, e.idle})
			unallocated = append(unallocated, sample{ls, e.unallocated})
			unattributed = append(unattributed, sample{ls, e.unattributed})
		}
	}
	b.set(b.d.capacity, capacity)
	b.set(b.d.idle, idle)
	b.set(b.d.unallocated, unallocated)
	b.set(b.d.unattributed, unattributed)
}

// findings emits a 1 for each finding flagged right now. A container flagged
// twice for the same thing (on two slices of one GPU) is one series.
func (b *builder) findings(active []attribution.Finding) {
	for _, f := range active {
		switch f.Kind {
		case attribution.FindingIdleAllocation:
			b.small(b.d.idleAllocation, 1, f.GPUUUID, f.Namespace, f.Pod, f.Container, f.Team)
		case attribution.FindingNoisyNeighbour:
			b.small(b.d.noisyNeighbour, 1, f.GPUUUID, f.Namespace, f.Pod, f.Container, f.Team)
		case attribution.FindingStarved:
			b.small(b.d.starved, 1, f.GPUUUID, f.Namespace, f.Pod, f.Container, f.Team, f.NoisyPod)
		case attribution.FindingMemoryGrowth:
			b.memoryGrowth(f)
		}
	}
}

// memoryGrowth emits a memory_growth finding's flag, rate and projection.
func (b *builder) memoryGrowth(f attribution.Finding) {
	m := f.Memory
	if m == nil {
		return // a finding read back from a ledger carries only its detail
	}
	lv := []string{f.GPUUUID, f.Namespace, f.Pod, f.Container, f.Team, m.Device, m.Scope, m.Severity}
	b.small(b.d.memoryGrowth, 1, lv...)
	b.small(b.d.memoryGrowthRate, m.RateMiBPerMin*mebibyte/60, lv...)
	if m.ExhaustionSeconds >= 0 {
		b.small(b.d.memoryExhaust, m.ExhaustionSeconds, lv...)
	}
}

// inventory emits gpu_info and mig_instance_info, once per GPU UUID.
func (b *builder) inventory(gpus []attribution.GPU, seen map[string]struct{}) {
	clear(seen)
	for _, g := range gpus {
		if _, dup := seen[g.UUID]; dup {
			continue
		}
		seen[g.UUID] = struct{}{}
		b.small(b.d.gpuInfo, 1, g.UUID, strconv.Itoa(g.Index), g.Model, strconv.FormatBool(g.MIGEnabled))
		for _, m := range g.MIG {
			if _, dup := seen[m.UUID]; dup {
				continue
			}
			seen[m.UUID] = struct{}{}
			b.small(b.d.migInfo, 1, g.UUID, m.UUID, m.Profile, strconv.Itoa(m.Slices))
		}
	}
}

// health emits the collector's own health series.
func (b *builder) health(meta CycleMeta, cycles uint64) {
	b.small(b.d.cycleDuration, meta.CycleDuration.Seconds())
	b.small(b.d.cycles, float64(cycles))
	for src, up := range meta.SourceUp {
		b.small(b.d.sourceUp, boolFloat(up), src)
	}
	for src, n := range meta.SourceErrors {
		b.small(b.d.sourceErrors, float64(n), src)
	}
	for kind, n := range meta.Anomalies {
		b.small(b.d.anomalies, float64(n), kind)
	}
	b.small(b.d.rowsWritten, float64(meta.LedgerRowsWritten))
	b.small(b.d.outboxPending, float64(meta.OutboxPending))
	b.small(b.d.outboxAge, meta.OutboxOldestAge.Seconds())
	b.small(b.d.batchesShipped, float64(meta.OutboxBatchesShipped))
	b.small(b.d.batchesFailed, float64(meta.OutboxBatchesFailed))
	b.small(b.d.writeErrors, float64(meta.LedgerWriteErrors))
	b.small(b.d.rowsDropped, float64(meta.LedgerRowsDropped))
}

func boolFloat(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
