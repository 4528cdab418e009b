package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/attribution"
)

// heldA100 is n hours of one whole A100 held (and half used) by team ml
// from start: the rows a collector writes, both partitions closed.
func heldA100(start time.Time, n int) []attribution.Row {
	var rows []attribution.Row
	for i := range n {
		s := start.Add(time.Duration(i) * time.Hour)
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", SliceID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Method: attribution.MethodMeasured}
		c := base
		c.Kind, c.Team, c.Namespace, c.Pod, c.PodUID, c.Container = attribution.KindContainer, "ml", "ml", "train", "uid-1", "c"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, 1800
		un, ua, id := base, base, base
		un.Kind, ua.Kind = attribution.KindUnallocated, attribution.KindUnattributed
		id.Kind, id.UsedGPUSeconds = attribution.KindIdle, 1800
		rows = append(rows, c, un, ua, id)
	}
	return rows
}

// closeFixture is a ledger with 10 hours of October 2026 and 4 of
// November, and a price book at rate (per A100 hour).
func closeFixture(t *testing.T) (db string, prices func(rate string) string) {
	t.Helper()
	dir := t.TempDir()
	db = filepath.Join(dir, "ledger.db")
	appendRows(t, db, append(heldA100(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), 10), heldA100(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 4)...))
	p := filepath.Join(dir, "prices.yaml")
	return db, func(rate string) string {
		body := "currency: USD\ntimezone: UTC\npolicy: allocation\nidle: shared\nrates:\n  A100-SXM4-80GB: " + rate + "\ndefaultRate: 1\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func appendRows(t *testing.T, db string, rows []attribution.Row) {
	t.Helper()
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
}

func runOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, &out)
	return out.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runOut(t, args...)
	if err != nil {
		t.Fatalf("gpuledger %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func jsonTotal(t *testing.T, s string) (total, adjustments string) {
	t.Helper()
	var j struct {
		Total       json.Number `json:"total"`
		Adjustments json.Number `json:"adjustments_total"`
	}
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return string(j.Total), string(j.Adjustments)
}

// TestCloseCommands: October (10 h of an A100 at 2.40, 24.00) closed;
// the price book then says 3.00 and October's every format is still the
// bytes stored when it closed; --recompute says 30.00, +6.00 for ml; 5
// late hours bill 12.00 in November at October's 2.40; posting 3.00
// makes it 15 x 3.00 - 24.00 = 21.00; reopening recomputes October.
func TestCloseCommands(t *testing.T) {
	db, prices := closeFixture(t)
	now = func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }
	t.Cleanup(func() { now = time.Now })
	p := prices("2.40")

	if _, err := runOut(t, "close", "--ledger", db, "--prices", p, "--period", "2026-11"); err == nil || !strings.Contains(err.Error(), "has not ended") {
		t.Fatalf("closing the running month: %v", err)
	}
	if _, err := runOut(t, "close", "--ledger", db, "--prices", p, "--period", "2026-08"); err == nil || !strings.Contains(err.Error(), "no data") {
		t.Fatalf("closing a month without data: %v", err)
	}
	if _, err := runOut(t, "close", "--ledger", db, "--prices", p, "--period", "2026-13"); err == nil || !strings.Contains(err.Error(), "--period") {
		t.Fatalf("closing month 13: %v", err)
	}
	before := map[string]string{}
	for _, f := range []string{"csv", "json", "html", "focus", "focus-jsonl"} {
		before[f] = mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-10", "--format", f)
	}
	if out := mustRun(t, "close", "--ledger", db, "--prices", p, "--period", "2026-10"); !strings.HasPrefix(out, "closed 2026-10") {
		t.Fatalf("close said %q", out)
	}
	if out := mustRun(t, "close", "--ledger", db, "--prices", p, "--period", "2026-10"); !strings.Contains(out, "already closed") || !strings.Contains(out, "nothing changed") {
		t.Fatalf("closing twice said %q", out)
	}

	p = prices("3.00")
	for _, f := range []string{"csv", "json", "html", "focus", "focus-jsonl"} {
		got := mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-10", "--format", f)
		if f == "html" || f == "json" {
			// Written at another instant: generated_at differs, the rest must not.
			if tot, _ := jsonOrHTMLTotal(t, f, got); tot != "24.00" {
				t.Fatalf("closed October's %s says %s, want 24.00", f, tot)
			}
			continue
		}
		if got != before[f] {
			t.Fatalf("closed October's %s moved with the price book:\n%s\nwant\n%s", f, got, before[f])
		}
	}
	// The closed month is the stored bytes: the same on every read.
	a := mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-10", "--format", "html")
	now = func() time.Time { return time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) }
	if b := mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-10", "--format", "html"); a != b {
		t.Fatal("a closed month's HTML differs between two reads")
	}
	if out := mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-10", "--format", "json", "--recompute"); func() string { s, _ := jsonTotal(t, out); return s }() != "30.00" {
		t.Fatalf("--recompute wrote %s", out)
	}
	if out := mustRun(t, "adjust", "--ledger", db, "--prices", p, "--period", "2026-10"); !strings.Contains(out, "24.00") || !strings.Contains(out, "30.00") || !strings.Contains(out, "6.00") {
		t.Fatalf("adjust without --post printed %q", out)
	}
	if _, adj := jsonTotal(t, mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-11", "--format", "json")); adj != "" {
		t.Fatalf("November bills adjustments %s without late rows or a post", adj)
	}

	appendRows(t, db, heldA100(time.Date(2026, 10, 1, 10, 0, 0, 0, time.UTC), 5))
	nov := mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-11", "--format", "json")
	if tot, adj := jsonTotal(t, nov); tot != "12.00" || adj != "12.00" {
		t.Fatalf("November: total %s, adjustments %s; want 12.00 (4 h x 3.00) and 12.00 (5 late h x 2.40)", tot, adj)
	}
	csvOut := mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-11", "--format", "csv")
	if !strings.Contains(csvOut, ",adjustment,") || !strings.Contains(csvOut, ",adjusts_period,adjusts_line_type\n") || !strings.Contains(csvOut, ",2026-10,charge\n") {
		t.Fatalf("November's CSV:\n%s", csvOut)
	}
	if _, err := runOut(t, "adjust", "--ledger", db, "--prices", p, "--period", "2026-10", "--post"); err == nil || !strings.Contains(err.Error(), "--reason") {
		t.Fatalf("--post without --reason: %v", err)
	}
	mustRun(t, "adjust", "--ledger", db, "--prices", p, "--period", "2026-10", "--post", "--reason", "contract rate")
	if _, adj := jsonTotal(t, mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-11", "--format", "json")); adj != "21.00" {
		t.Fatalf("November's adjustments after the post: %s, want 21.00", adj)
	}

	if _, err := runOut(t, "reopen", "--ledger", db, "--period", "2026-10"); err == nil || !strings.Contains(err.Error(), "--reason") {
		t.Fatalf("reopen without a reason: %v", err)
	}
	mustRun(t, "reopen", "--ledger", db, "--period", "2026-10", "--reason", "wrong team label")
	if tot, _ := jsonTotal(t, mustRun(t, "report", "--ledger", db, "--prices", p, "--period", "2026-10", "--format", "json")); tot != "45.00" {
		t.Fatalf("reopened October: %s, want 45.00 (15 h x 3.00)", tot)
	}
	if _, err := runOut(t, "reopen", "--ledger", db, "--period", "2026-10", "--reason", "again"); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Fatalf("reopening an open month: %v", err)
	}
}

