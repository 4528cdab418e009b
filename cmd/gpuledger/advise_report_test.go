package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report --advice: the chargeback of the seven-replica month with the
// advisor's savings (the consolidation's 10,368.00 USD) in its JSON and
// HTML, the bill itself unchanged; bad flag combinations are errors.
func TestReportWithAdvice(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a month of ledger rows")
	}
	db := adviseLedger(t)
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	os.WriteFile(prices, []byte("currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\n  H100-SXM5-80GB: 4.123456789\ndefaultRate: 1\n"), 0o644)
	ctx := context.Background()
	base := []string{"report", "--period", "2026-11", "--ledger", db, "--prices", prices}
	var plain, advised bytes.Buffer
	if err := run(ctx, append(base, "--format", "json"), &plain); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, append(base, "--format", "json", "--advice"), &advised); err != nil {
		t.Fatal(err)
	}
	var p, a map[string]json.RawMessage
	if err := json.Unmarshal(plain.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(advised.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if _, ok := p["savings"]; ok {
		t.Error("report without --advice has savings")
	}
	if string(a["total"]) != string(p["total"]) || string(a["lines"]) != string(p["lines"]) {
		t.Errorf("--advice changed the bill: total %s vs %s", a["total"], p["total"])
	}
	var s struct {
		Total           json.Number `json:"total"`
		Recommendations []struct {
			Kind      string      `json:"kind"`
			Workloads []string    `json:"workloads"`
			Saving    json.Number `json:"saving"`
		} `json:"recommendations"`
	}
	if err := json.Unmarshal(a["savings"], &s); err != nil {
		t.Fatalf("%v: %s", err, a["savings"])
	}
	if s.Total != "10368.00" || len(s.Recommendations) != 2 || s.Recommendations[0].Kind != "consolidate" ||
		s.Recommendations[0].Saving != "10368.00" || s.Recommendations[1].Kind != "keep" {
		t.Errorf("savings %s", a["savings"])
	}
	var page bytes.Buffer
	if err := run(ctx, append(base, "--format", "html", "--advice"), &page); err != nil {
		t.Fatal(err)
	}
	if h := page.String(); !strings.Contains(h, `id="savings"`) || !strings.Contains(h, "10,368.00") || !strings.Contains(h, "under MPS") {
		t.Error("HTML report with --advice lacks the savings section")
	}
	for _, bad := range [][]string{
		append(base, "--format", "csv", "--advice"),
		append(base, "--format", "focus", "--advice"),
		append(base, "--format", "json", "--pods", "pods.json"),
	} {
		if err := run(ctx, bad, &page); err == nil {
			t.Errorf("%v: no error", bad[len(bad)-3:])
		}
	}
}
