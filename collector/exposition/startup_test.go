package exposition

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// get is a GET's status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// While the collector starts (the node's ledger migrating: 36 s measured on
// a 100-GPU month) its listener is already bound: /healthz answers alive
// and says "migrating", so the liveness probe does not kill it; /readyz and
// /metrics answer 503 until the collector is ready, then "ok" and the
// metrics.
func TestHealthzSaysMigratingWhileTheLedgerMigrates(t *testing.T) {
	boot := NewStartup("starting")
	srv := httptest.NewServer(boot.Mux())
	defer srv.Close()
	check := func(path string, wantCode int, wantBody string) {
		t.Helper()
		code, body := get(t, srv.URL+path)
		if code != wantCode || body != wantBody {
			t.Errorf("%s: %d %q, want %d %q", path, code, body, wantCode, wantBody)
		}
	}
	check("/healthz", http.StatusOK, "starting\n")
	boot.SetPhase("migrating")
	check("/healthz", http.StatusOK, "migrating\n")
	check("/readyz", http.StatusServiceUnavailable, "not ready: migrating\n")
	check("/metrics", http.StatusServiceUnavailable, "not ready: migrating\n")

	boot.Ready(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "gpuledger_up 1\n") }))
	check("/healthz", http.StatusOK, "ok\n")
	check("/readyz", http.StatusOK, "ok\n")
	check("/metrics", http.StatusOK, "gpuledger_up 1\n")
}

// Mux serves the metrics and a liveness answer, nothing else.
func TestMux(t *testing.T) {
	srv := httptest.NewServer(Mux(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up 1\n") })))
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
		body string
	}{{"/metrics", 200, "up 1\n"}, {"/healthz", 200, "ok\n"}, {"/other", 404, "404 page not found\n"}} {
		if code, body := get(t, srv.URL+c.path); code != c.code || body != c.body {
			t.Errorf("%s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
}
