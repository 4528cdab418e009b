package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// While the collector starts (the node's ledger migrating: 36 s measured on
// a 100-GPU month) its listener is already bound: /healthz answers alive
// and says "migrating", so the liveness probe does not kill it; /readyz and
// /metrics answer 503 until the collector is ready, then "ok" and the
// metrics.
func TestHealthzSaysMigratingWhileTheLedgerMigrates(t *testing.T) {
	ln, err := listenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	boot := newStartup("starting")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serveListener(ctx, &http.Server{Handler: boot.mux(), ReadHeaderTimeout: 5 * time.Second}, ln, "")
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	check := func(path string, wantCode int, wantBody string) {
		t.Helper()
		code, body := get(t, http.DefaultClient, base+path, "", "")
		if code != wantCode || body != wantBody {
			t.Errorf("%s: %d %q, want %d %q", path, code, body, wantCode, wantBody)
		}
	}
	boot.setPhase("migrating")
	check("/healthz", http.StatusOK, "migrating\n")
	check("/readyz", http.StatusServiceUnavailable, "not ready: migrating\n")
	check("/metrics", http.StatusServiceUnavailable, "not ready: migrating\n")

	boot.ready(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "gpuledger_up 1\n") }))
	check("/healthz", http.StatusOK, "ok\n")
	check("/readyz", http.StatusOK, "ok\n")
	check("/metrics", http.StatusOK, "gpuledger_up 1\n")
}
