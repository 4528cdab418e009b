package shipper

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/tenancy"
)

var t0 = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// genRows makes gpus x 4 rows per minute for n minutes from start. Values
// are multiples of 1/64 well below 2^20, so sums are exact in any order.
func genRows(seed uint64, gpus, n int, start time.Time) []attribution.Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	dy := func(max int) float64 { return float64(rng.IntN(max*64)) / 64 }
	var rows []attribution.Row
	for i := 0; i < n; i++ {
		is := start.Add(time.Duration(i) * time.Minute)
		for g := 0; g < gpus; g++ {
			uuid := fmt.Sprintf("GPU-%03d", g)
			node := fmt.Sprintf("node-%d", g/8)
			base := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: is, IntervalEnd: is.Add(time.Minute), Node: node, GPUUUID: uuid,
				GPUModel: "A100-SXM4-80GB", SliceID: uuid, SharingMode: string(tenancy.Exclusive), Method: attribution.MethodMeasured}
			c := base
			c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container = attribution.KindContainer, "ml", "train-0", "uid-"+uuid, "main"
			c.Team = []string{"ml", "search"}[g%2]
			c.AllocatedGPUSeconds, c.UsedGPUSeconds, c.MemoryMiBSeconds, c.EnergyJoules = 60, dy(50), dy(1<<14), dy(1<<12)
			idle := base
			idle.Kind, idle.UsedGPUSeconds, idle.EnergyJoules = attribution.KindIdle, 60-c.UsedGPUSeconds-1, dy(100)
			unattr := base
			unattr.Kind, unattr.UsedGPUSeconds, unattr.EnergyJoules = attribution.KindUnattributed, 1, dy(10)
			unalloc := base
			unalloc.Kind = attribution.KindUnallocated
			rows = append(rows, c, idle, unattr, unalloc)
		}
	}
	return rows
}

func genFindings(n int, start time.Time) []attribution.Finding {
	var fs []attribution.Finding
	for i := 0; i < n; i++ {
		s := start.Add(time.Duration(i) * 7 * time.Minute)
		fs = append(fs, attribution.Finding{Cluster: attribution.DefaultCluster, Start: s, End: s.Add(5 * time.Minute), Kind: attribution.FindingIdleAllocation,
			Node: "node-0", GPUUUID: fmt.Sprintf("GPU-%03d", i%4), Namespace: "ml", Pod: "train-0", Container: "main", Team: "ml"})
	}
	return fs
}

func TestShipsEverythingOnce(t *testing.T) {
	rows := genRows(1, 4, 60, t0)
	fs := genFindings(5, t0)
	src := newFakeOutbox(rows, fs)
	dst := newMemSink()
	sh := New(src, dst, Options{BatchSize: 100, Now: func() time.Time { return t0.Add(24 * time.Hour) }})
	n, err := sh.ShipOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := len(rows) + len(fs)
	if n != total {
		t.Errorf("ShipOnce shipped %d, want %d", n, total)
	}
	if len(dst.rows) != len(rows) || len(dst.findings) != len(fs) {
		t.Errorf("sink has %d rows and %d findings, want %d and %d", len(dst.rows), len(dst.findings), len(rows), len(fs))
	}
	st := sh.Stats()
	wantBatches := uint64((total + 99) / 100)
	if st.BatchesShipped != wantBatches || st.BatchesFailed != 0 || st.RowsShipped != uint64(len(rows)) ||
		st.FindingsShipped != uint64(len(fs)) || st.RowsPending != 0 || !st.OldestPending.IsZero() {
		t.Errorf("stats %+v, want %d batches, %d rows, %d findings, nothing pending", st, wantBatches, len(rows), len(fs))
	}
	if src.mark != src.next {
		t.Errorf("outbox mark %d, want %d", src.mark, src.next)
	}
	if n, err := sh.ShipOnce(context.Background()); n != 0 || err != nil {
		t.Errorf("ShipOnce on a drained outbox = %d, %v", n, err)
	}
}

