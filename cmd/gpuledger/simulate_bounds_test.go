package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestSimulateRefusesHostileScenarios: simulate refuses, before writing
// a row, a poll longer than the ledger interval (collect's rule) and
// starts whose rows the ledger would date wrongly, naming the field. The
// scenario package's tests hold the rest of the bounds.
func TestSimulateRefusesHostileScenarios(t *testing.T) {
	const base = `apiVersion: gpuledger/v1
kind: Scenario
name: hostile
start: '2026-11-03T00:00:00Z'
duration: 5m
pollInterval: 1s
ledgerInterval: 60s
driverSamplePeriod: 200ms
node: {name: n, labels: {}}
namespaces: [{name: a, labels: {team: t}}]
gpus:
- {index: 0, uuid: GPU-d7200000-0000-4000-8000-000000000000, model: A100-SXM4-80GB, mode: exclusive}
pods:
- uid: d7200000-0000-4000-8000-0000000000a1
  namespace: a
  name: p
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: [GPU-d7200000-0000-4000-8000-000000000000]}]
    processes:
    - {pid: 1, device: GPU-d7200000-0000-4000-8000-000000000000, memoryMiB: 100, busy: [{from: 0s, to: 5m, fraction: 0.5}]}
`
	for _, c := range []struct{ from, to, want string }{
		{"pollInterval: 1s", "pollInterval: 2m", "pollInterval: 2m0s is longer than ledgerInterval 1m0s"},
		{"start: '2026-11-03T00:00:00Z'", "start: '9999-12-31T23:55:00Z'", "start: 9999-12-31T23:55:00Z is outside [1970-01-01T00:00:00Z,2200-01-01T00:00:00Z)"},
		{"start: '2026-11-03T00:00:00Z'", "start: '1969-12-31T23:58:00Z'", "start: 1969-12-31T23:58:00Z is outside"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "scenario.yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(base, c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		err := run(context.Background(), []string{"simulate", "--scenario", path, "--out", out}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.to, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(out, "ledger.csv")); err == nil {
			t.Errorf("%s: ledger.csv written", c.to)
		}
	}
}

// TestSimulateStopsWhenCancelled: the signal context's cancellation stops
// a long simulation (366 days at 1 s polls: 31.6 million cycles) at the
// next cycle, with the context's error.
func TestSimulateStopsWhenCancelled(t *testing.T) {
	const yaml = `apiVersion: gpuledger/v1
kind: Scenario
name: long
start: '2026-01-01T00:00:00Z'
duration: 8784h
node: {name: n}
gpus:
- {index: 0, uuid: GPU-d7200000-0000-4000-8000-000000000000, model: A100-SXM4-80GB, mode: exclusive}
hostProcesses:
- {pid: 1, device: GPU-d7200000-0000-4000-8000-000000000000, memoryMiB: 100, busy: [{from: 0s, to: 8784h, fraction: 0.5}]}
`
	sc, err := scenario.Parse([]byte(yaml), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cycles := 0
	opt := simOptions{TeamLabel: "team", Progress: func(time.Duration, time.Duration) {
		if cycles++; cycles == 3 {
			cancel()
		}
	}}
	var sink memSink
	err = simulateScenario(ctx, sc, opt, []collector.Sink{&sink}, nil)
	if !errors.Is(err, context.Canceled) || cycles != 3 {
		t.Errorf("error %v after %d cycles; want context.Canceled after the third", err, cycles)
	}
}
