package main

import (
	"bytes"
	"context"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReportEnergyCSVAndFOCUS: with an energy section in the price book
// the finance CSV ends with energy_cost and co2e_kg and the FOCUS file
// (one row per device and pod) has x_EnergyCost and x_Co2eKg; the lines'
// figures add up to the file's kWh x the rate (x the intensity) rounded
// once, the FOCUS rows to the CSV's, and the bill is the same as without
// the section.
func TestReportEnergyCSVAndFOCUS(t *testing.T) {
	db, _ := simulatedLedger(t)
	dir := t.TempDir()
	plain := pricesFile(t, "allocation")
	body, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	prices := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, append(body, "energy: {rate: 0.2345, carbonIntensity: 0.4125 kgCO2e/kWh}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, book := range map[string]string{"plain.csv": plain, "energy.csv": prices, "energy.focus.csv": prices} {
		args := []string{"--period", "2026-11", "--prices", book, "--ledger", db, "--out", filepath.Join(dir, name)}
		if name == "energy.focus.csv" {
			args = append(args, "--format", "focus")
		}
		if err := runReport(context.Background(), args, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	plainRecs, recs := readCSV(t, filepath.Join(dir, "plain.csv")), readCSV(t, filepath.Join(dir, "energy.csv"))
	h := recs[0]
	if !slices.Equal(h[:len(h)-2], plainRecs[0]) || h[len(h)-2] != "energy_cost" || h[len(h)-1] != "co2e_kg" {
		t.Fatalf("header %v", h)
	}
	rat := func(s string) *big.Rat {
		if s == "" {
			return new(big.Rat)
		}
		x, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("not a number: %q", s)
		}
		return x
	}
	kwh, cost, kg := new(big.Rat), new(big.Rat), new(big.Rat)
	for i, rec := range recs[1:] {
		if !slices.Equal(rec[:len(rec)-2], plainRecs[i+1]) {
			t.Errorf("line %d differs from the plain book's: %v vs %v", i, rec, plainRecs[i+1])
		}
		kwh.Add(kwh, rat(rec[10]))
		cost.Add(cost, rat(rec[len(rec)-2]))
		kg.Add(kg, rat(rec[len(rec)-1]))
	}
	if kwh.Sign() <= 0 {
		t.Fatal("the simulated ledger has no energy")
	}
	wantCost := new(big.Rat).Mul(kwh, big.NewRat(2345, 10000)).FloatString(2)
	wantKg := new(big.Rat).Mul(kwh, big.NewRat(4125, 10000)).FloatString(3)
	if cost.FloatString(2) != wantCost || kg.FloatString(3) != wantKg {
		t.Errorf("lines add up to %s and %s kg; %s kWh x 0.2345 = %s, x 0.4125 kg = %s", cost.FloatString(2), kg.FloatString(3),
			kwh.FloatString(6), wantCost, wantKg)
	}
	focus := readCSV(t, filepath.Join(dir, "energy.focus.csv"))
	ic, ig := slices.Index(focus[0], "x_EnergyCost"), slices.Index(focus[0], "x_Co2eKg")
	if ic < 0 || ig < 0 {
		t.Fatalf("FOCUS header %v", focus[0])
	}
	fc, fg := new(big.Rat), new(big.Rat)
	for _, rec := range focus[1:] {
		fc.Add(fc, rat(rec[ic]))
		fg.Add(fg, rat(rec[ig]))
	}
	if fc.Cmp(cost) != 0 || fg.Cmp(kg) != 0 || len(focus) < 8 {
		t.Errorf("FOCUS rows (%d) add up to %s and %s kg, the CSV to %s and %s", len(focus)-1, fc.FloatString(2), fg.FloatString(3),
			cost.FloatString(2), kg.FloatString(3))
	}
}
