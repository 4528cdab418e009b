package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/tenancy"
)

var harness *chtest.Harness

func TestMain(m *testing.M) {
	harness = chtest.Setup()
	code := m.Run()
	harness.Close()
	os.Exit(code)
}

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

// minuteRows are n one-minute intervals of one exclusive GPU: a container
// row holding the whole minute and the idle row closing the usage
// partition.
func minuteRows(n int) []attribution.Row {
	var rows []attribution.Row
	for i := range n {
		is := t0.Add(time.Duration(i) * time.Minute)
		base := attribution.Row{IntervalStart: is, IntervalEnd: is.Add(time.Minute), Node: "n1", GPUUUID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SliceID: "GPU-1", SharingMode: string(tenancy.Exclusive), Method: attribution.MethodMeasured}
		c := base
		c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container, c.Team = attribution.KindContainer, "ml", "p", "uid-1", "main", "ml"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 60, float64(i%60)
		idle := base
		idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 60-c.UsedGPUSeconds
		rows = append(rows, c, idle)
	}
	return rows
}

func openRemote(t *testing.T, dsn string) ledger.Store {
	t.Helper()
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	st, err := clickhouse.Open(context.Background(), d, clickhouse.Options{MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func migrated(tb testing.TB) string {
	tb.Helper()
	dsn := harness.DSN(tb)
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	if err := clickhouse.Migrate(context.Background(), d, ""); err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// remoteRows counts ClickHouse's rows per key, so a duplicate shows.
func remoteRows(t *testing.T, dsn string) map[string]int {
	t.Helper()
	st := openRemote(t, dsn)
	defer st.Close()
	m := map[string]int{}
	err := st.Rows(context.Background(), time.Time{}, time.Time{}, func(r attribution.Row) error {
		m[r.IntervalStart.Format(time.RFC3339)+"|"+string(r.Kind)]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func checkExactlyOnce(t *testing.T, got map[string]int, want []attribution.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ClickHouse holds %d distinct rows, want %d", len(got), len(want))
	}
	for _, r := range want {
		if k := r.IntervalStart.Format(time.RFC3339) + "|" + string(r.Kind); got[k] != 1 {
			t.Errorf("row %s is in ClickHouse %d times, want once", k, got[k])
		}
	}
}

// Drain ships every row written before it, and the shipper's periodic
// wait (an hour here) does not hold it up.
func TestDrainShipsEveryPendingRow(t *testing.T) {
	harness.Require(t)
	dsn := migrated(t)
	ctx := context.Background()
	o, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "ledger.db"), Remote: openRemote(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	rows := minuteRows(90)
	for i := 0; i < len(rows); i += 2 {
		if err := o.Write(ctx, rows[i:i+2], nil); err != nil {
			t.Fatal(err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := o.Drain(dctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st := o.Status(); st.Pending != 0 {
		t.Errorf("after Drain: %+v", st)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, remoteRows(t, dsn), rows)
}

// A cluster ledger that is down at shutdown: Drain gives up at its
// deadline and says how many rows stay behind; they are still in the node
// file, and the next Open on that file (the next collector on the node)
// ships them, each once.
func TestLeftoversShipOnTheNextStart(t *testing.T) {
	harness.Require(t)
	if harness.External() {
		t.Skip("needs a local server to stop")
	}
	srv := harness.Server(t)
	dsn := migrated(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	o, err := Open(ctx, Options{Path: path, Remote: openRemote(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	t.Cleanup(func() { _ = srv.Restart(context.Background()) }) // other tests share it
	rows := minuteRows(30)
	if err := o.Write(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = o.Drain(dctx)
	if want := fmt.Sprintf("cannot ship %d pending rows", len(rows)); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Drain with ClickHouse down: %v, want an error with %q and the file", err, want)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	o, err = Open(ctx, Options{Path: path, Remote: openRemote(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if n := len(remoteRows(t, dsn)); n != len(rows) {
			return fmt.Errorf("ClickHouse holds %d of %d rows", n, len(rows))
		}
		return nil
	})
	checkExactlyOnce(t, remoteRows(t, dsn), rows)
}

// Without a cluster ledger there is nothing to drain: rows stay in the
// node file.
func TestDrainWithoutClusterLedger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	o, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rows := minuteRows(3)
	if err := o.Write(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(ctx, path, filestore.FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	if err := st.Rows(ctx, time.Time{}, time.Time{}, func(attribution.Row) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(rows) {
		t.Errorf("node file holds %d rows, want %d", n, len(rows))
	}
}
