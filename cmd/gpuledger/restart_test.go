package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// A collector stopped for ten minutes and started again leaves a gap in
// the ledger, not invented rows: nothing covers the time it was down, and
// what it saw before and after still closes both partitions. Its counters
// restart cleanly: the new process's capacity counters hold the seconds it
// covered, from zero, with neither the old process's seconds nor the gap.
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
	run := func(from, to time.Duration) *exposition.Exporter {
		exp := exposition.New(sc.Node.Name, exposition.Options{}) // a new process: new counters
		c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team"}, []collector.Sink{&sink}, exp)
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
		return exp
	}
	before := run(0, 3*time.Minute+30*time.Second)
	after := run(13*time.Minute+30*time.Second, 20*time.Minute)
	for _, c := range []struct {
		name string
		exp  *exposition.Exporter
		want float64
	}{{"before the stop", before, 210}, {"after the restart", after, 390}} {
		capacity := capacitySeconds(t, scrape(t, c.exp))
		for _, g := range sc.GPUs {
			if got := capacity[g.UUID]; got != c.want {
				t.Errorf("%s: GPU %s capacity counter %v, want %v", c.name, g.UUID, got, c.want)
			}
		}
	}

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

// capacitySeconds reads gpuledger_gpu_capacity_seconds_total per GPU from a
// text exposition.
func capacitySeconds(t *testing.T, body string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("cannot parse the exposition: %v", err)
	}
	out := map[string]float64{}
	for _, m := range mfs["gpuledger_gpu_capacity_seconds_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "gpu" {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no gpuledger_gpu_capacity_seconds_total in the exposition")
	}
	return out
}
