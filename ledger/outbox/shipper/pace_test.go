package shipper

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// runInBackground runs sh until the test ends.
func runInBackground(t *testing.T, sh *Shipper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sh.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// A collector that commits (and wakes the shipper) every 5 ms for 1.2 s
// gets at most one insert per MinInterval (200 ms): 1.2 / 0.2 + the first
// round and the one after the last commit = 8. Shipping on every Wake,
// as before MinInterval, made about 240. The idle poll (Interval, shorter
// than MinInterval here as in the defaults) does not get round it.
func TestMinIntervalBoundsInserts(t *testing.T) {
	src := newFakeOutbox(nil, nil)
	dst := newMemSink()
	sh := New(src, dst, Options{BatchSize: 10000, Interval: 20 * time.Millisecond, MinInterval: 200 * time.Millisecond, WakeJitter: -1})
	runInBackground(t, sh)
	rows := genRows(11, 1, 240, t0)
	start := time.Now()
	for i := 0; i < len(rows); i += 4 {
		src.add(rows[i : i+4])
		sh.Wake()
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	testenv.Eventually(t, time.Minute, func() error {
		if st := sh.Stats(); st.RowsShipped != uint64(len(rows)) {
			return fmt.Errorf("%d of %d rows shipped", st.RowsShipped, len(rows))
		}
		return nil
	})
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if len(dst.rows) != len(rows) {
		t.Errorf("sink holds %d rows, want %d", len(dst.rows), len(rows))
	}
	// The commits took at least 1.2 s; a slow machine stretches them, and
	// the bound with them.
	if limit := int(took/(200*time.Millisecond)) + 2; dst.appends > limit {
		t.Errorf("%d inserts in %v of commits, want at most %d (one per 200 ms)", dst.appends, took, limit)
	}
	if dst.appends < 2 {
		t.Errorf("%d inserts: rows committed during the run were held back", dst.appends)
	}
}

// MinInterval never holds back a full batch: rows committed during a round
// that fill a batch ship at once, even with an hour's MinInterval.
func TestFullBatchShipsAtOnce(t *testing.T) {
	rows := genRows(12, 1, 50, t0) // 200 rows
	src := newFakeOutbox(rows[:8], nil)
	var once sync.Once
	src.onNext = func(int) { once.Do(func() { src.add(rows[8:]) }) }
	dst := newMemSink()
	// MaxBatches 1: each round is one batch, so the second batch is the
	// next round's.
	sh := New(src, dst, Options{BatchSize: 50, MaxBatches: 1, Interval: time.Hour, MinInterval: time.Hour, WakeJitter: -1})
	runInBackground(t, sh)
	testenv.Eventually(t, 30*time.Second, func() error {
		if st := sh.Stats(); st.RowsShipped != uint64(len(rows)) {
			return fmt.Errorf("%d of %d rows shipped", st.RowsShipped, len(rows))
		}
		return nil
	})
}

// Fifty nodes' shippers woken at the same instant (their ledger interval
// closed on the same minute) insert spread over WakeJitter, not at once.
func TestWakeJitterSpreadsANodesInserts(t *testing.T) {
	const nodes, jitter = 50, 600 * time.Millisecond
	dst := newMemSink()
	var shippers []*Shipper
	var srcs []*fakeOutbox
	for range nodes {
		src := newFakeOutbox(nil, nil)
		sh := New(src, dst, Options{Interval: time.Hour, MinInterval: -1, WakeJitter: jitter})
		runInBackground(t, sh)
		srcs, shippers = append(srcs, src), append(shippers, sh)
	}
	// Let every Run finish its first (empty) round and wait for a Wake.
	time.Sleep(100 * time.Millisecond)
	for i, src := range srcs {
		src.add(genRows(uint64(i), 1, 1, t0.Add(time.Duration(i)*time.Minute)))
	}
	woken := time.Now()
	for _, sh := range shippers {
		sh.Wake()
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		dst.mu.Lock()
		defer dst.mu.Unlock()
		if dst.appends != nodes {
			return fmt.Errorf("%d of %d nodes shipped", dst.appends, nodes)
		}
		return nil
	})
	dst.mu.Lock()
	defer dst.mu.Unlock()
	var first, last time.Duration = time.Hour, 0
	for _, at := range dst.at {
		d := at.Sub(woken)
		first, last = min(first, d), max(last, d)
	}
	// Uniform over 600 ms, the 50 inserts span more than 300 ms unless the
	// jitter is missing (all within a few ms of the Wake).
	if last-first < jitter/2 {
		t.Errorf("inserts spread over %v (first %v, last %v after the Wake), want over %v", last-first, first, last, jitter/2)
	}
}

// Forty collectors ship rows of the same hour. With a RollupDelay of 5
// minutes and a RollupJitter of 10, each asks for the hour's rollup
// between 5 and 15 minutes after it closed: 10 minutes after, about half
// have (all forty did at 5 minutes before RollupJitter); 15 minutes
// after, all have.
func TestRollupJitterSpreadsRebuilds(t *testing.T) {
	const nodes = 40
	ctx := context.Background()
	now := t0.Add(70 * time.Minute)
	clock := func() time.Time { return now }
	var sinks []rollupSink
	var shippers []*Shipper
	for i := range nodes {
		dst := rollupSink{newMemSink()}
		sh := New(newFakeOutbox(genRows(uint64(i), 1, 60, t0), nil), dst,
			Options{RollupDelay: 5 * time.Minute, RollupJitter: 10 * time.Minute, Now: clock})
		sinks, shippers = append(sinks, dst), append(shippers, sh)
	}
	rebuilt := func() int {
		n := 0
		for i, sh := range shippers {
			if _, err := sh.ShipOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if len(sinks[i].rebuilds) > 0 {
				n++
			}
		}
		return n
	}
	// Binomial(40, 1/2): outside [5, 35] once in about 10^5 runs.
	if n := rebuilt(); n < 5 || n > 35 {
		t.Errorf("10 minutes after the hour closed %d of %d collectors asked for its rollup, want about half", n, nodes)
	}
	now = t0.Add(75 * time.Minute)
	if n := rebuilt(); n != nodes {
		t.Errorf("15 minutes after the hour closed %d of %d collectors asked for its rollup, want all", n, nodes)
	}
}
