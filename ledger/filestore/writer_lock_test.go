package filestore

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const holdEnv = "GPULEDGER_TEST_HOLD_WRITE_LOCK"

// TestHoldWriteLockHelper is the other process of
// TestSecondWriterNamesTheLockHolder: with holdEnv set it takes the
// ledger's write lock, says so on stdout and keeps it until stdin closes.
func TestHoldWriteLockHelper(t *testing.T) {
	path := os.Getenv(holdEnv)
	if path == "" {
		t.Skip("only runs as a helper process")
	}
	db, err := sql.Open("sqlite", sqliteURI(path, "_txlock=immediate"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// A second writer whose lock wait runs out fails with an error naming the
// process that holds the write lock; once the holder lets go, it writes.
func TestSecondWriterNamesTheLockHolder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, fleetRows(t0, 1, time.Minute, 2), nil); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldWriteLockHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	locked := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "locked" {
				locked <- true
			}
		}
		close(locked)
	}()
	select {
	case ok := <-locked:
		if !ok {
			t.Fatal("the helper process ended without taking the lock")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the helper process did not take the lock within 60 s")
	}

	prev := busyTimeout
	busyTimeout = 300 * time.Millisecond
	defer func() { busyTimeout = prev }()
	w, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatalf("a second writer's open must not need the write lock: %v", err)
	}
	defer w.Close()
	err = w.Append(ctx, fleetRows(t0.Add(time.Minute), 1, time.Minute, 2), nil)
	want := fmt.Sprintf("is being written by process %d", cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second writer while another process holds the lock: %v, want an error naming the file and saying %q", err, want)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	// The held rows go in with the next write, now that the lock is free.
	if err := w.Append(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, fleetRows(t0.Add(2*time.Minute), 1, time.Minute, 2), nil); err != nil {
		t.Fatalf("second writer after the holder let go: %v", err)
	}
	if n := countRows(t, w); n != 3*2*5 {
		t.Errorf("%d rows stored, want %d", n, 3*2*5)
	}
}
