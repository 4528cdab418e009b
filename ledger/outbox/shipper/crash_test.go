package shipper

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// Crash test of the collector's shipping half: a child process (this test
// binary, re-executed) ships a real embedded outbox to a real ClickHouse
// one batch at a time and reports each batch; the parent SIGKILLs it a
// random fraction of a millisecond after a report, while the next batch is
// being read, inserted or marked, and restarts it. When a restarted child
// has drained the outbox, ClickHouse must hold every row exactly once.
const (
	crashOutboxEnv = "GPULEDGER_TEST_SHIPPER_OUTBOX"
	crashDSNEnv    = "GPULEDGER_TEST_SHIPPER_DSN"
)

// TestShipperCrashChild is the child's body; it does nothing in a normal run.
func TestShipperCrashChild(t *testing.T) {
	path := os.Getenv(crashOutboxEnv)
	if path == "" {
		t.Skip("child of TestSIGKILLShipperMidBatch only")
	}
	ctx := context.Background()
	fail := func(what string, err error) {
		fmt.Printf("error: %s: %v\n", what, err)
		os.Exit(3)
	}
	out, err := filestore.OpenFile(ctx, path, filestore.FileOptions{Sinks: []string{"clickhouse"}, MustExist: true})
	if err != nil {
		fail("open outbox", err)
	}
	dsn, err := ledger.ParseDSN(os.Getenv(crashDSNEnv))
	if err != nil {
		fail("DSN", err)
	}
	dst, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		fail("open ClickHouse", err)
	}
	sh := New(out, dst, Options{BatchSize: 300, MaxBatches: 1, RollupDelay: -1})
	for {
		n, err := sh.ShipOnce(ctx)
		if err != nil {
			fail("ship", err)
		}
		if n == 0 {
			fmt.Println("drained")
			os.Exit(0)
		}
		fmt.Println("shipped", n)
	}
}

func TestSIGKILLShipperMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	raw := harness.DSN(t)
	dsn, err := ledger.ParseDSN(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, dsn, ""); err != nil {
		t.Fatal(err)
	}

	// The collector's side: rows committed to the embedded outbox a cycle's
	// worth at a time.
	path := filepath.Join(t.TempDir(), "outbox.db")
	rows := genRows(11, 16, 3*60, t0) // 11,520 rows: ~39 batches of 300
	findings := genFindings(12, t0)
	out, err := filestore.OpenFile(ctx, path, filestore.FileOptions{Sinks: []string{"clickhouse"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 64 * 4 {
		var fs []attribution.Finding
		if i == 0 {
			fs = findings
		}
		if err := out.Append(ctx, rows[i:min(i+64*4, len(rows))], fs); err != nil {
			t.Fatal(err)
		}
	}
	out.Close()

	// The kill offsets are drawn afresh each run; their random start value
	// is logged so a failing run can be replayed with GPULEDGER_CRASH_SEED.
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("GPULEDGER_CRASH_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("GPULEDGER_CRASH_SEED=%q: %v", v, err)
		}
		seed = s
	}
	t.Logf("kill offsets seeded with %d (GPULEDGER_CRASH_SEED=%d replays them)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round, killAfter := range []int{3, 8, 5, 6} {
		delay := time.Duration(rng.IntN(2000)) * time.Microsecond
		reported := runShipper(t, path, raw, killAfter, delay)
		t.Logf("round %d: SIGKILL %v after batch report %d", round, delay, reported)
	}
	if got := runShipper(t, path, raw, 0, 0); got < 0 {
		t.Fatal("the last child did not drain the outbox")
	}

	checkExactlyOnce(t, dsn, rows, findings)
}

// runShipper runs a child on the outbox. With killAfter > 0 it SIGKILLs the
// child delay after its killAfter-th batch report and returns that count;
// with 0 it waits for the child to drain the outbox and returns its
// reports, or -1 if it exited otherwise.
func runShipper(t *testing.T, path, dsn string, killAfter int, delay time.Duration) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShipperCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashOutboxEnv+"="+path, crashDSNEnv+"="+dsn)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen, drained := 0, false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "shipped "):
			if _, err := strconv.Atoi(strings.TrimPrefix(line, "shipped ")); err != nil {
				t.Errorf("child: %q", line)
			}
			seen++
			if killAfter > 0 && seen == killAfter {
				time.Sleep(delay)
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		case line == "drained":
			drained = true
		case strings.HasPrefix(line, "error: "):
			t.Errorf("child: %s", line)
		}
	}
	err = cmd.Wait()
	if killAfter > 0 {
		if seen < killAfter {
			t.Fatalf("child exited (%v) after %d batches, before the kill at %d", err, seen, killAfter)
		}
		return seen
	}
	if err != nil || !drained {
		return -1
	}
	return seen
}
