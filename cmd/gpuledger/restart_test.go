package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/scenario"
	"github.com/gpuledger/gpuledger/collector/sim"
)

// A collector stopped for ten minutes and started again leaves a gap in
// the ledger, not invented rows: nothing covers the time it was down, and
// what it saw before and after still closes both partitions.
func TestCollectorRestartLeavesAGap(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "timeslicing-hostile", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = 20 * time.Minute // the scenario's pods just go on being idle
	for i := range sc.Pods {
		sc.Pods[i].End = sc.Duration
	}
	ctx := context.Background()
	node, err := sim.New(ctx, sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	var sink memSink
	run := func(from, to time.Duration) {
		c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team"}, []collector.Sink{&sink}, nil)
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
	}
	run(0, 3*time.Minute+30*time.Second)
	run(13*time.Minute+30*time.Second, 20*time.Minute)

	downFrom, downTo := sc.Start.Add(3*time.Minute+30*time.Second), sc.Start.Add(13*time.Minute+30*time.Second)
	covered := map[string]time.Duration{}
	for _, r := range sink.rows {
		if r.IntervalStart.Before(downTo) && r.IntervalEnd.After(downFrom) {
			t.Fatalf("row %s..%s covers the time the collector was down", r.IntervalStart, r.IntervalEnd)
		}
		if r.Kind == "idle" { // one idle row per GPU and interval: sums the covered time
			covered[r.GPUUUID] += r.IntervalEnd.Sub(r.IntervalStart)
		}
	}
	for _, g := range sc.GPUs {
		if want := 10 * time.Minute; covered[g.UUID] != want {
			t.Errorf("GPU %s covered %s, want %s (3m30s before the stop, 6m30s after)", g.UUID, covered[g.UUID], want)
		}
	}
	checkIntervalPartitions(t, sink.rows)
}
