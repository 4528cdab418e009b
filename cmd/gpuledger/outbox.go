package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/shipper"
	"github.com/gpuledger/gpuledger/collector"
)

// outbox is the collector's sink: every row is committed to the node's
// embedded ledger first; when a cluster ledger is configured a shipper
// sends the committed rows on, at least once, with exactly-once effect
// through the rows' deterministic keys.
type outbox struct {
	store  *ledger.FileStore
	remote ledger.Store
	ship   *shipper.Shipper
	cancel context.CancelFunc
	done   chan struct{}
}

const shipSink = "clickhouse"

func openOutbox(ctx context.Context, f collectFlags, log *slog.Logger) (*outbox, error) {
	opts := ledger.FileOptions{MaxBytes: f.outboxMaxBytes, Retention: f.retention, Logger: log, MoveAsideCorrupt: true}
	var remote ledger.Store
	if f.ledgerDSN != "" {
		d, err := ledger.ParseDSN(f.ledgerDSN)
		if err != nil {
			return nil, err
		}
		if d.Scheme != ledger.SchemeClickHouse {
			return nil, fmt.Errorf("--ledger %s: collect ships to ClickHouse; the node's own ledger is always %s", d.Redacted(), filepath.Join(f.dataDir, "ledger.db"))
		}
		if remote, err = openClickHouse(ctx, d); err != nil {
			return nil, err
		}
		opts.Sinks = []string{shipSink}
	}
	store, err := ledger.OpenFile(ctx, filepath.Join(f.dataDir, "ledger.db"), opts)
	if err != nil {
		if remote != nil {
			remote.Close()
		}
		return nil, err
	}
	o := &outbox{store: store, remote: remote, done: make(chan struct{})}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.cancel = cancel
	if remote != nil {
		o.ship = shipper.New(store, remote, shipper.Options{Sink: shipSink, Logger: log})
	}
	go o.run(runCtx, log)
	return o, nil
}

// run ships (when a cluster ledger is set) and prunes the file every few
// minutes until the collector stops.
func (o *outbox) run(ctx context.Context, log *slog.Logger) {
	defer close(o.done)
	if o.ship != nil {
		shipped := make(chan struct{})
		go func() {
			defer close(shipped)
			if err := o.ship.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("outbox shipper stopped", "err", err)
			}
		}()
		defer func() { <-shipped }()
	}
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, err := o.store.Prune(ctx)
			switch {
			case err == nil:
			case !errors.Is(err, ledger.ErrOutboxFull):
				log.Error("cannot prune the node's ledger", "err", err, "path", o.store.Path())
			case o.ship == nil:
				log.Error("the node's ledger is over its disk bound; without a cluster ledger only --ledger-retention deletes rows: set it, or give the ledger more room",
					"err", err, "path", o.store.Path())
			default:
				log.Error("the node's ledger is over its disk bound and holds only unshipped rows; nothing is deleted, shipping must catch up",
					"err", err, "path", o.store.Path())
			}
		}
	}
}

// Write commits the cycle's rows locally and nudges the shipper.
func (o *outbox) Write(ctx context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	err := o.store.Write(ctx, rows, fs)
	if err == nil && o.ship != nil {
		o.ship.Wake()
	}
	return err
}

func (o *outbox) status() collector.OutboxStatus {
	st := collector.OutboxStatus{RowsDropped: uint64(o.store.DroppedRows())}
	if o.ship != nil {
		s := o.ship.Stats()
		st.Pending, st.OldestAge = uint64(max(s.RowsPending, 0)), s.OldestPendingAge
		st.BatchesShipped, st.BatchesFailed = s.BatchesShipped, s.BatchesFailed
	}
	return st
}

func (o *outbox) Close() error {
	o.cancel()
	<-o.done
	errs := []error{o.store.Close()}
	if o.remote != nil {
		errs = append(errs, o.remote.Close())
	}
	return errors.Join(errs...)
}
