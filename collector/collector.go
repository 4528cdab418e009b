package collector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/collector/nvmlsource"
	"github.com/gpuledger/gpuledger/collector/podresources"
)

// Source names used in health metrics and Observation.Degraded.
const (
	SourceNVML         = "nvml"
	SourceDCGM         = "dcgm"
	SourcePodResources = "podresources"
	SourceKubeMeta     = "kubemeta"
	SourceProcfs       = "procfs"
)

// Sources are the collector's inputs. DCGM may be nil (NVML alone).
type Sources struct {
	NVML  *nvmlSourceT
	DCGM  *dcgmsource.Source
	Pods  podresources.Lister
	Meta  kubemeta.Source
	Procs ownerResolver
}

type nvmlSourceT = nvmlsource.Source

// Sink receives what each cycle produced: closed ledger rows and ended
// findings. The embedded ledger and the CSV writers are sinks.
type Sink interface {
	Write(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error
}

// PinSink is a Sink that also keeps annotation pins (the embedded ledger),
// so that a restarted collector charges by the annotation values its
// predecessor first observed (attribution.Engine.RestorePins). Saving a
// pin again must change nothing: the first pin per key wins. ForgetPins
// drops the pins of pods keep does not name.
type PinSink interface {
	Sink
	SavePins(ctx context.Context, pins []attribution.AnnotationPin) error
	ForgetPins(ctx context.Context, keep func(podUID string) bool) (int, error)
}

// pinPruneEvery is how often, on the collector's clock, the pins of pods
// that are gone are dropped from the PinSinks.
const pinPruneEvery = time.Hour

// AnomalyMalformedCgroupLine counts lines of /proc/<pid>/cgroup files that
// could not be parsed and were skipped. It sits beside attribution's own
// anomaly kinds in gpuledger_attribution_anomalies_total.
const AnomalyMalformedCgroupLine = "malformed_cgroup_line"

// malformedCounter is implemented by procfs.Resolver.
type malformedCounter interface {
	MalformedCgroupLines() (n uint64, example string)
}

// Collector runs collection cycles. It is not safe for concurrent Cycle calls.
type Collector struct {
	node    string
	cluster string
	clock   Clock
	src     Sources
	engine  *attribution.Engine
	exp     *exposition.Exporter
	sinks   []Sink
	log     *slog.Logger

	owners *ownerCache
	// malformedSeen is the resolver's malformed-line count already
	// reported as anomalies.
	malformedSeen uint64
	// pins are annotation pins not yet saved by every PinSink; they are
	// retried each cycle (saving is idempotent).
	pins []attribution.AnnotationPin
	// pinsPruned is when pins were last pruned (first: the first cycle).
	pinsPruned time.Time
	prev       time.Time
	health     health
	outbox     func() OutboxStatus
}

// Config holds the collector's own settings.
type Config struct {
	Node string
	// Cluster is stamped on every row and finding the collector writes
	// (collect --cluster): a node is (cluster, node) in the ledger. Empty
	// leaves them to the ledger's default cluster.
	Cluster string
	// Outbox, when set, reports the durable outbox's state each cycle for
	// the health metrics (rows pending, shipping, rows lost).
	Outbox func() OutboxStatus
	// StopsOnWriteError: the caller stops at the first failed write
	// (simulate does), so the log must not promise a retry.
	StopsOnWriteError bool
}

// OutboxStatus is the embedded ledger's outbox as the metrics show it.
type OutboxStatus struct {
	Pending                       uint64
	OldestAge                     time.Duration
	BatchesShipped, BatchesFailed uint64
	RowsDropped                   uint64
}

// New wires a collector. exp and sinks may be nil/empty.
func New(cfg Config, clock Clock, src Sources, engine *attribution.Engine, exp *exposition.Exporter, sinks []Sink, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.Default()
	}
	c := &Collector{
		node: cfg.Node, cluster: cfg.Cluster, clock: clock, src: src, engine: engine, exp: exp, sinks: sinks, log: log,
		owners: newOwnerCache(src.Procs),
		health: newHealth(log),
		outbox: cfg.Outbox,
	}
	c.health.stops = cfg.StopsOnWriteError
	return c
}

// Cycle reads every source once and attributes the window since the previous
// cycle. Source failures are counted and logged once per streak; only a sink
// failure is returned as an error (the rows are still in the result).
func (c *Collector) Cycle(ctx context.Context) (attribution.CycleResult, error) {
	began := time.Now() // wall time, for the cycle-duration health metric only
	obs := c.observe(ctx)
	res := c.engine.Observe(obs)
	err := c.emit(ctx, res, obs, time.Since(began))
	return res, err
}

// Flush closes the open ledger interval at the last cycle's time and writes
// what it produced (used at the end of a simulation and on shutdown).
func (c *Collector) Flush(ctx context.Context) (attribution.CycleResult, error) {
	res := c.engine.Flush(c.prev)
	return res, c.writeSinks(ctx, res)
}

