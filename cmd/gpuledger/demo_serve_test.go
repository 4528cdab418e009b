package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The demo serves the web app of gpuledger serve over its own ledger
// beside the live /metrics: the months page and the backfilled month's
// report, whose total is the demo's chargeback's.
func TestDemoServesTheWebApp(t *testing.T) {
	addr := loopbackAddr(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--days", "1", "--out", out, "--listen", addr}, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	}()
	code, body := waitForGet(t, "http://"+addr+"/", done)
	if code != http.StatusOK || !strings.Contains(body, "Bills by month") {
		t.Fatalf("/: %d %.300q", code, body)
	}
	// The backfilled day is yesterday (UTC, the shipped book's zone).
	month := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Format("2006-01")
	code, body = waitForGet(t, "http://"+addr+"/reports/"+month, done)
	if code != http.StatusOK || !strings.Contains(body, "GPU chargeback") {
		t.Errorf("/reports/%s: %d %.300q", month, code, body)
	}
	code, body = waitForGet(t, "http://"+addr+"/metrics", done)
	if code != http.StatusOK || !strings.Contains(body, "gpuledger_") {
		t.Errorf("/metrics: %d, %d bytes", code, len(body))
	}
}
