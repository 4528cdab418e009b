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
	// Prices are the price book's rates per physical GPU-hour, exported as
	// gpuledger_price_per_gpu_hour{model,currency} so dashboards can show
	// a live cost rate consistent with the chargeback report.
	Prices []Price
}

// Price is one rate of the price book. Model "default" carries the
// book's default rate for models it does not list.
type Price struct {
	Model, Currency string
	PerGPUHour      float64
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
	LedgerWriteErrors uint64 // failed commits to the embedded ledger
	LedgerRowsDropped uint64 // rows lost after the retry buffer filled
	OutboxPending     uint64
	OutboxOldestAge   time.Duration

	OutboxBatchesShipped, OutboxBatchesFailed uint64
}

// Exporter is the collector's Prometheus exposition: a prometheus.Collector
// that serves the snapshot built by the latest Update, and an HTTP handler
// that writes the same snapshot straight into the text formats.
type Exporter struct {
	node      string
	log       *slog.Logger
	d         descs
	buildInfo *labelSet // nil when the build labels are invalid
	prices    []Price

	// mu serialises Update; scrapes never take it.
	mu      sync.Mutex
	totals  *totals
	pods    *podLabelIndex
	scratch scratch
	cycles  uint64

	snap    atomic.Pointer[snapshot]
	reg     *prometheus.Registry
	handler *scrapeHandler
}

var _ prometheus.Collector = (*Exporter)(nil)

// New returns an Exporter for node. Until the first Update it serves only
// gpuledger_build_info.
func New(node string, opts Options) *Exporter {
	log := slog.Default().With("component", "exposition")
	list := newAllowlist(opts.PodLabelAllowlist, log)
	e := &Exporter{
		node:   node,
		log:    log,
		d:      newDescs(node, list.names),
		totals: newTotals(),
		pods:   newPodLabelIndex(list),
		prices: append([]Price(nil), opts.Prices...),
	}
	e.scratch = newScratch(&e.d)
	e.buildInfo = e.newBuildInfo(opts)
	b := newBuilder(&e.d, 0, e.scratch.caches)
	b.buildInfo(e.buildInfo)
	b.prices(e.prices)
	e.snap.Store(b.snapshot())

	// The Go and process collectors are registered twice: with the
	// Exporter in the full registry (Registry, and Handler for the
	// protobuf formats), and alone in a small one that Handler's text
	// writer gathers next to the snapshot.
	goc := collectors.NewGoCollector()
	proc := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
	e.reg = prometheus.NewRegistry()
	e.reg.MustRegister(e, goc, proc)
	runtimeReg := prometheus.NewRegistry()
	runtimeReg.MustRegister(goc, proc)
	e.handler = newScrapeHandler(e, runtimeReg, e.reg)
	return e
}

func (e *Exporter) newBuildInfo(opts Options) *labelSet {
	version, revision := opts.BuildVersion, opts.BuildRevision
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	ls := newLabelSet(e.d.buildInfo.desc, time.Time{}, []string{version, revision, runtime.Version()})
	if ls.err != nil {
		e.log.Error("cannot build gpuledger_build_info", "version", version, "revision", revision, "err", ls.err)
		return nil
	}
	return ls
}

// Registry returns the registry serving this Exporter together with the Go
// runtime and process collectors. Handler serves exactly these; a collector
// registered here later is not served by Handler (serve the registry with
// promhttp.HandlerFor for that).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Handler serves /metrics. The text formats (Prometheus text 0.0.4 and
// OpenMetrics 1.0, negotiated exactly as promhttp would) are written
// straight from the snapshot, gzip-compressed when the scraper accepts it;
// the protobuf formats are served from the Registry through promhttp.
func (e *Exporter) Handler() http.Handler { return e.handler }

// Describe sends every descriptor the Exporter can emit.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range e.d.all() {
		ch <- f.desc
	}
}

// Collect sends the metrics of the latest snapshot. It does no other work, so
// a scrape never waits for the sources or for an Update in progress.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	for _, fs := range e.snap.Load().families {
		for _, s := range fs.samples {
			ch <- newMetric(fs.f, s)
		}
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

	b := newBuilder(&e.d, e.cycles, e.scratch.caches)
	b.buildInfo(e.buildInfo)
	b.prices(e.prices)
	b.totals(e.totals)
	b.findings(res.Active)
	b.inventory(meta.GPUs, e.scratch.gpus)
	b.health(meta, e.cycles)
	e.scratch.sweep(e.cycles)
	if b.bad > 0 {
		e.log.Warn("series with invalid label values left out of the exposition",
			"count", b.bad, "first_err", b.firstErr)
	}
	e.snap.Store(b.snapshot())
}

// promLogger sends promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("cannot serve metrics", "err", fmt.Sprint(v...))
}
