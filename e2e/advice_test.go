package e2e

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// serveAdvice feeds the advice dashboard: it simulates a node into a
// ledger, runs `gpuledger advise --format prom` over it (what a CronJob
// writes for a textfile collector or a Pushgateway), and serves that file
// on loopback for Prometheus to scrape, as the textfile collector would.
func serveAdvice(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	sim := exec.Command(bin, "simulate",
		"--scenario", filepath.Join(repoRoot, "testdata", "scenarios", "exclusive-basic", "scenario.yaml"),
		"--out", dir)
	if out, err := sim.CombinedOutput(); err != nil {
		t.Fatalf("simulate for the advice: %v\n%s", err, out)
	}
	prom := filepath.Join(dir, "advice.prom")
	adv := exec.Command(bin, "advise", "--ledger", filepath.Join(dir, "ledger.db"),
		"--prices", filepath.Join(repoRoot, "deploy", "prices.yaml"),
		"--period", "2026-11", "--format", "prom", "--out", prom)
	if out, err := adv.CombinedOutput(); err != nil {
		t.Fatalf("advise --format prom: %v\n%s", err, out)
	}
	body, err := os.ReadFile(prom)
	if err != nil || len(body) == 0 {
		t.Fatalf("advice file: %v (%d bytes)", err, len(body))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}
