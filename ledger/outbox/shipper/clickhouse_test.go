package shipper

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

var harness *chtest.Harness

func TestMain(m *testing.M) {
	if os.Getenv(crashOutboxEnv) != "" { // a crash-test child ships to its parent's server
		os.Exit(m.Run())
	}
	harness = chtest.Setup()
	code := m.Run()
	harness.Close()
	os.Exit(code)
}

func sortByKey(rows []attribution.Row) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.IntervalStart.Equal(b.IntervalStart) {
			return a.IntervalStart.Before(b.IntervalStart)
		}
		ka := []string{a.Node, a.GPUUUID, a.SliceID, a.PodUID, a.Container, string(a.Kind)}
		kb := []string{b.Node, b.GPUUUID, b.SliceID, b.PodUID, b.Container, string(b.Kind)}
		for k := range ka {
			if ka[k] != kb[k] {
				return ka[k] < kb[k]
			}
		}
		return false
	})
}

type totals struct {
	rows                     int
	alloc, used, mem, energy float64
}

func sum(rows []attribution.Row) totals {
	var t totals
	for _, r := range rows {
		t.rows++
		t.alloc += r.AllocatedGPUSeconds
		t.used += r.UsedGPUSeconds
		t.mem += r.MemoryMiBSeconds
		t.energy += r.EnergyJoules
	}
	return t
}

// checkExactlyOnce reads ClickHouse back through a fresh connection and
// wants every row and finding exactly once, with the outbox's totals. It
// returns the connection for further checks.
func checkExactlyOnce(t *testing.T, dsn ledger.DSN, rows []attribution.Row, findings []attribution.Finding) *clickhouse.Store {
	t.Helper()
	ctx := context.Background()
	check, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check.Close() })
	var got []attribution.Row
	if err := check.Rows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	want := append([]attribution.Row(nil), rows...)
	sortByKey(want)
	if len(got) != len(want) {
		t.Fatalf("ClickHouse has %d rows, the outbox %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d differs:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if g, w := sum(got), sum(want); g != w {
		t.Errorf("ClickHouse totals %+v, outbox totals %+v", g, w)
	}
	var gotF []attribution.Finding
	if err := check.Findings(ctx, time.Time{}, time.Time{}, func(f attribution.Finding) error { gotF = append(gotF, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotF, findings) {
		t.Errorf("findings differ: got %d, want %d", len(gotF), len(findings))
	}
	return check
}

// TestKillClickHouseWhileShipping SIGKILLs the server twice while the
// shipper runs (once between batches, once racing an insert), restarts it
// on the same data dir, and checks that every row arrived exactly once and
// that the table totals equal the outbox's to the last GPU-second.
func TestKillClickHouseWhileShipping(t *testing.T) {
	srv := harness.Server(t)
	ctx := context.Background()
	dsn, err := ledger.ParseDSN(harness.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, dsn, ""); err != nil {
		t.Fatal(err)
	}
	store, err := clickhouse.Open(ctx, dsn, clickhouse.Options{MaxRetries: 1, RetryBase: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	rows := genRows(7, 16, 6*60, t0) // 23040 rows over 6 hours
	findings := genFindings(20, t0)
	src := newFakeOutbox(rows, findings)
	src.failMarks = 1 // the first batch is stored but not marked: it is sent twice
	sh := New(src, store, Options{BatchSize: 500, Interval: 5 * time.Millisecond, MinInterval: -1, WakeJitter: -1,
		RetryBase: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond, RollupDelay: -1})

	killed := make(chan struct{}, 2)
	var once [2]sync.Once
	src.onNext = func(int) {
		switch shipped := sh.Stats().BatchesShipped; {
		case shipped >= 10:
			once[0].Do(func() { srv.Kill(); killed <- struct{}{} })
		}
		if sh.Stats().BatchesShipped >= 30 {
			// Race the insert this batch is about to make.
			once[1].Do(func() {
				go func() { time.Sleep(time.Millisecond); srv.Kill(); killed <- struct{}{} }()
			})
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- sh.Run(runCtx) }()
	for i := 0; i < 2; i++ {
		select {
		case <-killed:
		case <-time.After(2 * time.Minute):
			t.Fatalf("kill %d never happened; stats %+v", i+1, sh.Stats())
		}
		failed := sh.Stats().BatchesFailed
		testenv.Eventually(t, 2*time.Minute, func() error {
			if st := sh.Stats(); st.BatchesFailed <= failed {
				return fmt.Errorf("the shipper has not noticed the dead server: %+v", st)
			}
			return nil
		})
		if err := srv.Restart(ctx); err != nil {
			t.Fatalf("restart after kill %d: %v", i+1, err)
		}
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		if st := sh.Stats(); st.RowsPending != 0 || st.LastError != "" || src.mark != src.next {
			return fmt.Errorf("the outbox has not drained: %+v", st)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	st := sh.Stats()
	t.Logf("stats: %+v; rows sent more than once: %d", st, src.replays())
	if st.BatchesFailed < 2 {
		t.Errorf("only %d failed batches: the kills did not hit the shipping loop", st.BatchesFailed)
	}
	if src.replays() < 500 {
		t.Errorf("%d rows re-sent, want at least the 500 of the unmarked batch", src.replays())
	}

	check := checkExactlyOnce(t, dsn, rows, findings)
	// The monthly report (from the rollups the shipper rebuilt) agrees.
	aggs, err := check.Aggregate(ctx, ledger.AggregateQuery{From: t0, To: t0.AddDate(0, 1, 0), Bucket: ledger.BucketMonth})
	if err != nil {
		t.Fatal(err)
	}
	var agg totals
	for _, a := range aggs {
		agg.rows += int(a.Rows)
		agg.alloc += a.AllocatedSeconds
		agg.used += a.UsedSeconds
		agg.mem += a.MemoryMiBSeconds
		agg.energy += a.EnergyJoules
	}
	if w := sum(rows); agg != w {
		t.Errorf("monthly aggregate totals %+v, outbox totals %+v", agg, w)
	}
	if st.RollupRebuilds == 0 {
		t.Error("the shipper never rebuilt a rollup")
	}
}
