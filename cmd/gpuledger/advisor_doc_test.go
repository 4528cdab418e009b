package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The demo figures docs/advisor.md quotes are the demo's: 30 days ending
// 24 November 2026, then advise over the same days.
func TestAdvisorDocFiguresAreTheDemos(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills 30 days of the demo fleet")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "advisor.md"))
	if err != nil {
		t.Fatal(err)
	}
	quoted := map[string]*regexp.Regexp{
		"reclaim":      regexp.MustCompile(`reclaims the two idle notebooks\s+\(([0-9,.]+) USD each\)`),
		"right-size":   regexp.MustCompile("to 2 × MIG 1g\\.10gb\\s+\\(([0-9,.]+)\\)"),
		"charges":      regexp.MustCompile(`The charge lines\s+\(([0-9,.]+)\)`),
		"report_total": regexp.MustCompile(`the report total\s+\(([0-9,.]+)\)`),
	}
	want := map[string]string{}
	for k, re := range quoted {
		m := re.FindSubmatch(doc)
		if m == nil {
			t.Fatalf("docs/advisor.md no longer quotes the demo's %s figure as %s", k, re)
		}
		want[k] = strings.ReplaceAll(string(m[1]), ",", "")
	}
	prices, err := filepath.Abs(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fixed := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = time.Now })
	out := t.TempDir()
	if err := run(context.Background(), []string{"demo", "--out", out, "--days", "30", "--listen", ""}, io.Discard); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"advise", "--ledger", filepath.Join(out, "ledger.db"), "--prices", prices,
		"--from", "2026-10-25", "--to", "2026-11-24", "--format", "json"}, &buf); err != nil {
		t.Fatal(err)
	}
	var adv struct {
		Reconciliation struct {
			ReportTotal   json.Number `json:"report_total"`
			ReportCharges json.Number `json:"report_charge_lines"`
		} `json:"reconciliation"`
		Recommendations []struct {
			Kind      string      `json:"kind"`
			Workloads []string    `json:"workloads"`
			Saving    json.Number `json:"saving"`
		} `json:"recommendations"`
	}
	if err := json.Unmarshal(buf.Bytes(), &adv); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"charges": adv.Reconciliation.ReportCharges.String(), "report_total": adv.Reconciliation.ReportTotal.String()}
	for _, r := range adv.Recommendations {
		switch {
		case r.Kind == "reclaim" && strings.HasPrefix(r.Workloads[0], "notebooks/"):
			if got["reclaim"] != "" && got["reclaim"] != r.Saving.String() {
				t.Errorf("the two notebooks save %s and %s, not the same", got["reclaim"], r.Saving)
			}
			got["reclaim"] = r.Saving.String()
		case r.Kind == "right-size" && r.Workloads[0] == "search/embed":
			got["right-size"] = r.Saving.String()
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("docs/advisor.md quotes %s %s, the demo gives %s", k, w, got[k])
		}
	}
}
