package quota_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

var start = time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)

func entry(source, object, resource, team string, milli int64) quota.Entry {
	return quota.Entry{Key: quota.Key{Source: source, Object: object, Resource: resource}, Team: team, Milli: milli}
}

// world is a fake cluster and clock: the entries its quota objects give
// now, and the time.
type world struct {
	mu      sync.Mutex
	entries []quota.Entry
	now     time.Time
	fail    error
}

func (w *world) set(t time.Time, es ...quota.Entry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now, w.entries = t, es
}

func (w *world) snapshot() ([]quota.Entry, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return nil, w.fail
	}
	return append([]quota.Entry(nil), w.entries...), nil
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) recorder(s quota.Store) *quota.Recorder {
	return &quota.Recorder{Store: s, Snapshot: w.snapshot, Now: w.clock,
		Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
}

func openLedger(t *testing.T, path string) *filestore.FileStore {
	t.Helper()
	s, err := filestore.OpenFile(context.Background(), path, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func allChanges(t *testing.T, s quota.Store) []quota.Change {
	t.Helper()
	var out []quota.Change
	from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	err := s.QuotaChanges(context.Background(), from, from.AddDate(100, 0, 0), func(c quota.Change) error {
		// The recorder writes no cluster: the store reads it back as the
		// default cluster's.
		if c.Cluster != "default" {
			t.Errorf("change %+v is not the default cluster's", c)
		}
		c.Cluster = ""
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func record(t *testing.T, r *quota.Recorder, want int) {
	t.Helper()
	n, err := r.Record(context.Background())
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	if n != want {
		t.Fatalf("Record appended %d changes, want %d", n, want)
	}
}

// Created, changed, unchanged and deleted quota across ticks: each tick
// appends what changed, stamped with the tick's second.
func TestRecorderAcrossTicks(t *testing.T) {
	s := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	w := &world{}
	r := w.recorder(s)
	ml := entry(quota.SourceKueue, "cq-ml", "gpu", "ml", 8000)
	vis := entry(quota.SourceResourceQuota, "vision/q", "mig-1g.10gb", "vision", 14000)
	w.set(start.Add(300*time.Millisecond), ml, vis)
	record(t, r, 2)
	ml2 := ml
	ml2.Milli, ml2.LimitMilli = 4000, 12000
	w.set(start.Add(time.Minute), vis, ml2) // order of the listing does not matter
	record(t, r, 1)
	w.set(start.Add(2*time.Minute), ml2, vis)
	record(t, r, 0)
	w.set(start.Add(3*time.Minute+999*time.Millisecond), ml2)
	record(t, r, 1)
	want := []quota.Change{
		{At: start, Entry: ml}, {At: start, Entry: vis},
		{At: start.Add(time.Minute), Entry: ml2},
		{At: start.Add(3 * time.Minute), Entry: quota.Entry{Key: vis.Key, Team: "vision"}, Deleted: true},
	}
	if got := allChanges(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded:\n got %+v\nwant %+v", got, want)
	}
}

// A new Recorder on the same file (a restart) records nothing when
// nothing changed, and what changed while it was down (a deletion, a
// change, a new quota) at its first tick.
func TestRecorderRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	ml := entry(quota.SourceKueue, "cq-ml", "gpu", "ml", 8000)
	vis := entry(quota.SourceVolcano, "vision", "H100-80GB-HBM3", "vision", 2000)
	kai := entry(quota.SourceKAI, "kai-q", "gpu", "search", 1000)
	w := &world{}
	w.set(start, ml, vis)
	s := openLedger(t, path)
	record(t, w.recorder(s), 2)
	s.Close()

	w.set(start.Add(time.Hour))
	w.set(start.Add(time.Hour), ml, vis)
	s = openLedger(t, path)
	r := w.recorder(s)
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	record(t, r, 0)
	s.Close()

	ml2 := ml
	ml2.Milli = 16000
	w.set(start.Add(2*time.Hour), ml2, kai) // vis deleted, ml changed, kai new while down
	s = openLedger(t, path)
	record(t, w.recorder(s), 3) // Record loads on its own
	want := []quota.Change{
		{At: start, Entry: ml}, {At: start, Entry: vis},
		{At: start.Add(2 * time.Hour), Entry: kai},
		{At: start.Add(2 * time.Hour), Entry: ml2},
		{At: start.Add(2 * time.Hour), Entry: quota.Entry{Key: vis.Key, Team: "vision"}, Deleted: true},
	}
	if got := allChanges(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded:\n got %+v\nwant %+v", got, want)
	}
}

// failing fails its next AppendQuota calls.
type failing struct {
	quota.Store
	mu    sync.Mutex
	fails int
	calls int
	ch    chan int // receives the number of each AppendQuota call, when set
}

func (f *failing) AppendQuota(ctx context.Context, cs []quota.Change) error {
	f.mu.Lock()
	f.calls++
	n, fail := f.calls, f.fails > 0
	if fail {
		f.fails--
	}
	f.mu.Unlock()
	if f.ch != nil {
		defer func() { f.ch <- n }()
	}
	if fail {
		return errors.New("disk full")
	}
	return f.Store.AppendQuota(ctx, cs)
}

// A failed append leaves the recorded state as it was: the next Record
// appends the same changes, at its own time.
func TestRecorderRetriesAFailedAppend(t *testing.T) {
	s := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	f := &failing{Store: s, fails: 1}
	w := &world{}
	ml := entry(quota.SourceKueue, "cq-ml", "gpu", "ml", 8000)
	w.set(start, ml)
	r := w.recorder(f)
	if n, err := r.Record(context.Background()); err == nil || !strings.Contains(err.Error(), "disk full") || n != 0 {
		t.Fatalf("Record with a failing store: %d, %v", n, err)
	}
	w.set(start.Add(time.Minute), ml)
	record(t, r, 1)
	if got := allChanges(t, s); len(got) != 1 || !got[0].At.Equal(start.Add(time.Minute)) {
		t.Fatalf("recorded %+v", got)
	}
	w.fail = errors.New("apiserver down")
	if _, err := r.Record(context.Background()); err == nil || !strings.Contains(err.Error(), "apiserver down") {
		t.Errorf("Record with a failing snapshot: %v", err)
	}
}

// An entry that turns invalid, or a key listed twice, keeps what was
// recorded for it: it neither stops the other entries being recorded nor
// records a deletion of its quota.
func TestRecorderKeepsInvalidEntries(t *testing.T) {
	s := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	w := &world{}
	ml := entry(quota.SourceKueue, "cq-ml", "gpu", "ml", 8000)
	vis := entry(quota.SourceKueue, "cq-vis", "gpu", "vision", 1000)
	w.set(start, ml, vis)
	r := w.recorder(s)
	record(t, r, 2)
	bad := ml
	bad.Milli = -5 // broken
	vis2, vis3 := vis, vis
	vis2.Milli, vis3.Milli = 3000, 0 // listed twice with different values
	newBad := entry(quota.SourceKueue, "cq-new", "mig-99g.1gb", "new", 1000)
	search := entry(quota.SourceKueue, "cq-search", "gpu", "search", 2000)
	w.set(start.Add(time.Minute), bad, vis2, vis3, newBad, search)
	record(t, r, 1) // only cq-search
	w.set(start.Add(2*time.Minute), ml, vis, search)
	record(t, r, 0) // back to what was recorded
	got := allChanges(t, s)
	if len(got) != 3 || got[2].Object != "cq-search" {
		t.Fatalf("recorded %+v", got)
	}
}

// Run records at once and at every tick, logs a failure and records at
// the next tick, and returns when its context ends; an interval out of
// bounds is refused.
func TestRecorderRun(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 2 * time.Hour} {
		r := &quota.Recorder{}
		if err := r.Run(context.Background(), d); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Run every %s: %v", d, err)
		}
	}
	s := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	f := &failing{Store: s, fails: 1, ch: make(chan int)}
	w := &world{}
	ml := entry(quota.SourceKueue, "cq-ml", "gpu", "ml", 8000)
	w.set(start, ml)
	var logs bytes.Buffer
	r := &quota.Recorder{Store: f, Snapshot: w.snapshot, Now: w.clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ticks := make(chan time.Time)
	var interval time.Duration
	quota.SetTicker(r, func(d time.Duration) (<-chan time.Time, func()) { interval = d; return ticks, func() {} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, time.Minute) }()
	deadline := time.After(time.Minute)
	wait := func(want int) {
		t.Helper()
		select {
		case n := <-f.ch:
			if n != want {
				t.Fatalf("append call %d, want %d", n, want)
			}
		case <-deadline:
			t.Fatal("Run did not append in time")
		}
	}
	wait(1) // the first record, failing
	w.set(start.Add(time.Minute), ml)
	ticks <- start
	wait(2) // the next tick appends
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v when its context ended", err)
		}
	case <-deadline:
		t.Fatal("Run did not return after its context ended")
	}
	if interval != time.Minute {
		t.Errorf("ticker asked for %s", interval)
	}
	if got := allChanges(t, s); len(got) != 1 || !got[0].At.Equal(start.Add(time.Minute)) {
		t.Errorf("recorded %+v", got)
	}
	if !strings.Contains(logs.String(), "disk full") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}
}

// A source whose objects cannot be read (forbidden, failing) keeps its
// recorded quotas: its entries missing from the snapshot are not
// deletions. Once it is observed again (running, or not installed), what
// it lacks is deleted.
func TestRecorderKeepsUnobservedSources(t *testing.T) {
	s := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	w := &world{}
	var unobserved []string
	r := w.recorder(s)
	r.Unobserved = func() []string { return unobserved }
	ml := entry(quota.SourceKueue, "cq-ml", "gpu", "ml", 8000)
	rq := entry(quota.SourceResourceQuota, "vision", "gpu", "vision", 2000)
	w.set(start, ml, rq)
	record(t, r, 2)
	// Kueue is forbidden now: the watcher lists nothing of it.
	unobserved = []string{quota.SourceKueue}
	w.set(start.Add(time.Minute), rq)
	record(t, r, 0)
	// Kueue's entry cannot change while unobserved, even if listed.
	ml2 := ml
	ml2.Milli = 1000
	w.set(start.Add(2*time.Minute), rq, ml2)
	record(t, r, 0)
	// Observed again and gone: deleted then.
	unobserved = nil
	w.set(start.Add(3*time.Minute), rq)
	record(t, r, 1)
	want := []quota.Change{
		{At: start, Entry: ml}, {At: start, Entry: rq},
		{At: start.Add(3 * time.Minute), Entry: quota.Entry{Key: ml.Key, Team: "ml"}, Deleted: true},
	}
	if got := allChanges(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded:\n got %+v\nwant %+v", got, want)
	}
}

// Every refuses an interval out of bounds naming what it records, and
// otherwise records at once, reports each result, and returns nil when
// its context ends.
func TestEvery(t *testing.T) {
	err := quota.Every(context.Background(), time.Second, "node label", func(context.Context) (int, error) { return 0, nil }, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "node label record interval 1s is outside 10s..1h0m0s") {
		t.Errorf("interval 1s: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got []int
	record := func(context.Context) (int, error) { return 3, nil }
	onRecord := func(n int, err error) {
		got = append(got, n)
		cancel() // the first record ends the loop
	}
	if err := quota.Every(ctx, time.Hour, "node label", record, onRecord, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 3 {
		t.Errorf("onRecord saw %v, want [3]", got)
	}
}
