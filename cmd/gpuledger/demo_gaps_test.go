package main

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// The interrupted demo: the demo's own fleet backfilled over three days
// (2026-11-01 to 11-04), three of its four nodes stopping at 06:00 on
// 11-02 (as a Ctrl-C or a crash-looping collector leaves them: no clean
// leave), demo-hami going on to the end. The report says so in words, in
// the partial note every format and serve page shows, and bills only the
// rows. By hand: demo-mig (1 GPU), demo-mps (1) and demo-timeslicing (2)
// miss 11-02 06:00 to 11-04 00:00, 42 h: 4 x 42 = 168 GPU-hours in 3
// gaps. Deterministic: the scenarios are cut by duration, not by time.
func TestInterruptedDemoSaysWhichNodesStoppedSending(t *testing.T) {
	ctx := context.Background()
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const days = 3
	to := from.AddDate(0, 0, days)
	stop := 30 * time.Hour // 2026-11-02 06:00
	scs, err := backfillScenarios(from, days)
	if err != nil {
		t.Fatal(err)
	}
	store, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	full := 0
	for _, sc := range scs {
		if sc.Node.Name != "demo-hami" {
			sc.Duration = stop
		} else {
			full++
		}
		if err := simulateScenario(ctx, sc, simOptions{TeamLabel: "team"}, []collector.Sink{store}, nil); err != nil {
			t.Fatalf("node %s: %v", sc.Node.Name, err)
		}
	}
	if full != 1 || len(scs) != 4 {
		t.Fatalf("the demo fleet has %d nodes, %d of them demo-hami", len(scs), full)
	}
	book, err := demoPrices()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build(ctx, store, book, from, to)
	if err != nil {
		t.Fatal(err)
	}
	want := "3 nodes stopped sending on 2026-11-02 (demo-mig, demo-mps, demo-timeslicing)"
	if note := rep.PartialNote(); !strings.Contains(note, want) || !strings.Contains(note, "3 gaps without data (168.00 GPU-hours), not billed") {
		t.Errorf("partial note %q\nwant it to say %q and 3 gaps of 168 GPU-hours", note, want)
	}
	if c := rep.Coverage; c.Empty() || c.GPUHours.Cmp(big.NewRat(168, 1)) != 0 || c.Count != 3 {
		t.Errorf("coverage %+v, want 3 gaps, 168 GPU-hours", c)
	}
	// What the command prints: the HTML's banner and the CSV's records.
	var html, csvOut bytes.Buffer
	if err := report.WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteCSV(&csvOut, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), want) {
		t.Errorf("the HTML report does not say %q", want)
	}
	if !strings.Contains(csvOut.String(), "# coverage_gap node=demo-timeslicing gpus=2 from=2026-11-02T06:00:00Z to=2026-11-04T00:00:00Z gpu_hours=84.000000") {
		t.Errorf("the CSV lacks demo-timeslicing's gap:\n%s", csvOut.String())
	}
}

// TestDemoInterruptedBackfill interrupts the demo itself, as SIGINT does:
// the context main gets from signal.NotifyContext is cancelled, here from
// the backfill's cycle callback when a node reaches a simulated instant
// (deterministic, no sleeping). Three days from 2026-11-01 (the clock is
// fixed at 11-04 12:00); the nodes take turns an hour at a time in the
// order demo-mig, demo-timeslicing, demo-mps, demo-hami, so by hand:
//
//   - demo-mig reaching 11-02 06:00: it has its rows to 06:00, the other
//     three to 05:00 (their turn for 05:00-06:00 had not come); demo-
//     timeslicing (2 GPUs), demo-mps (1) and demo-hami (1) miss one hour
//     each: 3 gaps, 4 GPU-hours.
//   - demo-mps reaching 11-02 06:30: demo-mig and demo-timeslicing reached
//     07:00, demo-mps stops at 06:30 (its collector closes the half hour),
//     demo-hami stayed at 06:00: 2 gaps, 0.5 + 1 = 1.5 GPU-hours.
//
// Node-major (the old backfill) left the later nodes unseen, and the
// report had nothing to say about them.
func TestDemoInterruptedBackfill(t *testing.T) {
	cases := []struct {
		node, at             string
		stopped, gaps, where string
		csvGap               string
	}{
		{node: "demo-mig", at: "2026-11-02T06:00:00Z",
			stopped: "3 nodes stopped sending on 2026-11-02 (demo-hami, demo-mps, demo-timeslicing)",
			gaps:    "3 gaps without data (4.00 GPU-hours), not billed",
			where:   "demo-mig 2026-11-02 06:00 UTC, demo-timeslicing 2026-11-02 05:00 UTC, demo-mps 2026-11-02 05:00 UTC, demo-hami 2026-11-02 05:00 UTC",
			csvGap:  "# coverage_gap node=demo-timeslicing gpus=2 from=2026-11-02T05:00:00Z to=2026-11-02T06:00:00Z gpu_hours=2.000000"},
		{node: "demo-mps", at: "2026-11-02T06:30:00Z",
			stopped: "2 nodes stopped sending on 2026-11-02 (demo-hami, demo-mps)",
			gaps:    "2 gaps without data (1.50 GPU-hours), not billed",
			where:   "demo-mig 2026-11-02 07:00 UTC, demo-timeslicing 2026-11-02 07:00 UTC, demo-mps 2026-11-02 06:30 UTC, demo-hami 2026-11-02 06:00 UTC",
			csvGap:  "# coverage_gap node=demo-mps gpus=1 from=2026-11-02T06:30:00Z to=2026-11-02T07:00:00Z gpu_hours=0.500000"},
	}
	now = func() time.Time { return time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC) }
	t.Cleanup(func() { now, backfillCycled = time.Now, nil })
	for _, c := range cases {
		t.Run(c.node, func(t *testing.T) {
			at, err := time.Parse(time.RFC3339, c.at)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			backfillCycled = func(node string, t time.Time) {
				if node == c.node && t.Equal(at) {
					cancel()
				}
			}
			dir := t.TempDir()
			var stdout bytes.Buffer
			err = run(ctx, []string{"demo", "--out", dir, "--days", "3", "--listen", ""}, &stdout)
			out := stdout.String()
			if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "backfill was interrupted") {
				t.Fatalf("demo returned %v, want the interrupt\n%s", err, out)
			}
			for _, want := range []string{"Backfill interrupted", "the nodes stopped at " + c.where, c.stopped, c.gaps, "search", "total billed"} {
				if !strings.Contains(out, want) {
					t.Errorf("the demo's summary does not say %q:\n%s", want, out)
				}
			}
			html, err := os.ReadFile(filepath.Join(dir, "chargeback.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(html), c.stopped) {
				t.Errorf("chargeback.html does not say %q", c.stopped)
			}
			csvOut, err := os.ReadFile(filepath.Join(dir, "chargeback.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(csvOut), c.csvGap) {
				t.Errorf("chargeback.csv lacks %q:\n%s", c.csvGap, csvOut)
			}
		})
	}
}
