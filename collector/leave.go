package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// leaveTimeout bounds writing the leave: the node file is local, and the
// drain after it has its own deadline.
const leaveTimeout = 5 * time.Second

// LeaveMark is a sink that remembers where the rows written so
// far end: a collector stopped by a signal left cleanly at that instant.
type LeaveMark struct {
	mu  sync.Mutex
	end time.Time
	// cluster is the rows' cluster: the leave is recorded under it.
	cluster string
}

func (m *LeaveMark) Write(_ context.Context, rows []attribution.Row, _ []attribution.Finding) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range rows {
		if rows[i].IntervalEnd.After(m.end) {
			m.end = rows[i].IntervalEnd
		}
		m.cluster = rows[i].Cluster
	}
	return nil
}

func (m *LeaveMark) Last() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.end
}

// RecordLeave appends the node's clean leave (an attribution.FindingNodeLeft
// finding at the end of its last row) to the ledger sinks, through the
// same Append as every finding, so that the time until the node's rows
// resume is not a coverage gap. It runs on the shutdown path after the
// last cycle closed the open interval, and before the drain ships it. A
// collector that crashes never gets here: its silence stays a gap.
func RecordLeave(ctx context.Context, node string, mark *LeaveMark, sinks []Sink, log *slog.Logger) error {
	at := mark.Last()
	mark.mu.Lock()
	cluster := mark.cluster
	mark.mu.Unlock()
	if at.IsZero() {
		return nil // no row written: nothing for a gap to start from
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	f := []attribution.Finding{{Kind: attribution.FindingNodeLeft, Cluster: cluster, Node: node, Start: at, End: at}}
	var errs []error
	for _, s := range sinks {
		if err := s.Write(wctx, nil, f); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot record that node %s left cleanly at %s: %w", node, at.Format(time.RFC3339Nano), err)
	}
	log.Info("recorded the node's clean leave", "node", node, "at", at)
	return nil
}
