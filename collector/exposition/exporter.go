package exposition

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuledger/gpuledger/attribution"
)

// Options configure an Exporter.
type Options struct {
	// BuildVersion and BuildRevision label gpuledger_build_info.
	BuildVersion, BuildRevision string
	// PodLabelAllowlist lists pod label keys copied onto the container
	// series as label_<key with every character outside [a-zA-Z0-9_]
	// replaced by _>. Opt-in: each key adds a label to ~5 series per
	// container slice.
	PodLabelAllowlist []string
}

// CycleMeta is what the collector knows about a cycle beyond attribution's
// result: inventory for the _info series and its own health.
type CycleMeta struct {
	GPUs []attribution.GPU     // for gpu_info and mig_instance_info
	Pods []attribution.PodMeta // for the pod label allowlist, by namespace/pod

	CycleDuration time.Duration     // how long the cycle took
	SourceUp      map[string]bool   // "nvml", "dcgm", "podresources", "kubemeta", "procfs"
	SourceErrors  map[string]uint64 // cumulative errors by source
	Anomalies     map[string]uint64 // cumulative anomalies by kind

	LedgerRowsWritten uint64
	OutboxPending     uint64
	OutboxOldestAge   time.Duration
}

// Exporter is the collector's Prometheus exposition: a prometheus.Collector
// that serves the snapshot built by the latest Update.
type Exporter struct {
	node      string
	log       *slog.Logger
	d         descs
	buildInfo prometheus.Metric // nil when the build labels are invalid

	// mu serialises Update; scrapes never take it.
	mu      sync.Mutex
	totals  *totals
	pods    *podLabelIndex
	scratch scratch
	cycles  uint64
	lastLen int

	snap    atomic.Pointer[snapshot]
	reg     *prometheus.Registry
	handler http.Handler
}

var _ prometheus.Collector = (*Exporter)(nil)

// snapshot is the immutable set of metrics one Update built.
type snapshot struct {
	metrics []prometheus.Metric
}

// New returns an Exporter for node. Until the first Update it serves only
// gpuledger_build_info.
func New(node string, opts Options) *Exporter {
	log := slog.Default().With("component", "exposition")
	list := newAllowlist(opts.PodLabelAllowlist, log)
	e := &Exporter{
		node:    node,
		log:     log,
		d:       newDescs(node, list.names),
		totals:  newTotals(),
		pods:    newPodLabelIndex(list),
		scratch: newScratch(),
	}
	e.buildInfo = e.newBuildInfo(opts)
	e.reg = prometheus.NewRegistry()
	e.reg.MustRegister(e,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e.handler = promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorLog:          promLogger{log},
	})
	return e
}

func (e *Exporter) newBuildInfo(opts Options) prometheus.Metric {
	version, revision := opts.BuildVersion, opts.BuildRevision
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	m, err := prometheus.NewConstMetric(e.d.buildInfo, prometheus.GaugeValue, 1, version, revision, runtime.Version())
	if err != nil {
		e.log.Error("cannot build gpuledger_build_info", "version", version, "revision", revision, "err", err)
		return nil
	}
	return m
}

// Registry returns the registry serving this Exporter together with the Go
// runtime and process collectors.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Handler serves the Registry, negotiating OpenMetrics where the scraper
// asks for it.
func (e *Exporter) Handler() http.Handler { return e.handler }

// Describe sends every descriptor the Exporter can emit.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range e.d.all() {
		ch <- d
	}
}

// Collect sends the metrics of the latest snapshot. It does no other work, so
// a scrape never waits for the sources or for an Update in progress.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	if e.buildInfo != nil {
		ch <- e.buildInfo
	}
	s := e.snap.Load()
	if s == nil {
		return
	}
	for _, m := range s.metrics {
		ch <- m
	}
}

// Update folds one cycle into the running totals, builds the next snapshot
// and swaps it in. The collector calls it once per cycle; scrapes see either
// the previous snapshot or this one, never a mix.
func (e *Exporter) Update(res attribution.CycleResult, meta CycleMeta) {
	e.mu.Lock()
	defer e.mu.Unlock()

	e.cycles++
	e.pods.load(meta.Pods)
	e.totals.add(res, e.pods)

	b := builder{d: &e.d, metrics: make([]prometheus.Metric, 0, e.lastLen)}
	b.containers(e.totals)
	b.gpus(e.totals)
	b.findings(res.Active, &e.scratch)
	b.inventory(meta.GPUs, &e.scratch)
	b.health(meta, e.cycles)
	if b.bad > 0 {
		e.log.Warn("series with invalid label values left out of the exposition",
			"count", b.bad, "first_err", b.firstErr)
	}

	e.lastLen = len(b.metrics)
	e.snap.Store(&snapshot{metrics: b.metrics})
}

// promLogger sends promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("cannot serve metrics", "err", fmt.Sprint(v...))
}
