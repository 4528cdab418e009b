package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/advisor/adviceprom"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// TestAdviseExporterServesWindow: advise --listen's exporter serves, for
// the trailing window ending at the last whole hour, exactly what
// `advise --from --to --format prom` writes for that window, plus its
// freshness series; a window without data keeps the previous advice and
// counts the failure.
func TestAdviseExporterServesWindow(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	if err := run(ctx, []string{"simulate", "--scenario", filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml"),
		"--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	db, prices := filepath.Join(out, "ledger.db"), filepath.Join("..", "..", "deploy", "prices.yaml")
	var want bytes.Buffer
	if err := runAdvise(ctx, []string{"--ledger", db, "--prices", prices, "--from", "2026-11-02T01:00:00Z", "--to", "2026-11-03T01:00:00Z",
		"--format", "prom"}, &want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.String(), "gpuledger_advice_") {
		t.Fatalf("advise wrote no advice series:\n%s", want.String())
	}

	f, err := parseAdviseFlags([]string{"--listen", "127.0.0.1:0", "--window", "24h", "--ledger", db, "--prices", prices})
	if err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Load(prices)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Open(ctx, db, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x := &adviceprom.Refresher{}
	scrape := func() string {
		rec := httptest.NewRecorder()
		x.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return string(body)
	}
	if got := scrape(); sample(t, got, "gpuledger_advice_refresh_timestamp_seconds") != 0 || strings.Contains(got, "gpuledger_advice_saving") {
		t.Fatalf("before the first refresh:\n%s", got)
	}
	now := time.Date(2026, 11, 3, 1, 42, 0, 0, time.UTC) // 1793670120 (date -u +%s); the window is [11-02 01:00, 11-03 01:00)
	if err := refreshAdvice(ctx, x, st, book, f, nil, now); err != nil {
		t.Fatal(err)
	}
	got := scrape()
	if !strings.HasPrefix(got, want.String()) {
		t.Fatalf("served advice differs from advise --format prom on the window:\n got %s\nwant %s", got, want.String())
	}
	if sample(t, got, "gpuledger_advice_refresh_timestamp_seconds") != 1793670120 ||
		sample(t, got, "gpuledger_advice_refresh_failures_total") != 0 {
		t.Fatalf("freshness series:\n%s", got[len(want.String()):])
	}
	// A month later the window holds nothing: the advice stays, the
	// failure is counted.
	if err := refreshAdvice(ctx, x, st, book, f, nil, now.AddDate(0, 1, 0)); err == nil {
		t.Fatal("advising on an empty window succeeded")
	}
	if again := scrape(); !strings.HasPrefix(again, want.String()) || sample(t, again, "gpuledger_advice_refresh_failures_total") != 1 {
		t.Fatalf("after a failed refresh:\n%s", again)
	}
}

// TestAdviseListenFlags: --listen takes a trailing window, not a period,
// and serves only the prom format.
func TestAdviseListenFlags(t *testing.T) {
	base := []string{"--listen", ":0", "--ledger", "x.db", "--prices", "p.yaml"}
	if f, err := parseAdviseFlags(base); err != nil || f.window != 30*24*time.Hour || f.refresh != time.Hour {
		t.Fatalf("defaults: window %v, refresh %v, %v", f.window, f.refresh, err)
	}
	// What the chart's advisor Deployment runs (deploy/helm_test.go
	// checkAdvisor), the ledger and prices from its environment.
	t.Setenv("GPULEDGER_LEDGER", "clickhouse://gpuledger@clickhouse:9000/gpuledger")
	t.Setenv("GPULEDGER_PRICES", "/etc/gpuledger/prices/prices.yaml")
	if f, err := parseAdviseFlags([]string{"--listen=:9401", "--window=14d", "--refresh=1h"}); err != nil || f.window != 14*24*time.Hour {
		t.Fatalf("the chart's advisor args: window %v, %v", f.window, err)
	}
	for _, extra := range [][]string{{"--period", "2026-11"}, {"--out", "a.prom"}, {"--format", "json"}, {"--window", "10m"},
		{"--refresh", "1s"}, {"--window", "forever"}, {"--window", "367d"}} {
		if _, err := parseAdviseFlags(append(append([]string(nil), base...), extra...)); err == nil {
			t.Errorf("%v accepted", extra)
		}
	}
}

// TestAdviseListenServes: advise --listen as a process would run it
// advises at once, serves the advice and /healthz on its address, and
// stops cleanly when its context ends.
func TestAdviseListenServes(t *testing.T) {
	out := t.TempDir()
	if err := run(context.Background(), []string{"simulate", "--scenario", filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml"),
		"--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	addr := loopbackAddr(t)
	f, err := parseAdviseFlags([]string{"--listen", addr, "--window", "24h", "--refresh", "1m",
		"--ledger", filepath.Join(out, "ledger.db"), "--prices", filepath.Join("..", "..", "deploy", "prices.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	f.now = func() time.Time { return time.Date(2026, 11, 3, 1, 42, 0, 0, time.UTC) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveAdvice(ctx, f) }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, b := get("/metrics"); code == 200 && strings.Contains(b, "gpuledger_advice_recommendations") {
			body = b
			break
		}
	}
	if body == "" || sample(t, body, "gpuledger_advice_refresh_timestamp_seconds") != 1793670120 {
		t.Fatalf("no advice served within 20 s; last body:\n%s", body)
	}
	if code, b := get("/healthz"); code != 200 || b != "ok\n" {
		t.Errorf("/healthz: %d %q", code, b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveAdvice after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveAdvice did not stop")
	}
}

// sample is the value of the one unlabelled sample name in a text
// exposition; a missing or unparsable sample fails the test.
func sample(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return x
		}
	}
	t.Fatalf("no sample %s in:\n%s", name, body)
	return 0
}

// TestAdviseListenFailsToServe: when serving cannot start (a web config
// file that does not exist), advise --listen returns the error after its
// refresher has stopped, so nothing reads the closed ledger afterwards.
func TestAdviseListenFailsToServe(t *testing.T) {
	out := t.TempDir()
	if err := run(context.Background(), []string{"simulate", "--scenario", filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml"),
		"--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	f, err := parseAdviseFlags([]string{"--listen", loopbackAddr(t), "--web.config.file", filepath.Join(out, "missing.yaml"),
		"--ledger", filepath.Join(out, "ledger.db"), "--prices", filepath.Join("..", "..", "deploy", "prices.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	f.now = func() time.Time { return time.Date(2026, 11, 3, 1, 42, 0, 0, time.UTC) }
	if err := serveAdvice(context.Background(), f); err == nil || !strings.Contains(err.Error(), "web config") {
		t.Fatalf("serveAdvice with a missing web config: %v", err)
	}
}
