// Package shipper moves ledger rows from a node's durable outbox (the
// embedded store) to the cluster ledger (ClickHouse). Shipping is at least
// once: a batch is marked shipped only after the sink stored it, so a crash
// or outage anywhere in between sends it again, and the sink's
// deterministic keys turn the repeat into a no-op (exactly-once effect).
package shipper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/support/backoff"
)

// Outbox is the shipping side of the embedded store (filestore.FileStore).
type Outbox interface {
	// NextBatch returns up to max unshipped rows and findings for sink in
	// outbox order; an empty batch when nothing is pending.
	NextBatch(ctx context.Context, sink string, max int) (filestore.OutboxBatch, error)
	// MarkShipped records that sink stored everything up to lastSeq.
	MarkShipped(ctx context.Context, sink string, lastSeq int64) error
	// OutboxStats counts what sink has not shipped and the end time of the
	// oldest of it.
	OutboxStats(ctx context.Context, sink string) (pending int64, oldest time.Time, err error)
}

// Sink stores batches; ledger.Store and *clickhouse.Store are Sinks.
type Sink interface {
	Append(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error
}

// RollupBuilder is a Sink with rollups to refresh for the hours a shipped
// batch touched (*clickhouse.Store declares it).
type RollupBuilder = ledger.RollupBuilder

// Options tune a Shipper.
type Options struct {
	// Sink names this destination in the outbox's shipped marks
	// (default "clickhouse").
	Sink string
	// BatchSize is the most rows and findings sent in one insert
	// (default 10000).
	BatchSize int
	// MaxBatches bounds one ShipOnce, so a large backlog is shipped in
	// steps that keep stats and rollups fresh (default 100).
	MaxBatches int
	// Interval is how long Run waits when the outbox is drained
	// (default 10s, or MinInterval when longer); Wake cuts it short, but
	// never below MinInterval.
	Interval time.Duration
	// MinInterval is the least time between the starts of two shipping
	// rounds while less than a full batch is pending (default 30s;
	// negative: none). Each round is at least one insert into each
	// ClickHouse table it writes, so this bounds a node's inserts, and a
	// fleet's are nodes / MinInterval at most, however often collectors
	// commit; a full batch (a backlog) ships at once.
	MinInterval time.Duration
	// WakeJitter delays the round a Wake asks for by a random time in
	// [0, WakeJitter) (default 20s; negative: none). Ledger intervals close
	// on the same minute on every node, so without it a cluster's
	// collectors would all insert in the same second.
	WakeJitter time.Duration
	// RetryBase and RetryMax bound Run's exponential backoff after a
	// failed round (defaults 1s and 1m), jittered.
	RetryBase, RetryMax time.Duration
	// RollupDelay is how long after an hour ends its rollup is rebuilt,
	// so rows still in flight from other nodes are usually in by then
	// (default 5m). A late row only costs a second rebuild.
	RollupDelay time.Duration
	// RollupJitter adds to RollupDelay this shipper's own random share of
	// it, drawn once in [0, RollupJitter) (default 5m; none when negative
	// or when RollupDelay is). Every collector of a cluster ships rows of
	// every hour and asks for its rollup: spread out, the first rebuilds
	// it and the others find it current after one cheap read of its
	// state, where at the same minute they would all rebuild it at once.
	RollupJitter time.Duration
	// Now is the clock for rollup delays and pending age (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Sink == "" {
		o.Sink = "clickhouse"
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 10000
	}
	if o.MaxBatches <= 0 {
		o.MaxBatches = 100
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.MinInterval < 0 {
		o.MinInterval = 0
	} else if o.MinInterval == 0 {
		o.MinInterval = 30 * time.Second
	}
	if o.WakeJitter < 0 {
		o.WakeJitter = 0
	} else if o.WakeJitter == 0 {
		o.WakeJitter = 20 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.RollupJitter < 0 || o.RollupDelay < 0 {
		o.RollupJitter = 0
	} else if o.RollupJitter == 0 {
		o.RollupJitter = 5 * time.Minute
	}
	if o.RollupDelay < 0 {
		o.RollupDelay = 0
	} else if o.RollupDelay == 0 {
		o.RollupDelay = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Stats are the shipper's counters and gauges for /metrics.
type Stats struct {
	BatchesShipped, BatchesFailed uint64
	RowsShipped, FindingsShipped  uint64
	// RowsPending counts unshipped rows and findings as of the last round;
	// OldestPending is the end time of the oldest of them (zero when
	// none) and OldestPendingAge its age by the shipper's clock.
	RowsPending      int64
	OldestPending    time.Time
	OldestPendingAge time.Duration
	RollupRebuilds   uint64
	RollupFailures   uint64
	LastError        string
}

// Shipper ships one outbox to one sink.
type Shipper struct {
	src  Outbox
	dst  Sink
	rb   RollupBuilder // dst, when it has rollups
	opts Options
	// rollupWait is RollupDelay plus this shipper's share of RollupJitter.
	rollupWait time.Duration
	log        *slog.Logger
	wake       chan struct{}

	round sync.Mutex // one ShipOnce at a time

	mu      sync.Mutex
	stats   Stats
	touched map[int64]bool // UTC hours with shipped rows whose rollup is due
}

// New returns a Shipper from src to dst.
func New(src Outbox, dst Sink, opts Options) *Shipper {
	opts.defaults()
	// The one ability that is optional on purpose: a sink that keeps its
	// rollups in step with its writes (or has none, as a test's) has
	// nothing to refresh, so a sink without RollupBuilder ships all the same.
	rb, _ := dst.(RollupBuilder)
	wait := opts.RollupDelay
	if opts.RollupJitter > 0 {
		wait += rand.N(opts.RollupJitter)
	}
	return &Shipper{src: src, dst: dst, rb: rb, opts: opts, rollupWait: wait, log: opts.Logger.With("sink", opts.Sink),
		wake: make(chan struct{}, 1), touched: map[int64]bool{}}
}

// Stats returns a snapshot of the counters.
func (s *Shipper) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	if !st.OldestPending.IsZero() {
		st.OldestPendingAge = max(0, s.opts.Now().Sub(st.OldestPending))
	}
	return st
}

// Wake makes a waiting Run ship now (after the collector committed rows).
func (s *Shipper) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run ships until ctx is done: drained outbox, wait Interval (or Wake);
// failed round, wait a growing, jittered backoff. A round starts no sooner
// than MinInterval after the previous one unless a full batch is pending,
// and a Wake's round is delayed by up to WakeJitter. It returns nil when
// ctx ends.
func (s *Shipper) Run(ctx context.Context) error {
	failures := 0
	for {
		started := time.Now()
		n, err := s.ShipOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if n > 0 {
			failures = 0 // progress: back off from scratch
		}
		notBefore := started.Add(s.opts.MinInterval)
		// The idle poll ships too: it waits out MinInterval like a Wake.
		wait, wakeable := max(s.opts.Interval, time.Until(notBefore)), true
		switch pending := s.Stats().RowsPending; {
		case err != nil:
			wait, wakeable = backoff.Jittered(failures, s.opts.RetryBase, s.opts.RetryMax), false
			failures++
			s.log.Warn("ledger shipping failed, will retry", "attempt", failures, "wait", wait, "err", err)
		case pending >= int64(s.opts.BatchSize):
			// A backlog: ship the next full batch at once.
			s.recovered(failures)
			failures, wait = 0, 0
		case pending > 0:
			// Rows came in during the round: they wait for the next one.
			s.recovered(failures)
			failures, wait, wakeable = 0, max(time.Until(notBefore), 0)+s.jitter(), false
		default:
			s.recovered(failures)
			failures = 0
		}
		if wait > 0 && !s.sleep(ctx, wait, wakeable, notBefore) {
			return nil
		}
	}
}

func (s *Shipper) recovered(failures int) {
	if failures > 0 {
		s.log.Info("ledger shipping recovered", "after_failures", failures)
	}
}

// jitter is a random delay in [0, WakeJitter).
func (s *Shipper) jitter() time.Duration {
	if s.opts.WakeJitter <= 0 {
		return 0
	}
	return rand.N(s.opts.WakeJitter)
}

// sleep waits d, or less when woken (only when wakeable): a Wake ends the
// wait at notBefore plus a jitter, or a jitter from now when notBefore
// has passed, whichever is later, and never after d (Run's d is never
// shorter than the time to notBefore). It returns false when ctx is done.
func (s *Shipper) sleep(ctx context.Context, d time.Duration, wakeable bool, notBefore time.Time) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	deadline := time.Now().Add(d)
	var wake <-chan struct{}
	if wakeable {
		wake = s.wake
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-wake:
			wake = nil // one Wake sets the time; later ones change nothing
			at := time.Now().Add(s.jitter())
			if nb := notBefore.Add(s.jitter()); nb.After(at) {
				at = nb
			}
			if at.Before(deadline) {
				t.Reset(time.Until(at))
			}
		}
	}
}

// ShipOnce ships pending batches (at most MaxBatches) and returns how many
// rows and findings it shipped. A batch is marked shipped only after the
// sink stored it. Rollups of closed hours the batches touched are rebuilt
// afterwards; a rebuild failure is counted and logged, not returned, since
// the rows themselves are safe and the hour is retried next round.
func (s *Shipper) ShipOnce(ctx context.Context) (shipped int, err error) {
	s.round.Lock()
	defer s.round.Unlock()
	defer s.refreshPending(ctx)
	defer func() { s.setLastError(err) }()
	for i := 0; i < s.opts.MaxBatches; i++ {
		n, err := s.shipBatch(ctx)
		shipped += n
		if err != nil {
			return shipped, err
		}
		if n < s.opts.BatchSize {
			break
		}
	}
	s.rebuildRollups(ctx)
	return shipped, nil
}

// shipBatch ships the next batch and returns its size (0 when drained).
func (s *Shipper) shipBatch(ctx context.Context) (int, error) {
	b, err := s.src.NextBatch(ctx, s.opts.Sink, s.opts.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("cannot read outbox for sink %q: %w", s.opts.Sink, err)
	}
	n := len(b.Rows) + len(b.Findings)
	if n == 0 {
		return 0, nil
	}
	if err := s.dst.Append(ctx, b.Rows, b.Findings); err != nil {
		s.mu.Lock()
		s.stats.BatchesFailed++
		s.mu.Unlock()
		return 0, fmt.Errorf("cannot ship outbox batch %d-%d (%d rows, %d findings) to %q: %w",
			b.FirstSeq, b.LastSeq, len(b.Rows), len(b.Findings), s.opts.Sink, err)
	}
	s.mu.Lock()
	s.stats.BatchesShipped++
	s.stats.RowsShipped += uint64(len(b.Rows))
	s.stats.FindingsShipped += uint64(len(b.Findings))
	for i := 0; s.rb != nil && i < len(b.Rows); i++ {
		u := b.Rows[i].IntervalStart.Unix()
		s.touched[u-((u%3600)+3600)%3600] = true
	}
	s.mu.Unlock()
	// Stored but not marked: a failure here re-sends the batch next round,
	// which the sink's keys absorb.
	if err := s.src.MarkShipped(ctx, s.opts.Sink, b.LastSeq); err != nil {
		return n, fmt.Errorf("cannot mark outbox batch %d-%d shipped to %q (it will be sent again): %w",
			b.FirstSeq, b.LastSeq, s.opts.Sink, err)
	}
	return n, nil
}

// rebuildRollups refreshes the rollups of touched hours that closed more
// than RollupDelay (plus this shipper's share of RollupJitter) ago, one
// call per run of consecutive hours.
func (s *Shipper) rebuildRollups(ctx context.Context) {
	if s.rb == nil {
		return
	}
	cutoff := s.opts.Now().Add(-s.rollupWait).Unix()
	s.mu.Lock()
	var due []int64
	for h := range s.touched {
		if h+3600 <= cutoff {
			due = append(due, h)
		}
	}
	s.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i] < due[j] })
	for len(due) > 0 {
		n := 1
		for n < len(due) && due[n] == due[n-1]+3600 {
			n++
		}
		from, to := time.Unix(due[0], 0).UTC(), time.Unix(due[n-1]+3600, 0).UTC()
		err := s.rb.RebuildRollups(ctx, from, to)
		s.mu.Lock()
		if err != nil {
			s.stats.RollupFailures++
		} else {
			s.stats.RollupRebuilds++
			for _, h := range due[:n] {
				delete(s.touched, h)
			}
		}
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("cannot rebuild ledger rollups, will retry", "from", from, "to", to, "err", err)
			if errors.Is(err, context.Canceled) {
				return
			}
		}
		due = due[n:]
	}
}

func (s *Shipper) refreshPending(ctx context.Context) {
	pending, oldest, err := s.src.OutboxStats(ctx, s.opts.Sink)
	if err != nil {
		s.log.Debug("cannot read outbox stats", "err", err)
		return
	}
	s.mu.Lock()
	s.stats.RowsPending, s.stats.OldestPending = pending, oldest
	s.mu.Unlock()
}

func (s *Shipper) setLastError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.stats.LastError = err.Error()
	} else {
		s.stats.LastError = ""
	}
}