// Stop ends a run at the clock's current time, the termination instant:
// one last observation covers the seconds since the previous cycle, then
// the open ledger interval is closed there and written, so a collector
// stopped mid-interval (a node scaled down) leaves every second up to its
// end in the ledger. Before any cycle there is nothing to close.
func (c *Collector) Stop(ctx context.Context) (attribution.CycleResult, error) {
	if c.prev.IsZero() {
		return attribution.CycleResult{}, nil
	}
	if c.clock.Now().After(c.prev) {
		if _, err := c.Cycle(ctx); err != nil {
			c.log.Error("last cycle before stopping failed", "err", err)
		}
	}
	return c.Flush(ctx)
}

func (c *Collector) observe(ctx context.Context) attribution.Observation {
	now := c.clock.Now()
	prev := c.prev
	if prev.IsZero() {
		prev = now
	}
	c.prev = now
	obs := attribution.Observation{Node: c.node, Prev: prev, Time: now, Degraded: map[string]bool{}}

	if c.src.NVML != nil {
		rd, err := c.src.NVML.Read(ctx, now)
		c.health.report(SourceNVML, err)
		for _, e := range rd.Errors {
			c.health.count(SourceNVML, e)
		}
		if err != nil {
			obs.Degraded[SourceNVML] = true
		}
		obs.GPUs, obs.Processes, obs.Samples = rd.GPUs, rd.Processes, rd.Samples
	} else {
		obs.Degraded[SourceNVML] = true
	}
	if c.src.DCGM != nil {
		vals, err := c.src.DCGM.Read(ctx)
		c.health.report(SourceDCGM, err)
		if err == nil && !c.src.DCGM.Available() {
			// No libdcgm or no host engine: the source logged it once;
			// source_up{source="dcgm"} says so for as long as it lasts.
			c.health.up[SourceDCGM] = false
		}
		if err != nil {
			obs.Degraded[SourceDCGM] = true
		} else if n := dcgmsource.Attach(obs.GPUs, vals); n > 0 {
			c.health.count(SourceDCGM, fmt.Errorf("%d DCGM entities matched no NVML device", n))
		}
	}
	if c.src.Pods != nil {
		allocs, err := c.src.Pods.List(ctx)
		c.health.report(SourcePodResources, err)
		if err != nil {
			obs.Degraded[SourcePodResources] = true
		} else if al, ok := c.src.Pods.(podresources.AllocatableLister); ok {
			// Cached by the client: a read at most every so many cycles.
			ids, aerr := al.Allocatable(ctx, allocs)
			if aerr != nil {
				c.health.count(SourcePodResources, aerr)
			}
			obs.AllocatableIDs = ids
		}
		obs.Allocations = allocs
	}
	if c.src.Meta != nil {
		meta, err := c.src.Meta.Snapshot(ctx)
		c.health.report(SourceKubeMeta, err)
		if err != nil {
			obs.Degraded[SourceKubeMeta] = true
		}
		obs.Metadata = meta
	}
	c.resolveOwners(&obs)
	return obs
}

// resolveOwners fills Process.Owner through the PID cache. Samples may name
// PIDs that exited within the cycle; those are resolved from the cache too so
// the engine can look them up by PID.
func (c *Collector) resolveOwners(obs *attribution.Observation) {
	if c.src.Procs == nil {
		obs.Degraded[SourceProcfs] = true
		return
	}
	// A PID whose container the metadata no longer lists is read again
	// when next seen: its number may now belong to another container.
	c.owners.retireGone(obs)
	var firstErr error
	for i := range obs.Processes {
		p := &obs.Processes[i]
		o, err := c.owners.resolve(p.PID)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("cannot resolve PID %d on %s: %w", p.PID, p.Device, err)
		}
		p.Owner = o
	}
	known := make(map[uint32]bool, len(obs.Processes))
	for _, p := range obs.Processes {
		known[p.PID] = true
	}
	for _, s := range obs.Samples {
		if known[s.PID] {
			continue
		}
		known[s.PID] = true
		o := c.owners.lookup(s.PID)
		// A sampled PID that is no longer running still needs an owner:
		// hand it to the engine as a process with no memory.
		obs.Processes = append(obs.Processes, attribution.Process{PID: s.PID, GPU: s.GPU, Device: s.GPU, Owner: o, Exited: true})
	}
	c.owners.endCycle()
	c.health.report(SourceProcfs, firstErr)
	c.reportMalformedCgroups()
}

