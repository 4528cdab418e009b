package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
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
func waitForGet(t *testing.T, url string, done chan error) (code int, body string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if code, body = get(t, http.DefaultClient, url, "", ""); code != 0 {
			return nil
		}
		select {
		case err := <-done:
			done <- err // for the caller's deferred wait
			t.Fatalf("demo ended before serving: %v", err)
		default:
		}
		return fmt.Errorf("nothing served %s: %s", url, body)
	})
	return code, body
}