// jsonOrHTMLTotal reads the total of a JSON report, or finds it in an
// HTML one.
func jsonOrHTMLTotal(t *testing.T, format, s string) (string, error) {
	t.Helper()
	if format == "json" {
		tot, _ := jsonTotal(t, s)
		return tot, nil
	}
	if strings.Contains(s, ">24.00<") {
		return "24.00", nil
	}
	return "?", nil
}

// TestServeClosesMonthsAfterDays: with --close-after-days 3 and the book
// in UTC, October (it has data) closes from 4 November 00:00, not
// before; September (no data) is skipped; a second pass changes nothing;
// a reopened October is left open.
func TestServeClosesMonthsAfterDays(t *testing.T) {
	db, prices := closeFixture(t)
	p := prices("2.40")
	ctx := context.Background()
	if got, err := autoCloseOnce(ctx, db, p, 3, time.Date(2026, 11, 3, 23, 59, 0, 0, time.UTC)); err != nil || len(got) != 0 {
		t.Fatalf("3 November 23:59: closed %v, %v; want nothing (October closes 3 days after its end)", got, err)
	}
	got, err := autoCloseOnce(ctx, db, p, 3, time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC))
	if err != nil || strings.Join(got, ",") != "2026-10" {
		t.Fatalf("4 November: closed %v, %v; want 2026-10", got, err)
	}
	if got, err := autoCloseOnce(ctx, db, p, 3, time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)); err != nil || len(got) != 0 {
		t.Fatalf("second pass closed %v, %v", got, err)
	}
	now = func() time.Time { return time.Date(2026, 11, 6, 0, 0, 0, 0, time.UTC) }
	t.Cleanup(func() { now = time.Now })
	mustRun(t, "reopen", "--ledger", db, "--period", "2026-10", "--reason", "late node")
	if got, err := autoCloseOnce(ctx, db, p, 3, time.Date(2026, 11, 7, 0, 0, 0, 0, time.UTC)); err != nil || len(got) != 0 {
		t.Fatalf("a reopened month was closed again: %v, %v", got, err)
	}
	if _, err := parseServeFlags([]string{"--ledger", db, "--prices", p, "--close-after-days", "61"}); err == nil || !strings.Contains(err.Error(), "--close-after-days") {
		t.Fatalf("--close-after-days 61: %v", err)
	}
}
