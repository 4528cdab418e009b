package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// diskFullScenario: 8 exclusive GPUs, each with one busy pod, for 4 hours
// at one-minute ledger intervals, about 5,800 rows: more than the small
// volume below holds.
func diskFullScenario(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`apiVersion: gpuledger/v1
kind: Scenario
name: diskfull
start: '2026-11-03T00:00:00Z'
duration: 4h
pollInterval: 30s
ledgerInterval: 60s
driverSamplePeriod: 1s
node: {name: n, labels: {}}
namespaces: [{name: a, labels: {team: t}}]
gpus:
`)
	for g := 0; g < 8; g++ {
		fmt.Fprintf(&b, "- {index: %d, uuid: GPU-d7200000-0000-4000-8000-00000000000%d, model: A100-SXM4-80GB, mode: exclusive, power: {idleWatts: 60, maxWatts: 400}}\n", g, g)
	}
	b.WriteString("pods:\n")
	for g := 0; g < 8; g++ {
		fmt.Fprintf(&b, `- uid: d7200000-0000-4000-8000-0000000000a%d
  namespace: a
  name: p%d
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: [GPU-d7200000-0000-4000-8000-00000000000%d]}]
    processes:
    - {pid: %d, device: GPU-d7200000-0000-4000-8000-00000000000%d, memoryMiB: 100, busy: [{from: 0s, to: 4h, fraction: 0.5}]}
`, g, g, g, g+1, g)
	}
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// simulate onto a volume that fills up fails, leaves no ledger.csv or
// flags.csv cut mid-row (nor their temporary files), and its log does not
// promise a retry that will never come.
func TestSimulateOnAFullDiskLeavesNoPartialCSV(t *testing.T) {
	sc := diskFullScenario(t)
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	mountForTest(t, "-t", "tmpfs", "-o", "size=512k", "tmpfs", vol)
	t.Cleanup(func() { exec.Command("umount", vol).Run() })

	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	err := run(context.Background(), []string{"simulate", "--scenario", sc, "--out", vol}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no space left") && !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("simulate onto a full volume: %v, want a no-space error", err)
	}
	entries, _ := os.ReadDir(vol)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".csv") || strings.Contains(e.Name(), ".csv.tmp") {
			b, _ := os.ReadFile(filepath.Join(vol, e.Name()))
			t.Errorf("a failed simulate left %s (%d bytes, ends %q)", e.Name(), len(b), b[max(0, len(b)-40):])
		}
	}
	l := logs.String()
	if strings.Contains(l, "retry at the next write") || strings.Contains(l, "retried") {
		t.Errorf("the log promises a retry before the process stops:\n%s", l)
	}
	if !strings.Contains(l, "not written") {
		t.Errorf("the log does not say ledger.csv was not written:\n%s", l)
	}
}
