package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"log/slog"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
)

// simulatedLedger simulates the reference example mps-hostile-103 (seven MPS
// tenants of one A100 for 180 s, tenant-6 noisy) into a ledger.db.
func simulatedLedger(t *testing.T) (db string, truth map[string]struct{ Allocated, Used float64 }) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "examples", "mps-hostile-103")
	out := t.TempDir()
	if err := run(context.Background(), []string{"simulate", "--scenario", filepath.Join(dir, "scenario.yaml"), "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Containers map[string]struct{ Allocated, Used float64 } `json:"containers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, "ledger.db"), doc.Containers
}

// pricesFile writes a price book; 3600 per GPU-hour is 1 per GPU-second,
// so amounts read as seconds.
func pricesFile(t *testing.T, policy string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prices.yaml")
	body := "currency: USD\ntimezone: UTC\npolicy: " + policy + "\nidle: platform\nrates:\n  A100-SXM4-80GB: 3600\ndefaultRate: 1\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestReportOnSimulatedLedger: the month's CSV of a simulated node adds up
// to its capacity (180 GPU-seconds x 1 per second = 180.00) under both
// policies; under allocation each of the seven tenants holds a seventh
// (25.714... s: 25.71 or 25.72 by largest remainder), under usage each
// pays for what the scenario's ground truth says it used.
func TestReportOnSimulatedLedger(t *testing.T) {
	db, truth := simulatedLedger(t)
	teams := map[string]string{"search": "tenant-0/infer-0/server", "ads": "tenant-1/infer-1/server", "fraud": "tenant-2/infer-2/server",
		"recsys": "tenant-3/infer-3/server", "vision": "tenant-4/infer-4/server", "speech": "tenant-5/infer-5/server", "research": "tenant-6/infer-6/server"}
	for _, policy := range []string{"allocation", "usage"} {
		out := filepath.Join(t.TempDir(), "chargeback.csv")
		var stdout bytes.Buffer
		err := runReport(context.Background(), []string{"--period", "2026-11", "--prices", pricesFile(t, policy), "--ledger", db, "--out", out}, &stdout)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), "chargeback 2026-11, 180.00 USD") {
			t.Errorf("%s: stdout %q", policy, stdout.String())
		}
		sum := new(big.Rat)
		charged := 0
		for _, rec := range readCSV(t, out)[1:] {
			amt, _ := new(big.Rat).SetString(rec[12])
			sum.Add(sum, amt)
			if rec[6] != "charge" {
				continue
			}
			charged++
			c, ok := truth[teams[rec[2]]]
			if !ok {
				t.Errorf("unexpected team %q", rec[2])
				continue
			}
			got, _ := strconv.ParseFloat(rec[12], 64)
			switch policy {
			case "allocation":
				if rec[12] != "25.71" && rec[12] != "25.72" {
					t.Errorf("allocation: %s pays %s, want 25.71 or 25.72 (180 s / 7)", rec[2], rec[12])
				}
			case "usage":
				if math.Abs(got-c.Used) > 0.02*c.Used+0.5 {
					t.Errorf("usage: %s pays %s, ground truth used %.2f s", rec[2], rec[12], c.Used)
				}
			}
		}
		if charged != 7 || sum.FloatString(2) != "180.00" {
			t.Errorf("%s: %d charge lines, amounts add up to %s, want 7 and 180.00", policy, charged, sum.FloatString(2))
		}
	}
}

