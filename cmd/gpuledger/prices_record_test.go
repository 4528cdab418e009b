package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/web"
)

// pricesNow is the clock of the price book tests: 2 November 2026, 12:00
// UTC, after the ledger's last hour.
var pricesNow = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// heldA100 is one A100 held whole by team search for every hour of
// 30 October to 1 November (72 hours), written to a new file ledger.
func heldA100Ledger(t *testing.T) (rows []attribution.Row, db string) {
	t.Helper()
	from := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	for s := from; s.Before(from.Add(72 * time.Hour)); s = s.Add(time.Hour) {
		rows = append(rows, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "GPU-0", SliceID: "GPU-0",
			GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindContainer, Team: "search", Namespace: "ns",
			Pod: "p", Container: "c", PodUID: "u", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600, Method: attribution.MethodMeasured})
	}
	db = filepath.Join(t.TempDir(), "ledger.db")
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	return rows, db
}

// priceBookFile writes a book rating an A100 hour at rate, with extra
// fields, and returns its path.
func priceBookFile(t *testing.T, dir, name, rate, extra string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	y := fmt.Sprintf("currency: USD\npolicy: allocation\ndefaultRate: 1.00\nrates:\n  A100-SXM4-80GB: %s\n%s", rate, extra)
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// csvTotal is the finance CSV's amounts summed, in cents, and its price
// book cells.
func csvTotal(t *testing.T, data []byte) (cents int64, books map[string]bool) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	books = map[string]bool{}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	for _, r := range recs[1:] {
		var whole, frac int64
		if _, err := fmt.Sscanf(r[col["amount"]], "%d.%d", &whole, &frac); err != nil {
			t.Fatalf("amount %q: %v", r[col["amount"]], err)
		}
		cents += whole*100 + frac
		if i, ok := col["price_book"]; ok && r[i] != "" {
			books[r[i]] = true
		}
	}
	return cents, books
}

