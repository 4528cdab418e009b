package main

import (
	"bytes"
	"context"
	"math/big"
	"os"
	"path/filepath"
	"testing"
)

// TestHAMiTricksMoveNoMoney: the hostile HAMi scenarios against their
// honest twins (testdata/scenarios), priced under the allocation policy
// with both idle settings. A tenant naming a GPU the node does not have,
// or asking HAMi for memory and no cores while it keeps the GPU busy,
// must not change what its neighbour's team (payments) pays, to the cent;
// nor pay less than it would honestly. Before, the neighbour paid for the
// tenant's time under idle: shared: 4.10 instead of 1.75 (hami-ghost-gpu)
// and 3.51 instead of 1.37 (hami-uncapped), at 49.20 per GPU-hour, and
// the tenant 0.00 and 0.59 instead of 2.35 and 2.73.
func TestHAMiTricksMoveNoMoney(t *testing.T) {
	for _, pair := range []struct{ hostile, honest, tenant string }{
		{"hami-ghost-gpu", "hami-ghost-gpu-honest", "growth"},
		{"hami-uncapped", "hami-uncapped-honest", "growth"},
	} {
		hostile, honest := simulateCorpus(t, pair.hostile), simulateCorpus(t, pair.honest)
		for _, idle := range []string{"platform", "shared"} {
			prices := hamiPrices(t, idle)
			got, want := teamBill(t, hostile, prices), teamBill(t, honest, prices)
			t.Logf("%s, idle %s: hostile %v, honest %v", pair.hostile, idle, got, want)
			if got["payments"] != want["payments"] {
				t.Errorf("%s, idle %s: the neighbour pays %s, %s in the honest run", pair.hostile, idle, got["payments"], want["payments"])
			}
			g, okG := new(big.Rat).SetString(got[pair.tenant])
			w, okW := new(big.Rat).SetString(want[pair.tenant])
			if !okG || !okW || g.Cmp(w) < 0 {
				t.Errorf("%s, idle %s: the tenant pays %q, %q in the honest run", pair.hostile, idle, got[pair.tenant], want[pair.tenant])
			}
			if want["payments"] == "" || want["payments"] == "0.00" {
				t.Errorf("%s, idle %s: the honest neighbour pays %q: the check checked nothing", pair.honest, idle, want["payments"])
			}
		}
	}
}

// simulateCorpus runs a corpus scenario into a ledger.db.
func simulateCorpus(t *testing.T, name string) string {
	t.Helper()
	out := t.TempDir()
	sc := filepath.Join("..", "..", "testdata", "scenarios", name, "scenario.yaml")
	if err := run(context.Background(), []string{"simulate", "--scenario", sc, "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatalf("simulate %s: %v", name, err)
	}
	return filepath.Join(out, "ledger.db")
}

// hamiPrices is a price book for the H100 HAMi scenarios: 49.20 per
// GPU-hour, 4.10 for one GPU over their 300 s.
func hamiPrices(t *testing.T, idle string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prices.yaml")
	body := "currency: USD\ntimezone: UTC\npolicy: allocation\nidle: " + idle + "\nrates:\n  H100-SXM5-80GB: 49.20\ndefaultRate: 49.20\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// teamBill prices a ledger for November 2026 and adds up each team's
// lines (charge and idle share) of the finance CSV, to the cent.
func teamBill(t *testing.T, db, prices string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "chargeback.csv")
	if err := runReport(context.Background(), []string{"--period", "2026-11", "--prices", prices, "--ledger", db, "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	sums := map[string]*big.Rat{}
	for _, rec := range readCSV(t, out)[1:] {
		if rec[2] == "" {
			continue // platform and rounding lines
		}
		amt, ok := new(big.Rat).SetString(rec[12])
		if !ok {
			t.Fatalf("amount %q of %v", rec[12], rec)
		}
		if sums[rec[2]] == nil {
			sums[rec[2]] = new(big.Rat)
		}
		sums[rec[2]].Add(sums[rec[2]], amt)
	}
	totals := make(map[string]string, len(sums))
	for team, s := range sums {
		totals[team] = s.FloatString(2)
	}
	return totals
}
