package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// TestReportFOCUSVersion14: `report --format focus --focus-version 1.4`
// writes a file the 1.4 rules accept: HostProviderName and no
// ProviderName or PublisherName, and the 1.3 file's rows otherwise, the
// same BilledCost on every row. The default stays 1.3; another version is
// an error naming it.
func TestReportFOCUSVersion14(t *testing.T) {
	db, _ := simulatedLedger(t)
	dir := t.TempDir()
	prices := pricesFile(t, "allocation")
	f13, f14 := filepath.Join(dir, "focus13.csv"), filepath.Join(dir, "focus14.csv")
	base := []string{"--period", "2026-11", "--prices", prices, "--ledger", db, "--format", "focus"}
	for _, args := range [][]string{append(slices.Clone(base), "--out", f13), append(slices.Clone(base), "--focus-version", "1.4", "--out", f14)} {
		if err := runReport(context.Background(), args, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	for path, version := range map[string]string{f13: focusvalidate.Version13, f14: focusvalidate.Version14} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if vs, err := focusvalidate.ValidateVersion(bytes.NewReader(data), version); err != nil || len(vs) > 0 {
			t.Errorf("FOCUS %s: validator: %v %v", version, vs, err)
		}
	}
	r13, r14 := readCSV(t, f13), readCSV(t, f14)
	if !slices.Contains(r13[0], "ProviderName") || !slices.Contains(r13[0], "PublisherName") {
		t.Errorf("1.3 header %v: no ProviderName or PublisherName", r13[0])
	}
	if slices.Contains(r14[0], "ProviderName") || slices.Contains(r14[0], "PublisherName") || !slices.Contains(r14[0], "HostProviderName") {
		t.Errorf("1.4 header %v", r14[0])
	}
	cost13, cost14 := slices.Index(r13[0], "BilledCost"), slices.Index(r14[0], "BilledCost")
	if len(r13) != len(r14) || len(r13) < 2 {
		t.Fatalf("%d rows in 1.3, %d in 1.4", len(r13), len(r14))
	}
	for i := 1; i < len(r13); i++ {
		if r13[i][cost13] != r14[i][cost14] {
			t.Errorf("row %d: BilledCost %s in 1.3, %s in 1.4", i, r13[i][cost13], r14[i][cost14])
		}
	}
	err := runReport(context.Background(), append(slices.Clone(base), "--focus-version", "1.2", "--out", filepath.Join(dir, "x.csv")), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `--focus-version "1.2"`) {
		t.Errorf("--focus-version 1.2: %v", err)
	}
}