// TestMarksOnlyAfterStore: a failed insert leaves the outbox mark alone;
// a failed mark after a successful insert re-sends the batch, which the
// sink's keys absorb.
func TestMarksOnlyAfterStore(t *testing.T) {
	ctx := context.Background()
	rows := genRows(2, 2, 30, t0) // 240 rows
	src := newFakeOutbox(rows, nil)
	dst := newMemSink()
	sh := New(src, dst, Options{BatchSize: 100})

	dst.fail = 1
	n, err := sh.ShipOnce(ctx)
	if err == nil || n != 0 || !strings.Contains(err.Error(), "cannot ship outbox batch 1-100") {
		t.Fatalf("ShipOnce with the sink down = %d, %v; want 0 and an error naming the batch", n, err)
	}
	if src.mark != 0 || len(src.marks) != 0 {
		t.Errorf("outbox marked %v after a failed insert", src.marks)
	}
	if st := sh.Stats(); st.BatchesFailed != 1 || st.RowsPending != 240 || st.LastError == "" {
		t.Errorf("stats after failure %+v, want 1 failed batch, 240 pending and the error", st)
	}

	src.failMarks = 1
	n, err = sh.ShipOnce(ctx)
	if err == nil || n != 100 {
		t.Fatalf("ShipOnce with the mark failing = %d, %v; want 100 stored and an error", n, err)
	}
	if src.mark != 0 {
		t.Errorf("mark moved to %d although MarkShipped failed", src.mark)
	}
	if _, err := sh.ShipOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if src.replays() != 100 {
		t.Errorf("%d rows were sent twice, want the 100 of the unmarked batch", src.replays())
	}
	if len(dst.rows) != len(rows) {
		t.Errorf("sink has %d distinct rows, want %d", len(dst.rows), len(rows))
	}
	if want := []int64{100, 200, 240}; fmt.Sprint(src.marks) != fmt.Sprint(want) {
		t.Errorf("marks %v, want %v", src.marks, want)
	}
	if st := sh.Stats(); st.LastError != "" || st.RowsPending != 0 {
		t.Errorf("stats after recovery %+v", st)
	}
}

func TestRollupsOfClosedHoursOnly(t *testing.T) {
	ctx := context.Background()
	// Rows in hours 0, 1, 2 and 5 after t0.
	rows := append(genRows(3, 1, 3*60, t0), genRows(4, 1, 10, t0.Add(5*time.Hour))...)
	src := newFakeOutbox(rows, nil)
	dst := rollupSink{newMemSink()}
	now := t0.Add(3*time.Hour + 4*time.Minute) // hour 2 closed 4 minutes ago
	sh := New(src, dst, Options{BatchSize: 50, RollupDelay: 5 * time.Minute, RollupJitter: -1, Now: func() time.Time { return now }})
	if _, err := sh.ShipOnce(ctx); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([][2]time.Time{{t0, t0.Add(2 * time.Hour)}})
	if got := fmt.Sprint(dst.rebuilds); got != want {
		t.Errorf("rebuilds %s, want %s (hours 0-1; hour 2 closed less than the delay ago)", got, want)
	}
	now = t0.Add(7 * time.Hour)
	if _, err := sh.ShipOnce(ctx); err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprint([][2]time.Time{{t0, t0.Add(2 * time.Hour)}, {t0.Add(2 * time.Hour), t0.Add(3 * time.Hour)}, {t0.Add(5 * time.Hour), t0.Add(6 * time.Hour)}})
	if got := fmt.Sprint(dst.rebuilds); got != want {
		t.Errorf("rebuilds %s, want %s", got, want)
	}
	if st := sh.Stats(); st.RollupRebuilds != 3 || st.RollupFailures != 0 {
		t.Errorf("stats %+v, want 3 rebuilds", st)
	}
}

func TestPendingAge(t *testing.T) {
	rows := genRows(5, 1, 10, t0)
	src := newFakeOutbox(rows, nil)
	dst := newMemSink()
	dst.fail = 100
	now := t0.Add(time.Hour)
	sh := New(src, dst, Options{BatchSize: 8, Now: func() time.Time { return now }})
	if _, err := sh.ShipOnce(context.Background()); err == nil {
		t.Fatal("ShipOnce succeeded with the sink down")
	}
	st := sh.Stats()
	// The oldest pending row is the first minute's, ending at t0+1m.
	if st.RowsPending != 40 || !st.OldestPending.Equal(t0.Add(time.Minute)) || st.OldestPendingAge != 59*time.Minute {
		t.Errorf("stats %+v, want 40 pending, oldest ending %v, 59m old", st, t0.Add(time.Minute))
	}
}

func TestRunStopsWithContext(t *testing.T) {
	src := newFakeOutbox(genRows(6, 1, 5, t0), nil)
	dst := newMemSink()
	sh := New(src, dst, Options{BatchSize: 3, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sh.Run(ctx) }()
	testenv.Eventually(t, time.Minute, func() error {
		if st := sh.Stats(); st.RowsShipped < 20 {
			return fmt.Errorf("%d of 20 rows shipped", st.RowsShipped)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v after cancel, want nil", err)
	}
	if len(dst.rows) != 20 {
		t.Errorf("sink has %d rows, want 20", len(dst.rows))
	}
}
