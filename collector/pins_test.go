package collector

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// recordingSink logs what it was given, in order, into a shared journal.
type recordingSink struct {
	name    string
	journal *[]string
	pins    []attribution.AnnotationPin
	failFor int // fail this many SavePins calls first
}

func (s *recordingSink) Write(context.Context, []attribution.Row, []attribution.Finding) error {
	*s.journal = append(*s.journal, s.name+" rows")
	return nil
}

func (s *recordingSink) SavePins(_ context.Context, pins []attribution.AnnotationPin) error {
	*s.journal = append(*s.journal, s.name+" pins")
	if s.failFor > 0 {
		s.failFor--
		return errors.New("disk full")
	}
	s.pins = append(s.pins, pins...)
	return nil
}

func (s *recordingSink) ForgetPins(_ context.Context, keep func(string) bool) (int, error) {
	*s.journal = append(*s.journal, s.name+" forget")
	kept := s.pins[:0]
	for _, p := range s.pins {
		if keep(p.PodUID) {
			kept = append(kept, p)
		}
	}
	n := len(s.pins) - len(kept)
	s.pins = kept
	return n, nil
}

// plainSink keeps rows only.
type plainSink struct{ journal *[]string }

func (s plainSink) Write(context.Context, []attribution.Row, []attribution.Finding) error {
	*s.journal = append(*s.journal, "csv rows")
	return nil
}

var _ PinSink = (*recordingSink)(nil)

// A cycle's new pins reach every sink that keeps pins, before its rows; a
// failed save is retried with the next cycle's pins until it succeeds.
func TestNewPinsSavedBeforeRowsAndRetried(t *testing.T) {
	var journal []string
	store := &recordingSink{name: "store", journal: &journal, failFor: 1}
	c := New(Config{Node: "n"}, nil, Sources{}, nil, nil, []Sink{plainSink{&journal}, store}, slog.New(slog.DiscardHandler))
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	p1 := attribution.AnnotationPin{PodUID: "u1", Container: "main", Key: "hami.io/vgpu-devices-allocated", Value: "GPU-a,NVIDIA,1000,30:;", At: at}
	p2 := attribution.AnnotationPin{PodUID: "u2", Container: "main", Key: "hami.io/vgpu-devices-allocated", Value: "GPU-b,NVIDIA,1000,30:;", At: at.Add(time.Second)}
	row := attribution.Row{Kind: attribution.KindIdle}

	// Cycle 1: the store cannot save; rows are still written, the error is
	// reported.
	if err := c.writeSinks(context.Background(), attribution.CycleResult{Rows: []attribution.Row{row}, NewPins: []attribution.AnnotationPin{p1}}); err == nil {
		t.Fatal("a failed pin save was not reported")
	}
	if want := []string{"store pins", "csv rows", "store rows"}; !reflect.DeepEqual(journal, want) {
		t.Fatalf("cycle 1 order %v, want %v (pins before rows)", journal, want)
	}
	// Cycle 2, no rows: the held pin goes with the new one.
	journal = nil
	if err := c.writeSinks(context.Background(), attribution.CycleResult{NewPins: []attribution.AnnotationPin{p2}}); err != nil {
		t.Fatalf("cycle 2: %v", err)
	}
	if want := []attribution.AnnotationPin{p1, p2}; !reflect.DeepEqual(store.pins, want) {
		t.Errorf("store holds %+v, want %+v", store.pins, want)
	}
	// Cycle 3: nothing new, nothing sent.
	journal = nil
	if err := c.writeSinks(context.Background(), attribution.CycleResult{}); err != nil || len(journal) != 0 {
		t.Errorf("an empty cycle: %v, sinks called %v", err, journal)
	}
}

// Pins of pods the metadata no longer lists are dropped hourly, and never
// on a cycle whose metadata is degraded.
func TestPinsOfGonePodsPrunedHourly(t *testing.T) {
	var journal []string
	store := &recordingSink{name: "store", journal: &journal}
	c := New(Config{Node: "n"}, nil, Sources{Meta: kubemetaStub{}}, nil, nil, []Sink{store}, slog.New(slog.DiscardHandler))
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	pin := func(uid string) attribution.AnnotationPin {
		return attribution.AnnotationPin{PodUID: uid, Container: "main", Key: "hami.io/vgpu-devices-allocated", Value: uid, At: t0}
	}
	obs := func(at time.Duration, degraded bool, uids ...string) attribution.Observation {
		o := attribution.Observation{Time: t0.Add(at), Degraded: map[string]bool{SourceKubeMeta: degraded}}
		for _, u := range uids {
			o.Metadata.Pods = append(o.Metadata.Pods, attribution.PodMeta{UID: u})
		}
		return o
	}
	emit := func(res attribution.CycleResult, o attribution.Observation) {
		t.Helper()
		if err := c.emit(context.Background(), res, o, 0); err != nil {
			t.Fatal(err)
		}
	}
	emit(attribution.CycleResult{NewPins: []attribution.AnnotationPin{pin("a"), pin("b")}}, obs(0, false, "a", "b"))
	// b ends; within the hour nothing is pruned.
	emit(attribution.CycleResult{}, obs(30*time.Minute, false, "a"))
	// An hour on, but the metadata is degraded (an empty view): keep all.
	emit(attribution.CycleResult{}, obs(61*time.Minute, true))
	if len(store.pins) != 2 {
		t.Fatalf("pins pruned early or on degraded metadata: %+v (journal %v)", store.pins, journal)
	}
	emit(attribution.CycleResult{}, obs(62*time.Minute, false, "a"))
	if want := []attribution.AnnotationPin{pin("a")}; !reflect.DeepEqual(store.pins, want) {
		t.Errorf("pins after the hourly prune = %+v, want %+v", store.pins, want)
	}
}

// kubemetaStub stands for a configured metadata source.
type kubemetaStub struct{}

func (kubemetaStub) Snapshot(context.Context) (attribution.Metadata, error) {
	return attribution.Metadata{}, nil
}
