package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/nodelabel/kubenode"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/quota/kubequota"
	"github.com/gpuledger/gpuledger/support/backoff"
)

// quotaService is serve --quota: the cluster's GPU quota objects watched
// (quota/kubequota) and their changes recorded into the cluster ledger
// (quota.Recorder), with the quota gauges and the recorder's health on
// serve's /metrics. When the price book prices carbon by a node label
// (energy.carbonIntensityByNodeLabel), it also records each node's value
// of that label (nodelabel.Recorder over a kubenode.Watcher), on the same
// interval and cluster access.
type quotaService struct {
	dsn      string
	interval time.Duration
	watcher  *kubequota.Watcher
	log      *slog.Logger

	failures prometheus.Counter
	changes  prometheus.Counter
	success  prometheus.Gauge

	// nodes watches the node label named by nodeKey; nil without one.
	nodes        *kubenode.Watcher
	nodeKey      string
	nodeFailures prometheus.Counter
	nodeChanges  prometheus.Counter
}

// errQuotaNeedsClickHouse: the embedded file has one writer, the
// collector, so serve records quota only into ClickHouse.
var errQuotaNeedsClickHouse = errors.New("serve --quota records quota changes into the cluster ledger: --ledger must be clickhouse://...; the embedded file's one writer is the collector")

// newQuotaService prepares serve --quota; nodeLabel, when not "", is the
// node label whose values are recorded too.
func newQuotaService(dsn, kubeconfig, teamLabel, nodeLabel string, interval time.Duration) (*quotaService, error) {
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if d.Scheme != ledger.SchemeClickHouse {
		return nil, errQuotaNeedsClickHouse
	}
	cfg, err := kubemeta.RESTConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("serve --quota: %w", err)
	}
	log := slog.Default().With("component", "quota")
	w, err := kubequota.New(cfg, teamLabel, log)
	if err != nil {
		return nil, fmt.Errorf("serve --quota: %w", err)
	}
	q := &quotaService{dsn: dsn, interval: interval, watcher: w, log: log,
		failures: counter("gpuledger_quota_record_failures_total",
			"Quota records that failed (the ledger or the quota objects could not be read or written); retried at the next interval."),
		changes: counter("gpuledger_quota_changes_recorded_total", "Quota changes (created, changed, deleted) written to the ledger."),
		success: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuledger_quota_record_success_timestamp_seconds",
			Help: "When the quota objects were last compared with the ledger and every change written (Unix seconds; 0 before the first)."}),
	}
	if nodeLabel != "" {
		if q.nodes, err = kubenode.New(cfg, nodeLabel, slog.Default().With("component", "nodelabels")); err != nil {
			return nil, fmt.Errorf("serve --quota: %w", err)
		}
		q.nodeKey = nodeLabel
		q.nodeFailures, q.nodeChanges = counter("gpuledger_node_label_record_failures_total",
			"Node label records that failed (the ledger or the nodes could not be read or written); retried at the next interval."),
			counter("gpuledger_node_label_changes_recorded_total",
				"Changes of the price book's carbon node label (a node labelled, relabelled or unlabelled) written to the ledger.")
	}
	return q, nil
}

// collectors are the quota gauges and the recorders' health series.
func (q *quotaService) collectors() []prometheus.Collector {
	out := []prometheus.Collector{q.watcher.Collector(), q.failures, q.changes, q.success}
	if q.nodes != nil {
		out = append(out, q.nodeFailures, q.nodeChanges)
	}
	return out
}

// run watches and records until ctx ends. The first record waits for the
// informers' first lists, so a quota not listed yet is never recorded as
// deleted; the ledger is opened (again, with backoff) until it answers.
func (q *quotaService) run(ctx context.Context) {
	// watch runs run in the background, logging its error; the
	// function it returns waits for run to return.
	watch := func(what string, run func(context.Context) error) func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := run(ctx); err != nil {
				q.log.Error("cannot "+what, "err", err)
			}
		}()
		return func() { <-done }
	}
	defer watch("watch GPU quota objects", q.watcher.Run)()
	if q.nodes != nil {
		defer watch("watch nodes", q.nodes.Run)()
	}
	if err := q.watcher.WaitForSync(ctx); err != nil {
		return
	}
	st, err := q.openLedger(ctx)
	if err != nil {
		return
	}
	defer st.Close()
	if q.nodes != nil {
		defer watch("record node labels", func(ctx context.Context) error { return q.recordNodeLabels(ctx, st) })()
	}
	qs, err := ledger.QuotaStore(st)
	if err != nil {
		q.log.Error("cannot record quota", "err", err)
		return
	}
	rec := &quota.Recorder{Store: qs, Snapshot: func() ([]quota.Entry, error) { return q.watcher.Snapshot(), nil },
		Unobserved: q.watcher.Unobserved, Logger: q.log, OnRecord: q.recorded}
	if err := rec.Run(ctx, q.interval); err != nil {
		q.log.Error("cannot record quota", "err", err)
	}
}

// recordNodeLabels records the nodes' values of the book's carbon node
// label until ctx ends, from the first list of the nodes on: a node not
// listed yet would read as one that lost its label.
func (q *quotaService) recordNodeLabels(ctx context.Context, st ledger.Store) error {
	ns, err := ledger.NodeLabelStore(st)
	if err != nil {
		return fmt.Errorf("cannot record node labels: %w", err)
	}
	if err := q.nodes.WaitForSync(ctx); err != nil {
		return nil // ctx ended
	}
	rec := &nodelabel.Recorder{Store: ns, Key: q.nodeKey, Snapshot: q.nodes.Snapshot}
	onRecord := func(n int, err error) {
		if err != nil {
			q.nodeFailures.Inc()
			return
		}
		q.nodeChanges.Add(float64(n))
	}
	return quota.Every(ctx, q.interval, "node label", rec.Record, onRecord, q.log.With("label", q.nodeKey))
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func (q *quotaService) recorded(n int, err error) {
	if err != nil {
		q.failures.Inc()
		return
	}
	q.changes.Add(float64(n))
	q.success.SetToCurrentTime()
}

// openLedger opens the cluster ledger for the recorder, retrying with
// backoff (ClickHouse may start after serve); an error only when ctx ends.
func (q *quotaService) openLedger(ctx context.Context) (ledger.Store, error) {
	for attempt := 0; ; attempt++ {
		st, err := ledger.Open(ctx, q.dsn, storeOpeners)
		if err == nil {
			return st, nil
		}
		q.failures.Inc()
		wait := backoff.Jittered(attempt, time.Second, time.Minute)
		q.log.Warn("cannot open the ledger to record quota; retrying", "in", wait.String(), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
