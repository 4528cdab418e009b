//go:build unix

package scenario

import (
	"path/filepath"
	"syscall"
	"testing"
)

func TestTraceFIFODoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.csv"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	y := edit(t, "busy: [{from: 30s, to: 5m, fraction: 1}]", "busyTrace: pipe.csv")
	_, err := Parse([]byte(y), dir)
	wantErr(t, err, "pods[1].containers[1].processes[0].busyTrace", "pipe.csv", "not a regular file")
}
