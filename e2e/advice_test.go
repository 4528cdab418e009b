package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serveAdvice feeds the advice dashboard as the chart's advisor does: it
// simulates a node into a ledger, its scenario moved to two hours before
// the current hour (the exporter advises on a trailing window of the real
// clock), and runs `gpuledger advise --listen` over it. It returns the
// exporter's address once the first advice is served, so Prometheus never
// scrapes an advisor that has not advised.
func serveAdvice(ctx context.Context, t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "scenarios", "exclusive-basic", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	moved := regexp.MustCompile(`(?m)^start: .*$`).ReplaceAll(src, []byte(`start: "`+at.Format(time.RFC3339)+`"`))
	scenario := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scenario, moved, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "simulate", "--scenario", scenario, "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("simulate for the advice: %v\n%s", err, out)
	}
	addr := freePort(t)
	p := start(t, "advise", bin, "advise", "--listen", addr, "--window", "24h", "--refresh", "1m",
		"--ledger", filepath.Join(dir, "ledger.db"), "--prices", filepath.Join(repoRoot, "deploy", "prices.yaml"))
	err = poll(ctx, 100*time.Millisecond, func() error {
		if done, err := p.exited(); done {
			t.Fatalf("advise --listen exited: %v", err)
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), "gpuledger_advice_recommendations") {
			return errors.New("no advice served yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("advise --listen on %s: %v", addr, err)
	}
	return addr
}
