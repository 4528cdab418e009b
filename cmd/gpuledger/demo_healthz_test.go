package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The demo's live server answers /healthz as the collector's does, beside
// /metrics.
func TestDemoServesHealthzAndMetrics(t *testing.T) {
	addr := loopbackAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--days", "1", "--out", t.TempDir(), "--listen", addr}, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	}()
	code, body := waitForGet(t, "http://"+addr+"/healthz", done)
	if code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, body = waitForGet(t, "http://"+addr+"/metrics", done)
	if code != http.StatusOK || !strings.Contains(body, "gpuledger_") {
		t.Errorf("/metrics: %d, %d bytes", code, len(body))
	}
}

// waitForGet gets url once the demo listens (after its backfill), failing
// if the demo ends first.
func waitForGet(t *testing.T, url string, done chan error) (int, string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, body := get(t, http.DefaultClient, url, "", "")
		if code != 0 {
			return code, body
		}
		select {
		case err := <-done:
			done <- err // for the caller's deferred wait
			t.Fatalf("demo ended before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing served %s: %s", url, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
