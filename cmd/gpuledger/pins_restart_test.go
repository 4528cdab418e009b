package main

import (
	"context"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// A tenant edits a pod's HAMi annotation while the collector is down (here
// between two runs over one node ledger, as `gpuledger collect` restarts
// on a node). The restarted collector restores the pins its predecessor
// saved in the embedded ledger and keeps charging the container by the
// value first observed: the edit moves no cost.
//
// NEEDS BRANCH c-attr: the engine's side (pinning the first value observed,
// emitting CycleResult.NewPins, charging by restored pins) lands there. On
// a branch without it this test fails at "no pin saved", and nothing here
// is wrong.
func TestRestartedCollectorChargesByPinnedAnnotation(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "hami-mixed", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "hami.io/vgpu-devices-allocated"
	pod := podNamed(t, sc, "chat-0")
	original := pod.Annotations[key]

	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	run := func(sc *scenario.Scenario, from, to time.Duration) ([]attribution.Row, []attribution.AnnotationPin) {
		t.Helper()
		store, err := filestore.OpenFile(ctx, path, filestore.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		pins, err := store.Pins(ctx) // what simulate and collect do at start
		if err != nil {
			t.Fatal(err)
		}
		node, err := sim.New(ctx, sc, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer node.Close()
		var mem memSink
		c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team", Pins: pins},
			[]collector.Sink{store, &mem}, exposition.New(sc.Node.Name, exposition.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		defer closeSrc()
		for at := from; at <= to; at += sc.PollInterval {
			if err := node.Advance(sc.Start.Add(at)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Cycle(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		saved, err := store.Pins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return mem.rows, saved
	}

	before, pins := run(sc, 0, 2*time.Minute)
	if !hasPin(pins, pod.UID, key, original) {
		t.Fatalf("no pin saved for %s's %s = %q after the first run (saved: %+v); the engine must emit CycleResult.NewPins (branch c-attr)", pod.Name, key, original, pins)
	}

	// The edit: same GPU, far more of it.
	edited := sc.Clone()
	podNamed(t, edited, "chat-0").Annotations[key] = "GPU-f82450dd-41cd-45f5-838f-e4d25796fd71,NVIDIA,80000,90:;"
	after, pins := run(edited, 3*time.Minute, 5*time.Minute)
	if !hasPin(pins, pod.UID, key, original) {
		t.Errorf("the first value's pin was replaced: %+v", pins)
	}

	share := func(rows []attribution.Row) float64 {
		var alloc, secs float64
		for _, r := range rows {
			if r.Kind == attribution.KindContainer && r.PodUID == pod.UID {
				alloc += r.AllocatedGPUSeconds
				secs += r.IntervalEnd.Sub(r.IntervalStart).Seconds()
			}
		}
		if secs == 0 {
			t.Fatalf("no rows of %s", pod.Name)
		}
		return alloc / secs
	}
	b, a := share(before), share(after)
	if b <= 0 || math.Abs(a-b) > 1e-9 {
		t.Errorf("%s allocated %.6f GPU per second before the restart and %.6f after; the edited annotation moved cost", pod.Name, b, a)
	}
}

func podNamed(t *testing.T, sc *scenario.Scenario, name string) *scenario.Pod {
	t.Helper()
	for i := range sc.Pods {
		if sc.Pods[i].Name == name {
			return &sc.Pods[i]
		}
	}
	t.Fatalf("scenario %s has no pod %s", sc.Name, name)
	return nil
}

func hasPin(pins []attribution.AnnotationPin, podUID, key, value string) bool {
	for _, p := range pins {
		if p.PodUID == podUID && p.Key == key && p.Value == value {
			return true
		}
	}
	return false
}

// collect's sink saves pins into the node ledger it commits rows to, where
// the next collect finds them.
func TestCollectOutboxKeepsPins(t *testing.T) {
	ctx := context.Background()
	f := collectFlags{dataDir: t.TempDir(), outboxMaxBytes: 1 << 30}
	out, err := openOutbox(ctx, f, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	pin := attribution.AnnotationPin{PodUID: "u", Container: "main", Key: "hami.io/vgpu-devices-allocated",
		Value: "GPU-a,NVIDIA,1000,30:;", At: time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)}
	if err := out.SavePins(ctx, []attribution.AnnotationPin{pin}); err != nil {
		t.Fatalf("SavePins: %v", err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = openOutbox(ctx, f, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got, err := out.Store().Pins(ctx)
	if err != nil || len(got) != 1 || got[0] != pin {
		t.Errorf("pins after reopening the node ledger = %+v, %v; want %+v", got, err, pin)
	}
}
