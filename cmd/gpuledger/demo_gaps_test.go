package main

import (
	"bytes"
	"context"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/collector"
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
