package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mountForTest runs mount(8), skipping where mounts are not allowed unless
// GPULEDGER_REQUIRE_INTEGRATION=1; as root, permission bits do not make a
// file read-only, so the test uses a real read-only mount.
func mountForTest(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		if os.Getenv("GPULEDGER_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("mount %s: %v: %s", strings.Join(args, " "), err, out)
		}
		t.Skipf("cannot mount here: %v: %s", err, out)
	}
}

// report and ledger export read a ledger on a read-only volume, where
// SQLite can create neither -wal nor -shm, and give what a writable copy
// gives.
func TestReportAndExportOfALedgerOnAReadOnlyVolume(t *testing.T) {
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	mountForTest(t, "-t", "tmpfs", "-o", "size=16m", "tmpfs", vol)
	t.Cleanup(func() { exec.Command("umount", vol).Run() })
	sc := filepath.Join("..", "..", "testdata", "scenarios", "exclusive-basic", "scenario.yaml")
	if err := run(context.Background(), []string{"simulate", "--scenario", sc, "--out", vol}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	csvFile, err := os.ReadFile(filepath.Join(vol, "ledger.csv"))
	if err != nil {
		t.Fatal(err)
	}
	mountForTest(t, "-o", "remount,ro", vol)
	db := filepath.Join(vol, "ledger.db")

	code, exported, stderr := runCLI("ledger", "export", "--ledger", db, "--from", "2026-01-01", "--to", "2027-01-01")
	if code != 0 {
		t.Fatalf("ledger export of a read-only volume: exit %d: %s", code, stderr)
	}
	if want, got := sortedLines(string(csvFile)), sortedLines(exported); strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("export differs from ledger.csv: %d vs %d lines", len(got), len(want))
	}
	fixNow(t, time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	code, stdout, stderr := runCLI("report", "--period", "2026-11", "--prices", pricesFile(t, "allocation"), "--ledger", db)
	if code != 0 || !strings.Contains(stdout, "\n") {
		t.Fatalf("report of a read-only volume: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}