// TestReportFormatsFromTheSameLedger: JSON and HTML carry the same total
// and the HTML names the noisy neighbour and the pods it starved.
func TestReportFormatsFromTheSameLedger(t *testing.T) {
	db, _ := simulatedLedger(t)
	t.Setenv("GPULEDGER_LEDGER", db) // no --ledger: the environment names it
	prices := pricesFile(t, "usage")
	dir := t.TempDir()
	for _, name := range []string{"r.json", "r.html"} {
		if err := runReport(context.Background(), []string{"--from", "2026-11-01", "--to", "2026-12-01", "--prices", prices,
			"--out", filepath.Join(dir, name)}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	var doc struct {
		Total json.Number `json:"total"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(data, &doc); err != nil || doc.Total != "180.00" {
		t.Errorf("JSON total %q (%v)", doc.Total, err)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "r.html"))
	for _, want := range []string{"<!DOCTYPE html>", "180.00", "tenant-6/infer-6", "tenant-0/infer-0", "Noisy neighbours"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// A period with no ledger data, or one that has not started, is an error
// (exit 1, nothing written), not a header-only CSV that reads as a zero bill.
func TestReportEmptyOrFuturePeriodFails(t *testing.T) {
	db := repoScenarioLedger(t) // data on 2026-11-03
	fixNow(t, time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	prices := pricesFile(t, "allocation")
	for period, want := range map[string]string{"2026-12": "has not started yet", "2026-10": "no data in it"} {
		out := filepath.Join(t.TempDir(), "r.csv")
		code, stdout, stderr := runCLI("report", "--period", period, "--prices", prices, "--ledger", db, "--out", out)
		if code != 1 || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", period, code, stdout, stderr, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a report was written", period)
		}
	}
}

// The current month's report says on stderr that it is partial, naming
// the end of the ledger's last row (the scenario runs 8 minutes from
// midnight); its CSV keeps the finance columns and marks every line.
func TestReportOfTheCurrentMonthWarnsItIsPartial(t *testing.T) {
	db := repoScenarioLedger(t)
	fixNow(t, time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	code, stdout, _ := runCLI("report", "--period", "2026-11", "--prices", pricesFile(t, "allocation"), "--ledger", db)
	if code != 0 || !strings.HasPrefix(stdout, strings.Join(report.CSVHeader, ",")+"\n") {
		t.Fatalf("exit %d, CSV %q", code, stdout)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "partial: ledger data 2026-11-03 to 2026-11-03 00:08 UTC only") {
		t.Errorf("no partial warning on stderr: %s", logs.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		if !strings.Contains(line, ",2026-11-03T00:00:00Z,2026-11-03T00:08:00Z,true,") {
			t.Errorf("CSV line not marked partial with the data's bounds: %s", line)
		}
	}
}

// repoScenarioLedger simulates the repository's exclusive-basic scenario
// (2026-11-03) into a ledger.db.
func repoScenarioLedger(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	sc := filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml")
	if err := run(context.Background(), []string{"simulate", "--scenario", sc, "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, "ledger.db")
}

func fixNow(t *testing.T, at time.Time) {
	now = func() time.Time { return at }
	t.Cleanup(func() { now = time.Now })
}

func TestReportFlagErrors(t *testing.T) {
	t.Setenv("GPULEDGER_LEDGER", "")
	t.Setenv("GPULEDGER_PRICES", "")
	prices := pricesFile(t, "allocation")
	missing := filepath.Join(t.TempDir(), "none.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--prices", prices, "--ledger", missing}, "--period"},
		{[]string{"--period", "2026-03", "--from", "2026-03-01", "--to", "2026-04-01", "--prices", prices, "--ledger", missing}, "not both"},
		{[]string{"--period", "2026-03", "--ledger", missing}, "--prices"},
		{[]string{"--period", "2026-03", "--prices", prices}, "--ledger"},
		{[]string{"--period", "2026-03", "--prices", prices, "--ledger", missing, "--format", "xlsx"}, `"xlsx"`},
		{[]string{"--period", "March", "--prices", prices, "--ledger", missing}, "YYYY-MM"},
		{[]string{"--from", "2026-04-01", "--to", "2026-03-01", "--prices", prices, "--ledger", missing}, "not before"},
		{[]string{"--from", "soon", "--to", "2026-03-01", "--prices", prices, "--ledger", missing}, "--from"},
		{[]string{"--period", "2026-03", "--prices", prices, "--ledger", missing}, "none.db"},
		{[]string{"--period", "2026-03", "--prices", filepath.Join(t.TempDir(), "p.yaml"), "--ledger", missing}, "p.yaml"},
		{[]string{"--period", "2026-03", "--prices", prices, "--ledger", "mysql://x"}, "unsupported scheme"},
		{[]string{"--period", "2026-03", "extra"}, "unexpected argument"},
	}
	for _, c := range cases {
		err := runReport(context.Background(), c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a report created the ledger file it was asked to read")
	}
}

func TestFormatFromName(t *testing.T) {
	for name, want := range map[string]string{"a.html": "html", "A.HTM": "html", "x.json": "json", "x.csv": "csv", "": "csv", "-": "csv"} {
		if got := formatFromName(name); got != want {
			t.Errorf("formatFromName(%q) = %q, want %q", name, got, want)
		}
	}
}