// reportMalformedCgroups counts the cgroup lines the resolver skipped since
// the last cycle as anomalies, logged once: a kernel or runtime that writes
// them does so for every process.
func (c *Collector) reportMalformedCgroups() {
	mc, ok := c.src.Procs.(malformedCounter)
	if !ok {
		return
	}
	n, example := mc.MalformedCgroupLines()
	if n <= c.malformedSeen {
		return
	}
	c.health.anomaly(attribution.Anomaly{Kind: AnomalyMalformedCgroupLine, Key: "procfs", Detail: example}, n-c.malformedSeen)
	c.malformedSeen = n
}

func (c *Collector) emit(ctx context.Context, res attribution.CycleResult, obs attribution.Observation, took time.Duration) error {
	for _, a := range res.Anomalies {
		c.health.anomaly(a, 1)
	}
	err := c.writeSinks(ctx, res)
	c.prunePins(ctx, obs)
	if c.exp != nil {
		meta := c.health.meta(obs, took)
		if c.outbox != nil {
			o := c.outbox()
			meta.OutboxPending, meta.OutboxOldestAge = o.Pending, o.OldestAge
			meta.OutboxBatchesShipped, meta.OutboxBatchesFailed = o.BatchesShipped, o.BatchesFailed
			meta.LedgerRowsDropped = o.RowsDropped
		}
		c.exp.Update(res, meta)
	}
	return err
}

func (c *Collector) writeSinks(ctx context.Context, res attribution.CycleResult) (firstErr error) {
	// Pins before rows, so that a restart re-pins by what the rows were
	// charged by. A failed save does not hold the rows back (they are the
	// ledger); the pins stay in memory and are saved again next cycle, so
	// the window in which a restart could re-pin is one failed cycle.
	firstErr = c.savePins(ctx, res.NewPins)
	if len(res.Rows) == 0 && len(res.Findings) == 0 {
		return firstErr
	}
	defer func() {
		if firstErr == nil && c.health.writeDown {
			c.health.writeDown = false
			c.log.Info("ledger writable again")
		}
	}()
	if c.cluster != "" {
		for i := range res.Rows {
			res.Rows[i].Cluster = c.cluster
		}
		for i := range res.Findings {
			res.Findings[i].Cluster = c.cluster
		}
	}
	for _, s := range c.sinks {
		if err := s.Write(ctx, res.Rows, res.Findings); err != nil {
			c.health.writeFailed(err)
			if firstErr == nil {
				firstErr = fmt.Errorf("cannot write ledger rows: %w", err)
			}
		}
	}
	c.health.rowsWritten += uint64(len(res.Rows))
	return firstErr
}

// savePins hands the cycle's new pins, and any a sink failed to save
// before, to every PinSink. Pins stay pending until all of them succeed.
func (c *Collector) savePins(ctx context.Context, fresh []attribution.AnnotationPin) error {
	c.pins = append(c.pins, fresh...)
	if len(c.pins) == 0 {
		return nil
	}
	var firstErr error
	for _, s := range c.sinks {
		ps, ok := s.(PinSink)
		if !ok {
			continue
		}
		if err := ps.SavePins(ctx, c.pins); err != nil {
			c.health.writeFailed(err)
			if firstErr == nil {
				firstErr = fmt.Errorf("cannot save annotation pins: %w", err)
			}
		}
	}
	if firstErr == nil {
		c.pins = nil
	}
	return firstErr
}

// prunePins drops, every pinPruneEvery, the pins of pods this cycle's
// metadata no longer lists. Pod UIDs are never reused, so such a pin can
// never apply again. Only a complete view may prune: with the metadata
// degraded or pins still unsaved, nothing is dropped.
func (c *Collector) prunePins(ctx context.Context, obs attribution.Observation) {
	if c.pinsPruned.IsZero() {
		c.pinsPruned = obs.Time
		return
	}
	if obs.Time.Sub(c.pinsPruned) < pinPruneEvery || c.src.Meta == nil || obs.Degraded[SourceKubeMeta] || len(c.pins) > 0 {
		return
	}
	c.pinsPruned = obs.Time
	live := make(map[string]bool, len(obs.Metadata.Pods))
	for _, p := range obs.Metadata.Pods {
		live[p.UID] = true
	}
	for _, s := range c.sinks {
		ps, ok := s.(PinSink)
		if !ok {
			continue
		}
		n, err := ps.ForgetPins(ctx, func(uid string) bool { return live[uid] })
		if err != nil {
			c.log.Warn("cannot drop annotation pins of pods that are gone; retrying next hour", "err", err)
			continue
		}
		if n > 0 {
			c.log.Debug("dropped annotation pins of pods that are gone", "pins", n)
		}
	}
}

// Run cycles every interval on the collector's clock until ctx ends, then
// flushes. It is the DaemonSet loop; simulations call Cycle directly.
func (c *Collector) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := c.Cycle(ctx); err != nil {
			c.log.Error("cycle failed", "err", err)
		}
		select {
		case <-ctx.Done():
			_, err := c.Stop(context.WithoutCancel(ctx))
			return err
		case <-t.C:
		}
	}
}
