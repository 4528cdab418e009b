package filestore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// Crash test: a child process (this test binary, re-executed) saves the
// annotation pins of a numbered batch, then appends its rows, in a loop (the
// collector's order), and prints each number once both returned; the parent
// SIGKILLs it right after a report, while the next batch is being written,
// and checks the file.
const (
	crashFileEnv  = "GPULEDGER_TEST_CRASH_FILE"
	crashStartEnv = "GPULEDGER_TEST_CRASH_START"
	crashGPUs     = 400 // 2000 rows a batch
	crashPins     = 50
)

// crashBatchPins are batch b's pins; edited gives the same keys another
// value, which must never replace the first.
func crashBatchPins(b int, edited bool) []attribution.AnnotationPin {
	pins := make([]attribution.AnnotationPin, crashPins)
	for i := range pins {
		v := fmt.Sprintf("GPU-%d-%d,NVIDIA,1000,30:;", b, i)
		if edited {
			v = "edited"
		}
		pins[i] = attribution.AnnotationPin{PodUID: fmt.Sprintf("uid-%d", b), Container: fmt.Sprintf("c%d", i),
			Key: "hami.io/vgpu-devices-allocated", Value: v, At: crashBatch(b)}
	}
	return pins
}

func crashBatch(b int) time.Time { return t0.Add(time.Duration(b) * time.Minute) }

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashFileEnv)
	if path == "" {
		t.Skip("child of TestSIGKILLMidBatch only")
	}
	start, _ := strconv.Atoi(os.Getenv(crashStartEnv))
	ctx := context.Background()
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	for b := start; ; b++ {
		rows := fleetRows(crashBatch(b), 1, time.Minute, crashGPUs)
		if b > 0 { // replay the previous batch too: it must change nothing
			rows = append(fleetRows(crashBatch(b-1), 1, time.Minute, crashGPUs), rows...)
		}
		pins := crashBatchPins(b, false)
		if b > 0 { // the previous batch's keys again, edited: the first value stays
			pins = append(pins, crashBatchPins(b-1, true)...)
		}
		if err := s.SavePins(ctx, pins); err != nil {
			fmt.Println("pins:", err)
			os.Exit(3)
		}
		if err := s.Append(ctx, rows, nil); err != nil {
			fmt.Println("append:", err)
			os.Exit(3)
		}
		fmt.Println(b)
	}
}

func TestSIGKILLMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	perBatch := int64(crashGPUs * 5)
	next := 0
	for round, killAfter := range []int{5, 12, 7} {
		last := runAndKill(t, path, next, killAfter)
		s, err := OpenFile(context.Background(), path, FileOptions{})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		var ok string
		if err := s.r.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("round %d: integrity_check %q, %v", round, ok, err)
		}
		counts := map[int64]int64{}
		rs, err := s.r.Query("SELECT interval_start_ns, count(*) FROM ledger_rows GROUP BY interval_start_ns")
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var ns, n int64
			rs.Scan(&ns, &n)
			counts[ns] = n
		}
		rs.Close()
		// Batches 0..last were reported committed; last+1 may have committed
		// just before the kill; nothing beyond. Each present batch is whole.
		top := last
		if _, ok := counts[crashBatch(last+1).UnixNano()]; ok {
			top = last + 1
		}
		if len(counts) != top+1 {
			t.Fatalf("round %d: %d batches stored, want %d (reported up to %d)", round, len(counts), top+1, last)
		}
		for b := 0; b <= top; b++ {
			if n := counts[crashBatch(b).UnixNano()]; n != perBatch {
				t.Fatalf("round %d: batch %d has %d rows, want %d (lost or partial)", round, b, n, perBatch)
			}
		}
		// Each row is in the outbox exactly once.
		batch, err := s.NextBatch(context.Background(), "ch", 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(batch.Rows)) != int64(top+1)*perBatch {
			t.Fatalf("round %d: outbox holds %d rows, want %d", round, len(batch.Rows), int64(top+1)*perBatch)
		}
		checkCrashPins(t, s, round, last)
		s.Close()
		t.Logf("round %d: killed after batch %d reported, %d batches on disk", round, last, top+1)
		next = top + 1
	}
}

// checkCrashPins: the pins of every reported batch are there, whole and
// with their first value; the batch being written at the kill has all or
// none of its pins; nothing beyond.
func checkCrashPins(t *testing.T, s *FileStore, round, last int) {
	t.Helper()
	pins, err := s.Pins(context.Background())
	if err != nil {
		t.Fatalf("round %d: Pins: %v", round, err)
	}
	byBatch := map[string][]attribution.AnnotationPin{}
	for _, p := range pins {
		byBatch[p.PodUID] = append(byBatch[p.PodUID], p)
	}
	for b := 0; b <= last+1; b++ {
		got := byBatch[fmt.Sprintf("uid-%d", b)]
		delete(byBatch, fmt.Sprintf("uid-%d", b))
		if b == last+1 && len(got) == 0 {
			continue
		}
		if len(got) != crashPins {
			t.Fatalf("round %d: batch %d has %d pins, want %d (lost or partial)", round, b, len(got), crashPins)
		}
		for _, p := range got {
			if p.Value == "edited" || !p.At.Equal(crashBatch(b)) {
				t.Fatalf("round %d: pin %+v is not the first one saved", round, p)
			}
		}
	}
	if len(byBatch) != 0 {
		t.Fatalf("round %d: pins of batches never written: %v", round, byBatch)
	}
}

// runAndKill runs the child from batch start, kills it once it reported
// killAfter batches and returns the last batch it reported.
func runAndKill(t *testing.T, path string, start, killAfter int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashFileEnv+"="+path, crashStartEnv+"="+strconv.Itoa(start))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last, seen := start-1, 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		b, err := strconv.Atoi(sc.Text())
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", sc.Text())
		}
		last, seen = b, seen+1
		if seen == killAfter {
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	cmd.Wait()
	if seen < killAfter {
		t.Fatalf("child stopped after %d batches", seen)
	}
	return last
}
