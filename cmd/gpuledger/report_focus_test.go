package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// TestReportFOCUSOnSimulatedLedger: `report --format focus` on a simulated
// node (seven MPS tenants of one A100 for 180 s at 1 per GPU-second) writes
// a file the FOCUS validator accepts, whose BilledCost adds up to the
// node's capacity, 180.00, and to the finance CSV's amounts, under both
// policies.
func TestReportFOCUSOnSimulatedLedger(t *testing.T) {
	db, _ := simulatedLedger(t)
	for _, policy := range []string{"allocation", "usage"} {
		dir := t.TempDir()
		prices := pricesFile(t, policy)
		fo, fin, jl := filepath.Join(dir, "focus.csv"), filepath.Join(dir, "finance.csv"), filepath.Join(dir, "focus.jsonl")
		for _, args := range [][]string{{"--format", "focus", "--out", fo}, {"--out", fin}, {"--format", "focus-jsonl", "--out", jl}} {
			args = append([]string{"--period", "2026-11", "--prices", prices, "--ledger", db}, args...)
			if err := runReport(context.Background(), args, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(fo)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := focusvalidate.Validate(bytes.NewReader(data))
		if err != nil || len(vs) > 0 {
			t.Fatalf("%s: validator: %v %v", policy, vs, err)
		}
		billed := columnSum(t, readCSV(t, fo), "BilledCost")
		amounts := columnSum(t, readCSV(t, fin), "amount")
		if billed.FloatString(2) != "180.00" || billed.Cmp(amounts) != 0 {
			t.Errorf("%s: BilledCost adds up to %s, finance CSV %s, want 180.00", policy, billed.FloatString(2), amounts.FloatString(2))
		}
		// The JSON lines hold the same costs, as numbers.
		data, err = os.ReadFile(jl)
		if err != nil {
			t.Fatal(err)
		}
		jsonSum := new(big.Rat)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		for _, line := range lines {
			var row struct{ BilledCost json.Number }
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			x, ok := new(big.Rat).SetString(row.BilledCost.String())
			if !ok {
				t.Fatalf("BilledCost %q", row.BilledCost)
			}
			jsonSum.Add(jsonSum, x)
		}
		if len(lines) != len(readCSV(t, fo))-1 || jsonSum.Cmp(billed) != 0 {
			t.Errorf("%s: %d JSON lines adding up to %s; CSV %d rows, %s", policy, len(lines), jsonSum.FloatString(2),
				len(readCSV(t, fo))-1, billed.FloatString(2))
		}
	}
}

// TestReportFOCUSEmptyPeriod: a FOCUS export of a month the ledger has no
// data for is an error, and leaves no file behind.
func TestReportFOCUSEmptyPeriod(t *testing.T) {
	db, _ := simulatedLedger(t)
	out := filepath.Join(t.TempDir(), "focus.csv")
	err := runReport(context.Background(), []string{"--period", "2026-10", "--prices", pricesFile(t, "allocation"), "--ledger", db,
		"--format", "focus", "--out", out}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no data") {
		t.Fatalf("err = %v, want no data", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s exists after the error (%v)", out, err)
	}
}

func columnSum(t *testing.T, recs [][]string, col string) *big.Rat {
	t.Helper()
	idx := -1
	for i, h := range recs[0] {
		if h == col {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no column %s", col)
	}
	sum := new(big.Rat)
	for _, r := range recs[1:] {
		x, ok := new(big.Rat).SetString(r[idx])
		if !ok {
			t.Fatalf("%s %q", col, r[idx])
		}
		sum.Add(sum, x)
	}
	return sum
}
