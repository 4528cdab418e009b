package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `simulate` writes ledger.csv and the embedded ledger.db; exporting the
// store gives back exactly the CSV's rows.
func TestSimulateThenExportGivesTheSameLedger(t *testing.T) {
	out := t.TempDir()
	sc := filepath.Join("..", "..", "testdata", "scenarios", "churn-pidreuse", "scenario.yaml")
	ctx := context.Background()
	if err := run(ctx, []string{"simulate", "--scenario", sc, "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	csvFile, err := os.ReadFile(filepath.Join(out, "ledger.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var exported bytes.Buffer
	if err := run(ctx, []string{"ledger", "export", "--ledger", filepath.Join(out, "ledger.db"),
		"--from", "2026-01-01", "--to", "2027-01-01", "--format", "csv"}, &exported); err != nil {
		t.Fatal(err)
	}
	want, got := sortedLines(string(csvFile)), sortedLines(exported.String())
	if len(want) < 10 {
		t.Fatalf("simulation wrote only %d lines", len(want))
	}
	if !slices.Equal(want, got) {
		t.Errorf("export differs from ledger.csv: %d vs %d lines", len(got), len(want))
	}
}

func TestUnknownCommandAndMissingFlagsAreErrors(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"nope"}, {"simulate"}, {"simulate", "--scenario", "x.yaml"}} {
		if err := run(ctx, args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	err := run(ctx, []string{"simulate", "--scenario", filepath.Join(t.TempDir(), "missing.yaml"), "--out", t.TempDir()}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing scenario: %v", err)
	}
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}
