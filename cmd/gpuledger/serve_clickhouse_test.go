package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

// The same pages from a real ClickHouse ledger: the demo fleet's rows
// copied into it, every /reports file byte for byte what gpuledger report
// writes from that ledger, every link answering; then ClickHouse is killed
// (pages that read it answer 503, /readyz fails) and restarted (the next
// requests answer 200 again: no broken connection is kept).
func TestServeClickHouse(t *testing.T) {
	db, prices := serveFixture(t)
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	ctx := context.Background()
	dsn := h.DSN(t)
	if err := runLedger(ctx, []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	copyLedger(t, db, dsn)
	hs := startServe(t, dsn, prices, rebuildRunningMonth)
	checkReportsMatchCLI(t, hs.URL, dsn, prices)
	crawl(t, hs.URL)

	srv := h.Server(t)
	srv.Kill()
	// The current month is rebuilt on every request here, its FOCUS file's
	// per-device aggregates with it; an ended month's report built in the
	// last two minutes is served from memory, and its FOCUS file from the
	// aggregates read with that build.
	for _, p := range []string{"/", "/reports/2026-11", "/reports/2026-11.csv", "/reports/2026-11.focus.csv", "/advice/2026-11", "/readyz"} {
		resp, body := getBody(t, hs.URL+p)
		if resp.StatusCode != 503 || !strings.Contains(string(body), "cannot") {
			t.Errorf("%s with ClickHouse down: %d %.300q", p, resp.StatusCode, body)
		}
	}
	if resp, body := getBody(t, hs.URL+"/reports/2026-10.focus.csv"); resp.StatusCode != 200 || !strings.Contains(string(body), "BilledCost") {
		t.Errorf("October's FOCUS file, read before, with ClickHouse down: %d %.300q, want it from memory", resp.StatusCode, body)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("restart ClickHouse: %v", err)
	}
	for _, p := range []string{"/readyz", "/", "/reports/2026-11", "/reports/2026-11.csv", "/reports/2026-10.focus.csv"} {
		if resp, body := getBody(t, hs.URL+p); resp.StatusCode != 200 {
			t.Errorf("%s once ClickHouse is back: %d %.300q", p, resp.StatusCode, body)
		}
	}
}

// copyLedger appends every row and finding of the embedded ledger at db
// to the ClickHouse ledger at dsn and builds its rollups.
func copyLedger(t *testing.T, db, dsn string) {
	t.Helper()
	ctx := context.Background()
	src, err := ledger.Open(ctx, db, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := ledger.Open(ctx, dsn, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	from, to := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	var findings []attribution.Finding
	if err := src.Rows(ctx, from, to, func(r attribution.Row) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := src.Findings(ctx, from, to, func(f attribution.Finding) error { findings = append(findings, f); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 50000 {
		batch := rows[i:min(i+50000, len(rows))]
		var fs []attribution.Finding
		if i == 0 {
			fs = findings
		}
		if err := dst.Append(ctx, batch, fs); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.(*clickhouse.Store).RebuildRollups(ctx, from, to); err != nil {
		t.Fatal(err)
	}
}