// pricesFlow records books in the ledger at dsn with gpuledger prices
// record, and reports: an edit not recorded reprices nothing, a recorded
// change prices the hours from its instant only, never the month before,
// and bad instants are refused naming the field.
func pricesFlow(t *testing.T, dsn string) {
	dir := t.TempDir()
	v1 := priceBookFile(t, dir, "v1.yaml", "2.40", "")
	v2 := priceBookFile(t, dir, "v2.yaml", "3.00", "")
	report := func(month string) (int64, map[string]bool) {
		return csvTotal(t, cliReport(t, dsn, v2, month, "csv"))
	}
	// No book recorded: the command line's book prices every hour, as
	// before (48 h of October and 24 h of November at 3.00).
	if oct, books := report("2026-10"); oct != 14400 || len(books) != 0 {
		t.Fatalf("October without recorded books: %d cents, books %v; want 14400 (48 h x 3.00), none", oct, books)
	}
	// A change dated after rows the ledger holds cannot be its first
	// book: it would price those rows too.
	if _, err := runOut(t, "prices", "record", "--ledger", dsn, "--prices", v2, "--effective", "2026-11-01T12:00:00Z"); err == nil ||
		!strings.Contains(err.Error(), "records no price book yet and holds rows before that instant") {
		t.Fatalf("a first book dated after the ledger's rows: %v, want a refusal", err)
	}
	out, err := runOut(t, "prices", "record", "--ledger", dsn, "--prices", v1, "--effective", "2026-10-01")
	if err != nil || !strings.Contains(out, "recorded price book") || !strings.Contains(out, "effective 2026-10-01T00:00:00Z") {
		t.Fatalf("prices record v1: %q %v", out, err)
	}
	if out, err := runOut(t, "prices", "record", "--ledger", dsn, "--prices", v1); err != nil || !strings.Contains(out, "already the last recorded") {
		t.Fatalf("prices record v1 again: %q %v", out, err)
	}
	// v2 is only on the command line: the recorded v1 prices the period.
	if oct, books := report("2026-10"); oct != 11520 || len(books) != 1 {
		t.Errorf("October, v2 not recorded: %d cents, books %v; want 11520 (48 h x 2.40) by v1", oct, books)
	}
	if _, err := runOut(t, "prices", "record", "--ledger", dsn, "--prices", v2, "--effective", "2026-11-01T12:00:00Z"); err != nil {
		t.Fatal(err)
	}
	if oct, _ := report("2026-10"); oct != 11520 {
		t.Errorf("October after a change from 1 November: %d cents, want 11520 still", oct)
	}
	if nov, books := report("2026-11"); nov != 6480 || len(books) != 2 {
		t.Errorf("November: %d cents, books %v; want 6480 (12 h x 2.40 + 12 h x 3.00) by two books", nov, books)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prices", v1, "--effective", "2026-11-01T06:00:00Z"}, "effective_from 2026-11-01T06:00:00Z is before the last recorded price book's"},
		{[]string{"--prices", v1, "--effective", "2026-11-01T12:30:00Z"}, "--effective: \"2026-11-01T12:30:00Z\" is not on a whole hour"},
		{[]string{"--prices", v1, "--effective", "2029-01-01"}, "effective_from 2029-01-01T00:00:00Z is more than 400 days after now"},
		{[]string{"--prices", v1, "--effective", "soon"}, "--effective: \"soon\" is not an instant"},
		{[]string{"--prices", priceBookFile(t, dir, "bad.yaml", "2.50", "effectiveFrom: next week\n")}, "effectiveFrom: \"next week\" is not an instant"},
	} {
		_, err := runOut(t, append([]string{"prices", "record", "--ledger", dsn}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("prices record %v: %v, want %q", c.args, err, c.want)
		}
	}
	out, err = runOut(t, "prices", "list", "--ledger", dsn)
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(out, "2026-11-01T12:00:00Z") {
		t.Errorf("prices list: %q %v", out, err)
	}
}

func TestPricesRecordFileLedger(t *testing.T) {
	fixNow(t, pricesNow)
	_, db := heldA100Ledger(t)
	pricesFlow(t, db)
}

func TestPricesRecordClickHouse(t *testing.T) {
	fixNow(t, pricesNow)
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	_, db := heldA100Ledger(t)
	dsn := h.DSN(t)
	if err := runLedger(context.Background(), []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	copyLedger(t, db, dsn)
	pricesFlow(t, dsn)
}

// servePricesFlow: serve records the book it loads from the next whole
// hour, so an edit reprices no hour already billed; an edit that would
// take effect before the last recorded book is refused with 409.
func servePricesFlow(t *testing.T, dsn string) {
	dir := t.TempDir()
	v1 := priceBookFile(t, dir, "v1.yaml", "2.40", "")
	if _, err := runOut(t, "prices", "record", "--ledger", dsn, "--prices", v1, "--effective", "2026-10-01"); err != nil {
		t.Fatal(err)
	}
	served := priceBookFile(t, dir, "prices.yaml", "3.00", "")
	hs := startServe(t, dsn, served, rebuildRunningMonth, func(c *web.Config) { c.RecordPrices = bookRecorder(dsn) })
	resp, body := getBody(t, hs.URL+"/reports/2026-11.csv")
	if resp.StatusCode != 200 {
		t.Fatalf("/reports/2026-11.csv: %d %s", resp.StatusCode, body)
	}
	if cents, books := csvTotal(t, body); cents != 5760 || len(books) != 1 {
		t.Errorf("November once serve loaded 3.00: %d cents, books %v; want 5760 (24 h x 2.40): a load reprices no past hour", cents, books)
	}
	out, err := runOut(t, "prices", "list", "--ledger", dsn)
	if err != nil || !strings.Contains(out, "2026-11-02T13:00:00Z") || !strings.Contains(out, "prices.yaml") {
		t.Errorf("serve did not record its book from the next hour: %q %v", out, err)
	}
	// An edit dated back before the book serve recorded.
	priceBookFile(t, dir, "prices.yaml", "9.00", "effectiveFrom: 2026-11-01T00:00:00Z\n")
	for _, p := range []string{"/reports/2026-11", "/reports/2026-11.csv"} {
		resp, body := getBody(t, hs.URL+p)
		if resp.StatusCode != 409 || !strings.Contains(string(body), "effective_from 2026-11-01T00:00:00Z is before the last recorded price book") {
			t.Errorf("%s after a backdated edit: %d %.300s", p, resp.StatusCode, body)
		}
	}
}

func TestServeRecordsPricesFileLedger(t *testing.T) {
	fixNow(t, pricesNow)
	_, db := heldA100Ledger(t)
	servePricesFlow(t, db)
}

func TestServeRecordsPricesClickHouse(t *testing.T) {
	fixNow(t, pricesNow)
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	_, db := heldA100Ledger(t)
	dsn := h.DSN(t)
	if err := runLedger(context.Background(), []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	copyLedger(t, db, dsn)
	servePricesFlow(t, dsn)
}
