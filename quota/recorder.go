package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Bounds on Run's interval: often enough that a quota changed and changed
// back within the hour is seen, never so often that a cluster of many
// quota objects is listed in a tight loop.
const (
	MinRecordInterval = 10 * time.Second
	MaxRecordInterval = time.Hour
)

// Recorder keeps the ledger's quota changes in step with the cluster's
// quota objects: each Record takes a snapshot of the entries in force,
// compares it with what the ledger last recorded and appends the
// difference, stamped with the current second.
type Recorder struct {
	Store Store
	// Snapshot lists the entries the cluster's quota objects give now.
	Snapshot func() ([]Entry, error)
	// Now is the clock changes are stamped with (nil: time.Now).
	Now func() time.Time
	// Logger receives Run's failures and the entries Record skips (nil:
	// slog.Default()).
	Logger *slog.Logger
	// Unobserved, when set, names the sources whose objects cannot be read
	// now (forbidden, failing, not probed yet): their recorded entries are
	// kept as they are, so a source that is down for a while is not read
	// as every one of its quotas deleted. A source that is not installed
	// is observed, and its quotas are gone.
	Unobserved func() []string
	// OnRecord, when set, is told what each of Run's records did: the
	// changes appended, or the error (serve's health metrics).
	OnRecord func(changes int, err error)

	mu     sync.Mutex
	state  map[Key]Entry // what the ledger holds in force; nil until loaded
	last   time.Time     // the latest change time read or written
	ticker func(time.Duration) (<-chan time.Time, func())
}

func (r *Recorder) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Recorder) log() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}

// Load reads the entries in force now from the store: after a restart the
// next Record appends only what changed while the recorder was down (a
// deletion included), not every entry again.
func (r *Recorder) Load(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.load(ctx)
}

func (r *Recorder) load(ctx context.Context) error {
	if r.Store == nil {
		return errors.New("cannot load the recorded quota: no store")
	}
	now := r.now().Truncate(time.Second)
	var changes []Change
	last := time.Time{}
	err := r.Store.QuotaChanges(ctx, now, now.Add(time.Second), func(c Change) error {
		changes = append(changes, c)
		if c.At.After(last) {
			last = c.At
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot load the recorded quota: %w", err)
	}
	r.state, r.last = State(changes), last
	return nil
}

// Record takes a snapshot, appends the changes from the recorded state to
// it at the current second and returns how many it appended. The state
// moves on only once the append succeeded, so a failed Record is repeated
// whole by the next. An entry that fails Entry.Validate, or a key listed
// twice, is logged and keeps what was recorded for it (nothing, if it is
// new): a broken object must neither stop the others being recorded nor
// read as a deletion of its quota.
func (r *Recorder) Record(ctx context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Snapshot == nil {
		return 0, errors.New("cannot record quota: no snapshot function")
	}
	if r.state == nil {
		if err := r.load(ctx); err != nil {
			return 0, err
		}
	}
	entries, err := r.Snapshot()
	if err != nil {
		return 0, fmt.Errorf("cannot record quota: cannot list quota objects: %w", err)
	}
	now := r.withUnobserved(r.checked(entries))
	at := r.now().Truncate(time.Second)
	if at.Before(r.last) {
		// The clock went back: a change stamped before the last one
		// recorded would be read as superseded by it.
		at = r.last
	}
	changes := Diff(r.state, now, at)
	if len(changes) == 0 {
		return 0, nil
	}
	if err := r.Store.AppendQuota(ctx, changes); err != nil {
		return 0, fmt.Errorf("cannot record %d quota changes at %s: %w", len(changes), at.UTC().Format(time.RFC3339), err)
	}
	st := make(map[Key]Entry, len(now))
	for _, e := range now {
		st[e.Key] = e
	}
	r.state, r.last = st, at
	return len(changes), nil
}

// checked returns the snapshot's valid entries, one per key, with the
// recorded entry standing in for an invalid or repeated one.
func (r *Recorder) checked(entries []Entry) []Entry {
	count := make(map[Key]int, len(entries))
	for _, e := range entries {
		count[e.Key]++
	}
	out := make([]Entry, 0, len(entries))
	kept := map[Key]bool{}
	for _, e := range entries {
		var why error
		if count[e.Key] > 1 {
			why = fmt.Errorf("quota %s %s %s is listed %d times", e.Source, e.Object, e.Resource, count[e.Key])
		} else {
			why = e.Validate()
		}
		if why == nil {
			out = append(out, e)
			continue
		}
		if kept[e.Key] {
			continue
		}
		kept[e.Key] = true
		r.log().Warn("quota entry not recorded: the recorded one stays in force", "err", why)
		if prev, ok := r.state[e.Key]; ok {
			out = append(out, prev)
		}
	}
	return out
}

// Run records at once, then every interval (MinRecordInterval to
// MaxRecordInterval) until ctx ends, logging a failed load or record and
// trying again at the next tick. It returns nil when ctx ends, and an error
// only for an interval out of bounds.
func (r *Recorder) Run(ctx context.Context, interval time.Duration) error {
	return every(ctx, interval, "quota", r.Record, r.OnRecord, r.log(), r.ticker)
}

// Every runs record at once, then every interval (MinRecordInterval to
// MaxRecordInterval) until ctx ends, as Recorder.Run does: what names the
// changes in log lines, and onRecord (when set) is told each record's
// result. Other recorders that compare the cluster with the ledger (serve's
// node labels) run on it.
func Every(ctx context.Context, interval time.Duration, what string, record func(context.Context) (int, error),
	onRecord func(int, error), logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	return every(ctx, interval, what, record, onRecord, logger, nil)
}

func every(ctx context.Context, interval time.Duration, what string, record func(context.Context) (int, error),
	onRecord func(int, error), logger *slog.Logger, tick func(time.Duration) (<-chan time.Time, func())) error {
	if interval < MinRecordInterval || interval > MaxRecordInterval {
		return fmt.Errorf("%s record interval %s is outside %s..%s", what, interval, MinRecordInterval, MaxRecordInterval)
	}
	if tick == nil {
		tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	c, stop := tick(interval)
	defer stop()
	for {
		n, err := record(ctx)
		if onRecord != nil && ctx.Err() == nil {
			onRecord(n, err)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Error("cannot record "+what+" changes: trying again at the next tick", "interval", interval.String(), "err", err)
		case n > 0:
			logger.Info("recorded "+what+" changes", "changes", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c:
		}
	}
}

// withUnobserved adds to now the recorded entries of the sources
// Unobserved names, in place of whatever now says of them.
func (r *Recorder) withUnobserved(now []Entry) []Entry {
	if r.Unobserved == nil {
		return now
	}
	skip := map[string]bool{}
	for _, s := range r.Unobserved() {
		skip[s] = true
	}
	if len(skip) == 0 {
		return now
	}
	out := now[:0:0]
	for _, e := range now {
		if !skip[e.Source] {
			out = append(out, e)
		}
	}
	for _, e := range r.state {
		if skip[e.Source] {
			out = append(out, e)
		}
	}
	return out
}
