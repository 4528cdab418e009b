// Package quotaservice is `gpuledger serve --quota`: the cluster's GPU
// quota objects watched (quota/kubequota) and their changes recorded into
// the cluster ledger (quota.Recorder), with the quota gauges and the
// recorder's health for serve's /metrics. When the price book prices
// carbon by a node label (energy.carbonIntensityByNodeLabel), it also
// records each node's value of that label (nodelabel.Recorder over a
// kubenode.Watcher), on the same interval and cluster access.
package quotaservice

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/nodelabel/kubenode"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/quota/kubequota"
	"github.com/gpuledger/gpuledger/support/backoff"
)

// Config is what the service watches and where it records.
type Config struct {
	// Open opens the cluster ledger. Run calls it again, with backoff,
	// until it answers (the ledger may start after serve); what it returns
	// records quota as a quota.Store, node labels as a nodelabel.Store,
	// and is closed when Run returns.
	Open func(context.Context) (io.Closer, error)
	// Kube is the cluster's API server.
	Kube *rest.Config
	// TeamLabel is the label the quota objects' teams are read with.
	TeamLabel string
	// NodeLabel, when not "", is the node label whose values are recorded
	// too.
	NodeLabel string
	// Interval is how often the objects are compared with the ledger
	// (quota.MinRecordInterval to quota.MaxRecordInterval).
	Interval time.Duration
}

// Service watches and records; New prepares it, Run runs it.
type Service struct {
	cfg     Config
	watcher *kubequota.Watcher
	log     *slog.Logger

	failures prometheus.Counter
	changes  prometheus.Counter
	success  prometheus.Gauge

	// nodes watches cfg.NodeLabel; nil without one.
	nodes        *kubenode.Watcher
	nodeFailures prometheus.Counter
	nodeChanges  prometheus.Counter
}

// New prepares the service: the watchers are made, nothing is listed or
// opened until Run.
func New(cfg Config) (*Service, error) {
	log := slog.Default().With("component", "quota")
	w, err := kubequota.New(cfg.Kube, cfg.TeamLabel, log)
	if err != nil {
		return nil, err
	}
	s := newService(cfg, log)
	s.watcher = w
	if cfg.NodeLabel != "" {
		if s.nodes, err = kubenode.New(cfg.Kube, cfg.NodeLabel, slog.Default().With("component", "nodelabels")); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newService is the service's health series, without its watchers.
func newService(cfg Config, log *slog.Logger) *Service {
	s := &Service{cfg: cfg, log: log,
		failures: counter("gpuledger_quota_record_failures_total",
			"Quota records that failed (the ledger or the quota objects could not be read or written); retried at the next interval."),
		changes: counter("gpuledger_quota_changes_recorded_total", "Quota changes (created, changed, deleted) written to the ledger."),
		success: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuledger_quota_record_success_timestamp_seconds",
			Help: "When the quota objects were last compared with the ledger and every change written (Unix seconds; 0 before the first)."}),
	}
	if cfg.NodeLabel != "" {
		s.nodeFailures, s.nodeChanges = counter("gpuledger_node_label_record_failures_total",
			"Node label records that failed (the ledger or the nodes could not be read or written); retried at the next interval."),
			counter("gpuledger_node_label_changes_recorded_total",
				"Changes of the price book's carbon node label (a node labelled, relabelled or unlabelled) written to the ledger.")
	}
	return s
}

// Collectors are the quota gauges and the recorders' health series.
func (s *Service) Collectors() []prometheus.Collector {
	out := []prometheus.Collector{s.watcher.Collector(), s.failures, s.changes, s.success}
	if s.nodes != nil {
		out = append(out, s.nodeFailures, s.nodeChanges)
	}
	return out
}

// Run watches and records until ctx ends. The first record waits for the
// informers' first lists, so a quota not listed yet is never recorded as
// deleted; the ledger is opened (again, with backoff) until it answers.
func (s *Service) Run(ctx context.Context) {
	// watch runs run in the background, logging its error; the
	// function it returns waits for run to return.
	watch := func(what string, run func(context.Context) error) func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := run(ctx); err != nil {
				s.log.Error("cannot "+what, "err", err)
			}
		}()
		return func() { <-done }
	}
	defer watch("watch GPU quota objects", s.watcher.Run)()
	if s.nodes != nil {
		defer watch("watch nodes", s.nodes.Run)()
	}
	if err := s.watcher.WaitForSync(ctx); err != nil {
		return
	}
	st, err := s.openLedger(ctx)
	if err != nil {
		return
	}
	defer st.Close()
	if s.nodes != nil {
		defer watch("record node labels", func(ctx context.Context) error { return s.recordNodeLabels(ctx, st) })()
	}
	qs, ok := st.(quota.Store)
	if !ok {
		s.log.Error("the ledger does not record quota changes; quota is not recorded")
		return
	}
	rec := &quota.Recorder{Store: qs, Snapshot: func() ([]quota.Entry, error) { return s.watcher.Snapshot(), nil },
		Unobserved: s.watcher.Unobserved, Logger: s.log, OnRecord: s.recorded}
	if err := rec.Run(ctx, s.cfg.Interval); err != nil {
		s.log.Error("cannot record quota", "err", err)
	}
}

// recordNodeLabels records the nodes' values of the book's carbon node
// label until ctx ends, from the first list of the nodes on: a node not
// listed yet would read as one that lost its label.
func (s *Service) recordNodeLabels(ctx context.Context, st io.Closer) error {
	ns, ok := st.(nodelabel.Store)
	if !ok {
		return errors.New("the ledger does not record node labels; node labels are not recorded")
	}
	if err := s.nodes.WaitForSync(ctx); err != nil {
		return nil // ctx ended
	}
	rec := &nodelabel.Recorder{Store: ns, Key: s.cfg.NodeLabel, Snapshot: s.nodes.Snapshot}
	onRecord := func(n int, err error) {
		if err != nil {
			s.nodeFailures.Inc()
			return
		}
		s.nodeChanges.Add(float64(n))
	}
	return quota.Every(ctx, s.cfg.Interval, "node label", rec.Record, onRecord, s.log.With("label", s.cfg.NodeLabel))
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// recorded is the quota recorder's OnRecord: its health series.
func (s *Service) recorded(n int, err error) {
	if err != nil {
		s.failures.Inc()
		return
	}
	s.changes.Add(float64(n))
	s.success.SetToCurrentTime()
}

// openLedger opens the cluster ledger for the recorder, retrying with
// backoff (ClickHouse may start after serve), each failure counted; an
// error only when ctx ends.
func (s *Service) openLedger(ctx context.Context) (io.Closer, error) {
	for attempt := 0; ; attempt++ {
		st, err := s.cfg.Open(ctx)
		if err == nil {
			return st, nil
		}
		s.failures.Inc()
		wait := backoff.Jittered(attempt, time.Second, time.Minute)
		s.log.Warn("cannot open the ledger to record quota; retrying", "in", wait.String(), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
