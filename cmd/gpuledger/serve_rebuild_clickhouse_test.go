package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/web"
)

// A month whose rollups are all stale (written, never rebuilt: a backfill
// or a restore) answers at once that it is being rebuilt, on the page, in
// the JSON and as a 503 with Retry-After for the CSV, while one background
// computation rebuilds its rollups; then the page is the bill, with no
// note, to the cent the one `gpuledger report` sums from the raw rows
// before the rebuild, and the rollups are current.
func TestServeStaleMonthAnswersBeingRebuilt(t *testing.T) {
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	ctx := context.Background()
	dsn := h.DSN(t)
	if err := runLedger(ctx, []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	now = func() time.Time { return serveNow }
	t.Cleanup(func() { now = time.Now })
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prices, data, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	st, err := clickhouse.Open(ctx, d, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Ten days of October, four GPUs at one-minute rows: 240 stale hours.
	start := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	const days = 10
	var rows []attribution.Row
	for m := 0; m < days*24*60; m++ {
		is := start.Add(time.Duration(m) * time.Minute)
		for g := 0; g < 4; g++ {
			gpu := fmt.Sprintf("GPU-%d", g)
			r := attribution.Row{IntervalStart: is, IntervalEnd: is.Add(time.Minute), Node: "node-0", GPUUUID: gpu, SliceID: gpu,
				GPUModel: []string{"A100-SXM4-80GB", "H100-SXM5-80GB"}[g%2], SharingMode: "exclusive", Method: attribution.MethodMeasured,
				Kind: attribution.KindContainer, Namespace: fmt.Sprintf("ns-%d", g), Pod: "p", PodUID: fmt.Sprintf("uid-%d", g), Container: "c",
				Team: fmt.Sprintf("team-%d", g%3), AllocatedGPUSeconds: 60, UsedGPUSeconds: float64(m%61) / 2}
			rows = append(rows, r)
		}
	}
	for i := 0; i < len(rows); i += 50000 {
		if err := st.Append(ctx, rows[i:min(i+50000, len(rows))], nil); err != nil {
			t.Fatal(err)
		}
	}
	monthFrom, monthTo := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if n, err := st.StaleHours(ctx, monthFrom, monthTo); err != nil || n != days*24 {
		t.Fatalf("stale hours before: %d %v, want %d", n, err, days*24)
	}
	// The bill from the raw rows (every hour stale): 4 GPUs x 240 h, two
	// at 2.40 and two at 4.10 = 3,120.00.
	rawCSV := cliReport(t, dsn, prices, "2026-10", "csv")
	if cents := amountCents(t, rawCSV); cents != 312000 {
		t.Fatalf("the raw rows' bill: %d cents, want 312000:\n%s", cents, rawCSV)
	}

	// A wait of a nanosecond: the first answers cannot be the bill.
	hs := startServe(t, dsn, prices, func(c *web.Config) { c.BuildWait = time.Nanosecond })
	began := time.Now()
	resp, page := getBody(t, hs.URL+"/reports/2026-10")
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the stale month's page took %s", took)
	}
	if resp.StatusCode != 202 || !strings.Contains(string(page), "2026-10 is being rebuilt") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the stale month's page: %d %q %.400s", resp.StatusCode, resp.Header.Get("Retry-After"), page)
	}
	resp, body := getBody(t, hs.URL+"/reports/2026-10.json")
	var doc struct {
		Month      string `json:"month"`
		Rebuilding bool   `json:"rebuilding"`
	}
	if err := json.Unmarshal(body, &doc); resp.StatusCode != 202 || err != nil || !doc.Rebuilding || doc.Month != "2026-10" {
		t.Errorf("the stale month's JSON: %d %v %.400s", resp.StatusCode, err, body)
	}
	if resp, body := getBody(t, hs.URL+"/reports/2026-10.csv"); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "being rebuilt") {
		t.Errorf("the stale month's CSV: %d %.400s", resp.StatusCode, body)
	}

	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, page = getBody(t, hs.URL+"/reports/2026-10")
		if resp.StatusCode != 202 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp.StatusCode != 200 || bytes.Contains(page, []byte("being rebuilt")) {
		t.Fatalf("the month once rebuilt: %d %.400s", resp.StatusCode, page)
	}
	if n, err := st.StaleHours(ctx, monthFrom, monthTo); err != nil || n != 0 {
		t.Errorf("stale hours after serve's rebuild: %d %v, want 0", n, err)
	}
	if resp, csv := getBody(t, hs.URL+"/reports/2026-10.csv"); resp.StatusCode != 200 || !bytes.Equal(csv, rawCSV) {
		t.Errorf("the rebuilt month's CSV (%d) differs from the raw rows' bill:\n%s\nwant\n%s", resp.StatusCode, csv, rawCSV)
	}
}

// amountCents adds up a finance CSV's amounts (rows without one, the
// notes, count nothing).
func amountCents(t *testing.T, data []byte) int64 {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, c := range recs[0] {
		if c == "amount" {
			col = i
		}
	}
	var cents int64
	for _, r := range recs[1:] {
		if col >= len(r) || r[col] == "" {
			continue
		}
		var whole, frac int64
		if _, err := fmt.Sscanf(r[col], "%d.%d", &whole, &frac); err != nil {
			t.Fatalf("amount %q: %v", r[col], err)
		}
		cents += whole*100 + frac
	}
	return cents
}
