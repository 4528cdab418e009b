package main

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// A poll interval that does not divide the duration: cycles at 0, 7, 14 s
// and a last one exactly at the end (20 s), so the last 6 s are covered.
// One exclusive GPU busy 0.5 all along: 20 s allocated, 10 s used.
func TestSimulateCoversTheTailOfTheDuration(t *testing.T) {
	const yaml = `apiVersion: gpuledger/v1
kind: Scenario
name: tail
start: '2026-11-03T00:00:00Z'
duration: 20s
pollInterval: 7s
ledgerInterval: 60s
driverSamplePeriod: 200ms
node: {name: n, labels: {}}
namespaces: [{name: a, labels: {team: t}}]
gpus:
- {index: 0, uuid: GPU-d7200000-0000-4000-8000-000000000000, model: A100-SXM4-80GB, mode: exclusive, power: {idleWatts: 60, maxWatts: 400}}
pods:
- uid: d7200000-0000-4000-8000-0000000000a1
  namespace: a
  name: p
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: [GPU-d7200000-0000-4000-8000-000000000000]}]
    processes:
    - {pid: 1, device: GPU-d7200000-0000-4000-8000-000000000000, memoryMiB: 100, busy: [{from: 0s, to: 20s, fraction: 0.5}]}
`
	sc, err := scenario.Parse([]byte(yaml), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	var offsets []time.Duration
	opt := simOptions{TeamLabel: "team", Progress: func(done, _ time.Duration) { offsets = append(offsets, done) }}
	if err := simulateScenario(context.Background(), sc, opt, []collector.Sink{&sink}, nil); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{0, 7 * time.Second, 14 * time.Second, 20 * time.Second}; !slices.Equal(offsets, want) {
		t.Errorf("cycles at %v, want %v", offsets, want)
	}
	var alloc, used, idle float64
	for _, r := range sink.rows {
		switch r.Kind {
		case attribution.KindContainer:
			alloc += r.AllocatedGPUSeconds
			used += r.UsedGPUSeconds
		case attribution.KindIdle:
			idle += r.UsedGPUSeconds
		}
	}
	if math.Abs(alloc-20) > 1e-6 || math.Abs(used-10) > 0.2 || math.Abs(idle-10) > 0.2 {
		t.Errorf("allocated %.3f used %.3f idle %.3f, want 20, 10, 10", alloc, used, idle)
	}
}
