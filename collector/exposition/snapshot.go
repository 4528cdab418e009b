package exposition

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuledger/gpuledger/attribution"
)

// builder builds the metrics of one snapshot.
type builder struct {
	d       *descs
	metrics []prometheus.Metric
	lv      []string // label value buffer, reused for every series

	bad      int // series left out for invalid label values
	firstErr error
}

// scratch holds the de-duplication sets Update reuses across cycles.
type scratch struct {
	findings map[findingKey]struct{}
	gpus     map[string]struct{}
}

func newScratch() scratch {
	return scratch{findings: make(map[findingKey]struct{}), gpus: make(map[string]struct{})}
}

// findingKey is the label set of one finding gauge.
type findingKey struct {
	kind, gpu, namespace, pod, container, team, noisyPod string
}

func (b *builder) emit(m prometheus.Metric, err error) {
	if err != nil {
		b.noteBad(err)
		return
	}
	b.metrics = append(b.metrics, m)
}

// noteBad counts a series left out. Label values come from the node (pod
// names, label values); a bad one costs that series, never the scrape.
func (b *builder) noteBad(err error) {
	b.bad++
	if b.firstErr == nil {
		b.firstErr = err
	}
}

func (b *builder) gauge(desc *prometheus.Desc, v float64, lv ...string) {
	b.emit(prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, lv...))
}

func (b *builder) counter(desc *prometheus.Desc, v float64, lv ...string) {
	b.emit(prometheus.NewConstMetric(desc, prometheus.CounterValue, v, lv...))
}

// labelSet returns the cached label set of a series key, building it on the
// key's first emission. A key with invalid label values is reported once,
// when it is first seen, and emits nothing while it lives.
func (b *builder) labelSet(ls **labelSet, desc *prometheus.Desc, created time.Time, lv []string) *labelSet {
	if *ls == nil {
		*ls = newLabelSet(desc, created, lv)
		if (*ls).err != nil {
			b.noteBad((*ls).err)
		}
	}
	return *ls
}

// containers emits the container series of the keys seen in the latest
// cycle and forgets every other key.
func (b *builder) containers(t *totals) {
	for k, e := range t.containers {
		if e.seen != t.cycle {
			delete(t.containers, k)
			continue
		}
		lv := append(b.lv[:0], k.gpu, k.slice, k.mode, k.namespace, k.pod, k.container, k.team)
		lv = append(lv, e.podLabels...)
		// allocated, energy, ratio and memory share label names, so one
		// label set serves all four.
		if ls := b.labelSet(&e.labels, b.d.allocated, e.created, lv); ls.err == nil {
			b.metrics = append(b.metrics,
				newCounterSample(b.d.allocated, ls, e.allocated),
				newCounterSample(b.d.energy, ls, e.energy),
				newGaugeSample(b.d.ratio, ls, e.share),
				newGaugeSample(b.d.memory, ls, e.memBytes))
		}
		for i := range e.used {
			u := &e.used[i]
			if u.labels == nil {
				lv = append(lv[:len(containerLabels)], u.method)
				lv = append(lv, e.podLabels...)
			}
			if ls := b.labelSet(&u.labels, b.d.used, u.created, lv); ls.err == nil {
				b.metrics = append(b.metrics, newCounterSample(b.d.used, ls, u.total))
			}
		}
		b.lv = lv
	}
}

// gpus emits the per-GPU counters of the GPUs seen in the latest cycle and
// forgets every other GPU.
func (b *builder) gpus(t *totals) {
	for k, e := range t.gpus {
		if e.seen != t.cycle {
			delete(t.gpus, k)
			continue
		}
		b.lv = append(b.lv[:0], k.uuid, k.model)
		if ls := b.labelSet(&e.labels, b.d.capacity, e.created, b.lv); ls.err == nil {
			b.metrics = append(b.metrics,
				newCounterSample(b.d.capacity, ls, e.capacity),
				newCounterSample(b.d.idle, ls, e.idle),
				newCounterSample(b.d.unallocated, ls, e.unallocated),
				newCounterSample(b.d.unattributed, ls, e.unattributed))
		}
	}
}

// findings emits a 1 for each finding flagged right now. A container flagged
// twice for the same thing (on two slices of one GPU) is one series.
func (b *builder) findings(active []attribution.Finding, s *scratch) {
	clear(s.findings)
	for _, f := range active {
		k := findingKey{kind: f.Kind, gpu: f.GPUUUID, namespace: f.Namespace, pod: f.Pod, container: f.Container, team: f.Team}
		var desc *prometheus.Desc
		switch f.Kind {
		case attribution.FindingIdleAllocation:
			desc = b.d.idleAllocation
		case attribution.FindingNoisyNeighbour:
			desc = b.d.noisyNeighbour
		case attribution.FindingStarved:
			desc = b.d.starved
			k.noisyPod = f.NoisyPod
		default:
			continue
		}
		if _, dup := s.findings[k]; dup {
			continue
		}
		s.findings[k] = struct{}{}
		if desc == b.d.starved {
			b.gauge(desc, 1, k.gpu, k.namespace, k.pod, k.container, k.team, k.noisyPod)
		} else {
			b.gauge(desc, 1, k.gpu, k.namespace, k.pod, k.container, k.team)
		}
	}
}

// inventory emits gpu_info and mig_instance_info, once per GPU UUID.
func (b *builder) inventory(gpus []attribution.GPU, s *scratch) {
	clear(s.gpus)
	for _, g := range gpus {
		if _, dup := s.gpus[g.UUID]; dup {
			continue
		}
		s.gpus[g.UUID] = struct{}{}
		b.gauge(b.d.gpuInfo, 1, g.UUID, strconv.Itoa(g.Index), g.Model, strconv.FormatBool(g.MIGEnabled))
		for _, m := range g.MIG {
			if _, dup := s.gpus[m.UUID]; dup {
				continue
			}
			s.gpus[m.UUID] = struct{}{}
			b.gauge(b.d.migInfo, 1, g.UUID, m.UUID, m.Profile, strconv.Itoa(m.Slices))
		}
	}
}

// health emits the collector's own health series.
func (b *builder) health(meta CycleMeta, cycles uint64) {
	b.gauge(b.d.cycleDuration, meta.CycleDuration.Seconds())
	b.counter(b.d.cycles, float64(cycles))
	for src, up := range meta.SourceUp {
		b.gauge(b.d.sourceUp, boolFloat(up), src)
	}
	for src, n := range meta.SourceErrors {
		b.counter(b.d.sourceErrors, float64(n), src)
	}
	for kind, n := range meta.Anomalies {
		b.counter(b.d.anomalies, float64(n), kind)
	}
	b.counter(b.d.rowsWritten, float64(meta.LedgerRowsWritten))
	b.gauge(b.d.outboxPending, float64(meta.OutboxPending))
	b.gauge(b.d.outboxAge, meta.OutboxOldestAge.Seconds())
}

func boolFloat(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
