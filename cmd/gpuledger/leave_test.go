package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
)

// A node whose collector is SIGTERMed leaves cleanly: the shutdown path
// appends a node_left finding at the end of its last row, and a report
// over a period in which the rest of the fleet goes on has no coverage gap
// for it. The same rows without the leave (a crash) have one, from the
// last row to the data's end.
func TestSIGTERMRecordsACleanLeaveAndNoGap(t *testing.T) {
	dir := t.TempDir()
	scPath := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scPath, []byte(shutdownScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd, logs := gpuledgerProcess(t, "simulate", "--scenario", scPath, "--out", out, "--speed", "60")
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if cmd.ProcessState != nil {
			t.Fatalf("simulate ended early:\n%s", logs)
		}
		st, err := filestore.OpenFile(ctx, filepath.Join(out, "ledger.db"), filestore.FileOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer st.Close()
		if n := len(readRows(t, st)); n < 6 {
			return fmt.Errorf("%d rows so far", n)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("simulate after SIGTERM: %v\n%s", err, logs)
	}
	st, err := filestore.OpenFile(ctx, filepath.Join(out, "ledger.db"), filestore.FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows := readRows(t, st)
	var end time.Time
	for _, r := range rows {
		if r.IntervalEnd.After(end) {
			end = r.IntervalEnd
		}
	}
	var leaves []attribution.Finding
	if err := st.Findings(ctx, time.Time{}, time.Time{}, func(f attribution.Finding) error {
		if f.Kind == ledger.FindingNodeLeft {
			leaves = append(leaves, f)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(leaves) != 1 || leaves[0].Node != "leaving" || !leaves[0].Start.Equal(end) {
		t.Fatalf("leaves %+v, want one of node leaving at its last row's end %s", leaves, end)
	}

	// The rest of the fleet goes on for an hour after the leave.
	start := rows[0].IntervalStart
	var other []attribution.Row
	for s := start; s.Before(end.Add(time.Hour)); s = s.Add(time.Minute) {
		other = append(other, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Minute), Node: "staying", GPUUUID: "GPU-staying",
			SliceID: "GPU-staying", GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindUnallocated,
			AllocatedGPUSeconds: 60, Method: attribution.MethodMeasured})
	}
	if err := st.Append(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	book, err := demoPrices()
	if err != nil {
		t.Fatal(err)
	}
	from, to := start, end.Add(time.Hour)
	rep, err := report.Build(ctx, st, book, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Coverage.Empty() {
		t.Errorf("a clean leave left gaps: %+v", rep.Coverage.Gaps)
	}

	crashed, err := filestore.OpenFile(ctx, filepath.Join(dir, "crashed.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	if err := crashed.Append(ctx, append(rows, other...), nil); err != nil {
		t.Fatal(err)
	}
	rep, err = report.Build(ctx, crashed, book, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Coverage; c.Empty() || c.Count != 1 || c.Gaps[0].Node != "leaving" || c.Gaps[0].GPUs != 2 || !c.Gaps[0].From.Equal(end) || !c.Gaps[0].To.Equal(to) {
		t.Errorf("without the leave: coverage %+v, want node leaving's 2 GPUs from %s to %s", c, end, to)
	}
}
