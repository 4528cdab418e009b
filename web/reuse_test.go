package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// deviceCountingStore is the real embedded ledger with its per-device
// reads (the FOCUS file's) and all its aggregate reads counted.
type deviceCountingStore struct {
	fullStore
	devices, all *atomic.Int32
}

func (c deviceCountingStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	c.all.Add(1)
	if q.ByDevice {
		c.devices.Add(1)
	}
	return c.fullStore.Aggregate(ctx, q)
}

func countingOpener(db string, devices, all *atomic.Int32) func(context.Context) (ledger.Store, error) {
	return func(ctx context.Context) (ledger.Store, error) {
		st, err := fileOpener(db)(ctx)
		if err != nil {
			return nil, err
		}
		f, err := full(st)
		if err != nil {
			return nil, err
		}
		return deviceCountingStore{f, devices, all}, nil
	}
}

// getAll fetches u from n readers at once and returns the bodies.
func getAll(t *testing.T, u string, n int) []string {
	t.Helper()
	bodies := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			resp, body := fetchQuiet(u)
			if resp == nil || resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %v %.200s", u, resp, body)
			}
			bodies[i] = body
		})
	}
	close(start)
	wg.Wait()
	return bodies
}

// fetchQuiet is fetch for other goroutines than the test's.
func fetchQuiet(u string) (*http.Response, string) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err.Error()
	}
	return resp, string(b)
}

// The FOCUS file's per-device aggregates are read once per build of the
// month's report: October's file asked for by eight readers at once and
// then three more times reads them once, every answer the same bytes
// (each request reading them again walked the ledger's per-device rollup:
// most of serve's CPU under load). They follow the report: with the
// running month rebuilt on every request (RunningTTL negative), each
// request reads them again, so a FOCUS file never mixes two reads.
func TestFOCUSDevicesReadOncePerBuild(t *testing.T) {
	db, prices := testLedger(t)
	var devices, all atomic.Int32
	hs := newTestServer(t, countingOpener(db, &devices, &all), prices)
	bodies := getAll(t, hs.URL+"/reports/2026-10.focus.csv", 8)
	for range 3 {
		resp, body := fetch(t, hs.URL+"/reports/2026-10.focus.csv")
		if resp.StatusCode != 200 {
			t.Fatalf("October FOCUS: %d %.300s", resp.StatusCode, body)
		}
		bodies = append(bodies, body)
	}
	if n := devices.Load(); n != 1 {
		t.Errorf("11 reads of October's FOCUS file read its per-device aggregates %d times, want 1", n)
	}
	for i, b := range bodies {
		// 744 hours of one A100 held by ml: its row is there.
		if b != bodies[0] || len(b) < 100 {
			t.Errorf("answer %d differs from the first (or is empty):\n%.300s\nwant\n%.300s", i, b, bodies[0])
		}
	}

	devices.Store(0)
	hs = newTestServer(t, countingOpener(db, &devices, &all), prices, func(c *Config) { c.RunningTTL = -1 })
	for range 2 {
		if resp, body := fetch(t, hs.URL+"/reports/2026-11.focus.csv"); resp.StatusCode != 200 {
			t.Fatalf("November FOCUS: %d %.300s", resp.StatusCode, body)
		}
	}
	if n := devices.Load(); n != 2 {
		t.Errorf("two reads of November's FOCUS file, its report rebuilt for each, read its per-device aggregates %d times, want 2", n)
	}
}

// Readiness probes share the ledger's answer: twenty at once and a run
// of probes one after another read the ledger about once per readyReuse,
// not once each (each read walks the ledger's rollup). The file is still
// checked on every probe: deleted right after a success, the next probe
// answers 503.
func TestReadyProbesShareTheLedgersAnswer(t *testing.T) {
	db, prices := testLedger(t)
	var devices, all atomic.Int32
	hs := newTestServer(t, countingOpener(db, &devices, &all), prices, func(c *Config) { c.LedgerFile = db })
	start := time.Now()
	getAll(t, hs.URL+"/readyz", 20)
	for range 10 {
		if resp, body := fetch(t, hs.URL+"/readyz"); resp.StatusCode != 200 {
			t.Fatalf("readyz: %d %s", resp.StatusCode, body)
		}
	}
	// At most one read per readyReuse begun, and one more for probes that
	// arrived while it ran; 30 probes read 30 times without the sharing.
	bound := 2 + int32(time.Since(start)/readyReuse)
	if n := all.Load(); n < 1 || n > bound || n >= 30 {
		t.Errorf("30 probes read the ledger %d times, want 1 to %d", n, bound)
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if resp, body := fetch(t, hs.URL+"/readyz"); resp.StatusCode != 503 {
		t.Errorf("readyz with the ledger file deleted: %d %s, want 503", resp.StatusCode, body)
	}
}

// failingAfterStore is the real embedded ledger whose reads fail once
// fail is set.
type failingAfterStore struct {
	fullStore
	fail *atomic.Bool
}

func (f failingAfterStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if f.fail.Load() {
		return nil, errors.New("disk gone")
	}
	return f.fullStore.Aggregate(ctx, q)
}

// A ledger read that fails ends the reuse of the readiness answer: the
// next probe asks the ledger, and answers 503, within readyReuse of the
// last success.
func TestReadyAnswerEndsWithAFailedRead(t *testing.T) {
	db, prices := testLedger(t)
	var fail atomic.Bool
	open := func(ctx context.Context) (ledger.Store, error) {
		st, err := fileOpener(db)(ctx)
		if err != nil {
			return nil, err
		}
		f, err := full(st)
		if err != nil {
			return nil, err
		}
		return failingAfterStore{f, &fail}, nil
	}
	hs := newTestServer(t, open, prices)
	if resp, body := fetch(t, hs.URL+"/readyz"); resp.StatusCode != 200 {
		t.Fatalf("readyz: %d %s", resp.StatusCode, body)
	}
	fail.Store(true)
	if resp, _ := fetch(t, hs.URL+"/reports/2026-10.csv"); resp.StatusCode != 503 {
		t.Fatalf("October with the ledger failing: %d, want 503", resp.StatusCode)
	}
	if resp, body := fetch(t, hs.URL+"/readyz"); resp.StatusCode != 503 || !strings.Contains(body, "disk gone") {
		t.Errorf("readyz after a failed read: %d %q, want 503 saying why", resp.StatusCode, body)
	}
}
