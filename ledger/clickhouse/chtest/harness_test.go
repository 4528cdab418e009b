package chtest

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequire runs a test without a server in a child process: skipped
// normally, failed when GPULEDGER_REQUIRE_INTEGRATION=1.
func TestRequire(t *testing.T) {
	if os.Getenv("CHTEST_CHILD") == "1" {
		h := &Harness{err: ErrNoServer}
		h.Require(t)
		t.Log("Require returned")
		return
	}
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequire$", "-test.v")
		cmd.Env = append(os.Environ(), "CHTEST_CHILD=1", EnvRequire+"="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "SKIP") || strings.Contains(out, "Require returned") {
		t.Errorf("without %s: want a skip, got err %v:\n%s", EnvRequire, err, out)
	}
	out, err = run("1")
	if err == nil || !strings.Contains(out, EnvRequire+"=1 requires it") {
		t.Errorf("with %s=1: want a failure naming the requirement, got err %v:\n%s", EnvRequire, err, out)
	}
}

// TestStartKillRestart starts a real server, kills it and starts it again
// on the same data dir.
func TestStartKillRestart(t *testing.T) {
	if _, err := findBinary(); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx := context.Background()
	s, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	ping := func() bool {
		resp, err := http.Get("http://" + s.HTTPAddr() + "/ping")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !ping() {
		t.Fatal("server not answering after Start")
	}
	s.Kill()
	if ping() {
		t.Fatal("server still answering after Kill")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !ping() {
		t.Fatal("server not answering after Restart")
	}
}
