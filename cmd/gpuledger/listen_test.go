package main

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// Every command that listens fails at once, naming the address, when
// another process holds it: before the demo's backfill, before the
// collector touches NVML or the node's ledger, before a simulation runs.
func TestCommandsFailAtOnceWhenTheirAddressIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	st, err := filestore.OpenFile(context.Background(), empty, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	for name, args := range map[string][]string{
		"collect":  {"collect", "--node", "n1", "--listen", addr, "--data-dir", filepath.Join(dir, "collect")},
		"demo":     {"demo", "--out", filepath.Join(dir, "demo"), "--listen", addr},
		"simulate": {"simulate", "--scenario", filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml"), "--out", filepath.Join(dir, "sim"), "--listen", addr, "--speed", "1"},
		"advise":   {"advise", "--listen", addr, "--ledger", empty, "--prices", filepath.Join("..", "..", "deploy", "prices.yaml")},
	} {
		t.Run(name, func(t *testing.T) {
			cmd, out := gpuledgerProcess(t, args...)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second): // a bound, not a speed test: the old demo backfilled a month first
				t.Fatalf("%s still running 30 s after start with %s taken:\n%s", name, addr, out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("%s: %v, want exit status 1\n%s", name, err, out)
			}
			if want := "cannot listen on " + addr; !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		})
	}
}
