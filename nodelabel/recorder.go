package nodelabel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Recorder keeps the ledger's node label changes in step with the
// cluster's nodes: each Record compares the nodes' values of Key with
// what the ledger last recorded and appends the difference, stamped with
// the current second. A node deleted from the cluster is no change: its
// last value stays recorded, so a report of a month it ran in still finds
// it.
type Recorder struct {
	Store Store
	Key   string
	// Snapshot gives the nodes in the cluster now: labels maps each node
	// that has Key to its value, and present says whether a node exists.
	Snapshot func() (labels map[string]string, present func(node string) bool, err error)
	// Now is the clock changes are stamped with (nil: time.Now).
	Now func() time.Time

	mu    sync.Mutex
	state map[string]string // what the ledger holds; nil until loaded
	last  time.Time         // the latest change time written
}

func (r *Recorder) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Record loads the recorded values once (after a restart the next Record
// appends only what changed while the recorder was down), takes a
// snapshot, appends the changes at the current second and returns how
// many it appended. The state moves on only once the append succeeded,
// so a failed Record is repeated whole by the next.
func (r *Recorder) Record(ctx context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Store == nil || r.Snapshot == nil {
		return 0, errors.New("cannot record node labels: no store or no snapshot function")
	}
	at := r.now().Truncate(time.Second)
	if r.state == nil {
		st, err := r.Store.NodeLabels(ctx, r.Key, at)
		if err != nil {
			return 0, fmt.Errorf("cannot load the recorded node label %s: %w", r.Key, err)
		}
		r.state = st
	}
	labels, present, err := r.Snapshot()
	if err != nil {
		return 0, fmt.Errorf("cannot record node label %s: cannot list nodes: %w", r.Key, err)
	}
	if at.Before(r.last) {
		// The clock went back: a change stamped before the last one
		// written would be read as superseded by it.
		at = r.last
	}
	changes := Diff(r.Key, r.state, labels, present, at)
	if len(changes) == 0 {
		return 0, nil
	}
	if err := r.Store.AppendNodeLabels(ctx, changes); err != nil {
		return 0, fmt.Errorf("cannot record %d changes of node label %s at %s: %w", len(changes), r.Key, at.UTC().Format(time.RFC3339), err)
	}
	for _, c := range changes {
		if c.Deleted {
			delete(r.state, c.Node)
		} else {
			r.state[c.Node] = c.Value
		}
	}
	r.last = at
	return len(changes), nil
}
