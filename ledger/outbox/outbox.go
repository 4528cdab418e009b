// Package outbox is the collector's durable sink: every row is committed
// to the node's embedded ledger first; when a cluster ledger is configured
// a shipper sends the committed rows on, at least once, with exactly-once
// effect through the rows' deterministic keys. It prunes the node file in
// the background and, on shutdown, drains what is pending before a
// deadline; what it cannot ship stays in the file and the next Open on the
// same file ships it.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/ledger/outbox/shipper"
	"github.com/gpuledger/gpuledger/support/backoff"
)

// Sink names the cluster ledger in the node file's shipped marks.
const Sink = "clickhouse"

// Options configure an Outbox.
type Options struct {
	// Path is the node's embedded ledger file.
	Path string
	// MaxBytes and Retention bound the file (see filestore.FileOptions).
	MaxBytes  int64
	Retention time.Duration
	// Remote is the cluster ledger rows are shipped to; nil keeps them on
	// the node. The Outbox closes it.
	Remote ledger.Store
	// PruneEvery is how often the file is pruned (default 5m).
	PruneEvery time.Duration
	// Shipper tunes the shipper (its Sink and Logger are set here).
	Shipper shipper.Options
	Logger  *slog.Logger
}

// Outbox is the node file plus, with a remote, its shipper.
type Outbox struct {
	store  *filestore.FileStore
	remote ledger.Store
	ship   *shipper.Shipper
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once
	closed sync.Once
	err    error // Close's
}

// Open opens (creating or migrating) the node file and starts the
// background work: shipping, from whatever an earlier process left
// unshipped, and pruning.
func Open(ctx context.Context, opts Options) (*Outbox, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = 5 * time.Minute
	}
	fo := filestore.FileOptions{MaxBytes: opts.MaxBytes, Retention: opts.Retention, Logger: opts.Logger, MoveAsideCorrupt: true}
	if opts.Remote != nil {
		fo.Sinks = []string{Sink}
	}
	store, err := filestore.OpenFile(ctx, opts.Path, fo)
	if err != nil {
		if opts.Remote != nil {
			opts.Remote.Close()
		}
		return nil, err
	}
	o := &Outbox{store: store, remote: opts.Remote, log: opts.Logger, done: make(chan struct{})}
	if opts.Remote != nil {
		so := opts.Shipper
		so.Sink, so.Logger = Sink, opts.Logger
		o.ship = shipper.New(store, opts.Remote, so)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.cancel = cancel
	go o.run(runCtx, opts.PruneEvery)
	return o, nil
}

// Store is the node file (annotation pins live there too).
func (o *Outbox) Store() *filestore.FileStore { return o.store }

// Shipping reports whether a cluster ledger is configured.
func (o *Outbox) Shipping() bool { return o.ship != nil }

// run ships (when a cluster ledger is set) and prunes the file every
// pruneEvery until stopped.
func (o *Outbox) run(ctx context.Context, pruneEvery time.Duration) {
	defer close(o.done)
	if o.ship != nil {
		shipped := make(chan struct{})
		go func() {
			defer close(shipped)
			if err := o.ship.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				o.log.Error("outbox shipper stopped", "err", err)
			}
		}()
		defer func() { <-shipped }()
	}
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			o.prune(ctx)
		}
	}
}

func (o *Outbox) prune(ctx context.Context) {
	_, err := o.store.Prune(ctx)
	switch {
	case err == nil:
	case !errors.Is(err, filestore.ErrOutboxFull):
		o.log.Error("cannot prune the node's ledger", "err", err, "path", o.store.Path())
	case o.ship == nil:
		o.log.Error("the node's ledger is over its disk bound; without a cluster ledger only --ledger-retention deletes rows: set it, or give the ledger more room",
			"err", err, "path", o.store.Path())
	default:
		o.log.Error("the node's ledger is over its disk bound and holds only unshipped rows; nothing is deleted, shipping must catch up",
			"err", err, "path", o.store.Path())
	}
}

// Write commits the cycle's rows locally and nudges the shipper.
func (o *Outbox) Write(ctx context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	err := o.store.Write(ctx, rows, fs)
	if err == nil && o.ship != nil {
		o.ship.Wake()
	}
	return err
}

// SavePins and ForgetPins keep the collector's annotation pins in the
// node file, beside the rows they priced.
func (o *Outbox) SavePins(ctx context.Context, pins []attribution.AnnotationPin) error {
	return o.store.SavePins(ctx, pins)
}

// ForgetPins drops the pins of pods keep rejects.
func (o *Outbox) ForgetPins(ctx context.Context, keep func(podUID string) bool) (int, error) {
	return o.store.ForgetPins(ctx, keep)
}

// Status is the outbox as the health metrics show it.
type Status struct {
	Pending                       uint64
	OldestAge                     time.Duration
	BatchesShipped, BatchesFailed uint64
	RowsDropped                   uint64
}

// Status returns the outbox's counters.
func (o *Outbox) Status() Status {
	st := Status{RowsDropped: uint64(o.store.DroppedRows())}
	if o.ship != nil {
		s := o.ship.Stats()
		st.Pending, st.OldestAge = uint64(max(s.RowsPending, 0)), s.OldestPendingAge
		st.BatchesShipped, st.BatchesFailed = s.BatchesShipped, s.BatchesFailed
	}
	return st
}

// stopBackground ends the shipping and pruning loop and waits for it.
func (o *Outbox) stopBackground() {
	o.stop.Do(func() {
		o.cancel()
		<-o.done
	})
}

// Drain is the shutdown path: it stops the background loop, then ships
// every pending row until none is left or ctx ends (the caller's deadline,
// below the pod's grace period), retrying failures with a short jittered
// backoff. Rows it could not ship stay in the node file, and the next
// Open on it ships them; the error says how many. Without a cluster
// ledger it only stops the loop.
func (o *Outbox) Drain(ctx context.Context) error {
	o.stopBackground()
	if o.ship == nil {
		return nil
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		n, err := o.ship.ShipOnce(ctx)
		pending, _, serr := o.store.OutboxStats(context.WithoutCancel(ctx), Sink)
		if err == nil && serr == nil && pending == 0 {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		if n > 0 {
			attempt = -1 // progress: retry at once, back off from scratch
			continue
		}
		wait := backoff.Jittered(attempt, 100*time.Millisecond, 2*time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cannot ship %d pending rows before the shutdown deadline; they stay in %s and ship on the next start: %w",
				pending, o.store.Path(), errors.Join(ctx.Err(), lastErr))
		case <-t.C:
		}
	}
}

// Close stops the background loop without draining and closes the node
// file and the cluster ledger. Later calls return the first's result.
func (o *Outbox) Close() error {
	o.closed.Do(func() {
		o.stopBackground()
		errs := []error{o.store.Close()}
		if o.remote != nil {
			errs = append(errs, o.remote.Close())
		}
		o.err = errors.Join(errs...)
	})
	return o.err
}
