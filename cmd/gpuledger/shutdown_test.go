package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestHelperProcessGPULedger is not a test: started by the tests below as a
// child process (GPULEDGER_HELPER_ARGS set), it runs the gpuledger CLI with
// those arguments, signals and exit status included.
func TestHelperProcessGPULedger(t *testing.T) {
	args := os.Getenv("GPULEDGER_HELPER_ARGS")
	if args == "" {
		return
	}
	os.Args = append([]string{"gpuledger"}, strings.Split(args, "\x1f")...)
	main()
}

// gpuledgerProcess starts the CLI as a real process.
func gpuledgerProcess(t *testing.T, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessGPULedger$")
	cmd.Env = append(os.Environ(), "GPULEDGER_HELPER_ARGS="+strings.Join(args, "\x1f"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out
}

// Two GPUs for two hours: one held by a pod at half load, one never
// allocated. Polls every 5 s, rows every minute.
const shutdownScenario = `apiVersion: gpuledger/v1
kind: Scenario
name: shutdown
start: '2026-11-03T00:00:00Z'
duration: 2h
pollInterval: 5s
ledgerInterval: 60s
driverSamplePeriod: 1s
node: {name: leaving, labels: {}}
namespaces: [{name: a, labels: {team: t}}]
gpus:
- {index: 0, uuid: GPU-5d000000-0000-4000-8000-000000000000, model: A100-SXM4-80GB, mode: exclusive, power: {idleWatts: 60, maxWatts: 400}}
- {index: 1, uuid: GPU-5d000000-0000-4000-8000-000000000001, model: A100-SXM4-80GB, mode: exclusive, power: {idleWatts: 60, maxWatts: 400}}
pods:
- uid: 5d000000-0000-4000-8000-0000000000a1
  namespace: a
  name: p
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: [GPU-5d000000-0000-4000-8000-000000000000]}]
    processes:
    - {pid: 1, device: GPU-5d000000-0000-4000-8000-000000000000, memoryMiB: 100, busy: [{from: 0s, to: 2h, fraction: 0.5}]}
`

// A node that leaves loses nothing: a paced simulate (the collector's
// pipeline and its outbox, on a virtual clock) shipping to a real
// ClickHouse is SIGTERMed mid-interval. It exits cleanly, and ClickHouse
// holds every GPU-second from the start to the termination instant exactly
// once: the open interval was closed at that instant (a partial last
// minute) and shipped before the process ended, both partitions closed in
// every interval.
func TestSIGTERMShipsEveryGPUSecondUpToTheInstant(t *testing.T) {
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	ctx := context.Background()
	dsn := h.DSN(t)
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, d, ""); err != nil {
		t.Fatal(err)
	}
	remote, err := clickhouse.Open(ctx, d, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	dir := t.TempDir()
	scPath := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scPath, []byte(shutdownScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(scPath)
	if err != nil {
		t.Fatal(err)
	}
	const speed = 30 // a minute's row every 2 wall seconds
	out := filepath.Join(dir, "out")
	began := time.Now()
	cmd, logs := gpuledgerProcess(t, "simulate", "--scenario", scPath, "--out", out, "--ledger", dsn,
		"--speed", fmt.Sprint(speed), "--shutdown-timeout", "20s")

	// Wait until rows have shipped for a few minutes, then stop it.
	var shippedTo time.Time
	testenv.Eventually(t, 2*time.Minute, func() error {
		if cmd.ProcessState != nil {
			t.Fatalf("simulate ended early:\n%s", logs)
		}
		for _, r := range readRows(t, remote) {
			if r.IntervalEnd.After(shippedTo) {
				shippedTo = r.IntervalEnd
			}
		}
		if shippedTo.Sub(sc.Start) < 3*time.Minute {
			return fmt.Errorf("ClickHouse holds rows up to %s", shippedTo)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Since(began)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("simulate after SIGTERM: %v\n%s", err, logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("simulate still running a minute after SIGTERM:\n%s", logs)
	}

	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "stopped by signal") || strings.Contains(line, "shipped every pending row") {
			t.Log(line) // how long the drain took, for the record
		}
	}
	rows := readRows(t, remote)
	// The termination instant: where the last rows end. It lies past what
	// had shipped when the signal went, no later than the wall clock allows
	// at this speed, and mid-minute: the open interval was closed there,
	// not dropped and not stretched to the minute.
	var end time.Time
	seen := map[string]int{}
	for _, r := range rows {
		if r.IntervalEnd.After(end) {
			end = r.IntervalEnd
		}
		seen[fmt.Sprint(r.IntervalStart.UnixNano(), r.GPUUUID, r.SliceID, r.PodUID, r.Container, r.Kind)]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("row %s is in ClickHouse %d times", k, n)
		}
	}
	if latest := sc.Start.Add(time.Duration(float64(signalled) * speed)); end.Before(shippedTo) || end.After(latest) {
		t.Fatalf("rows end at %s, want between %s (shipped before the signal) and %s (the wall clock's bound)", end, shippedTo, latest)
	}
	if end.Sub(sc.Start)%time.Minute == 0 {
		t.Fatalf("rows end at %s, on a minute: the interval open at the signal is missing", end)
	}
	cover := checkIntervalPartitions(t, rows)
	want := end.Sub(sc.Start).Seconds()
	for _, g := range sc.GPUs {
		if math.Abs(cover[g.UUID]-want) > 1e-6 {
			t.Errorf("GPU %s: ClickHouse covers %.6f s, want every second up to the termination instant, %.6f s", g.UUID, cover[g.UUID], want)
		}
	}
	// The node's file holds the same rows, all marked shipped.
	local, err := filestore.OpenFile(ctx, filepath.Join(out, "ledger.db"), filestore.FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if n := len(readRows(t, local)); n != len(rows) {
		t.Errorf("the node file holds %d rows, ClickHouse %d", n, len(rows))
	}
	if pending, _, err := local.OutboxStats(ctx, "clickhouse"); err != nil || pending != 0 {
		t.Errorf("node file: %d rows pending (%v), want none", pending, err)
	}
}

func readRows(t *testing.T, st ledger.Store) []attribution.Row {
	t.Helper()
	var rows []attribution.Row
	if err := st.Rows(context.Background(), time.Time{}, time.Time{}, func(r attribution.Row) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// Stop closes the open interval at the clock's instant, between two polls:
// one more observation covers the seconds since the last cycle, so the
// rows of every GPU cover the run to that instant and both partitions
// close (Flush alone would end them at the last poll, 90 s).
func TestStopClosesTheIntervalAtTheTerminationInstant(t *testing.T) {
	sc, err := scenario.Parse([]byte(shutdownScenario), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node, err := sim.New(ctx, sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	var sink memSink
	c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team"}, []collector.Sink{&sink}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrc()
	for at := time.Duration(0); at <= 90*time.Second; at += sc.PollInterval {
		if err := node.Advance(sc.Start.Add(at)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	instant := sc.Start.Add(93*time.Second + 250*time.Millisecond)
	if err := node.Advance(instant); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	cover := checkIntervalPartitions(t, sink.rows)
	for _, g := range sc.GPUs {
		if cover[g.UUID] != 93.25 {
			t.Errorf("GPU %s covered %v s, want 93.25 (to the instant of Stop)", g.UUID, cover[g.UUID])
		}
	}
}
