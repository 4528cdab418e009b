package filestore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// Crash test of closings: a child (this test binary, re-executed) closes
// month after month, each closing 5 MiB of files, and prints each month
// once AppendClosing returned; the parent SIGKILLs it while the next is
// being written. Every reported month must read back closed with all its
// files (their digest checked on read), the one being written closed
// whole or not at all, nothing beyond.
const closeCrashEnv = "GPULEDGER_TEST_CLOSE_CRASH_FILE"

func crashMonth(i int) string { return fmt.Sprintf("%04d-%02d", 2000+i/12, i%12+1) }

func crashClosing(i int) ledger.Closing {
	c := testClosing(crashMonth(i), time.Date(2026, 11, 3, 0, 0, 0, i, time.UTC))
	for _, name := range ledger.ClosedFiles {
		c.Files[name] = bytes.Repeat([]byte(name+crashMonth(i)), (1<<20)/len(name+crashMonth(i)))
	}
	c.Digest = ledger.FilesDigest(c.Files)
	return c
}

// TestCloseCrashChild is the child's body; it does nothing in a normal run.
func TestCloseCrashChild(t *testing.T) {
	path := os.Getenv(closeCrashEnv)
	if path == "" {
		t.Skip("child of TestSIGKILLMidClosing only")
	}
	ctx := context.Background()
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	h, err := s.ClosingHistory(ctx, "", false)
	if err != nil {
		fmt.Println("history:", err)
		os.Exit(3)
	}
	for i := len(h); ; i++ {
		if err := s.AppendClosing(ctx, crashClosing(i)); err != nil {
			fmt.Println("close:", err)
			os.Exit(3)
		}
		fmt.Println(i)
	}
}

func TestSIGKILLMidClosing(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "closings.db")
	for round, killAfter := range []int{2, 5, 3} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCloseCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), closeCrashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		last, seen := -1, 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			i, err := strconv.Atoi(sc.Text())
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child: %s", sc.Text())
			}
			last, seen = i, seen+1
			if seen == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		cmd.Wait()
		s, err := OpenFile(context.Background(), path, FileOptions{})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		h, err := s.ClosingHistory(context.Background(), "", true) // verifies every digest
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(h) != last+1 && len(h) != last+2 {
			t.Fatalf("round %d: %d closings stored, reported up to %d", round, len(h), last)
		}
		for i, c := range h {
			want := crashClosing(i)
			if c.Period != want.Period || c.Digest != want.Digest || len(c.Files) != len(ledger.ClosedFiles) {
				t.Fatalf("round %d: closing %d is %s %s, want %s %s", round, i, c.Period, c.Digest, want.Period, want.Digest)
			}
		}
		s.Close()
		t.Logf("round %d: killed after %s was reported, %d months closed on disk", round, crashMonth(last), len(h))
	}
}
