package clickhouse

import (
	"context"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// TestMigrateVersion2AddsProfile: a database at schema 2 (before rows had
// a MIG profile) holding a row migrates to 3; the row reads back with no
// profile, new rows keep theirs, and a migration cut off after its ALTER
// but before its record runs again without failing.
func TestMigrateVersion2AddsProfile(t *testing.T) {
	harness.Require(t)
	ctx := context.Background()
	dsn := mustDSN(t, harness.DSN(t))
	if err := migrateTo(ctx, dsn, "", 2); err != nil {
		t.Fatalf("migrate to 2: %v", err)
	}
	old := fleet(3, 1, 1, 1, t0)[0]
	conn := insertSchema2Rows(t, dsn, []attribution.Row{old})
	defer conn.Close()
	// The ALTER of migration 3 ran, its record did not.
	s := &Store{conn: conn, opts: Options{RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond}, db: dsn.Database}
	s.opts.defaults()
	s.log = s.opts.Logger
	if err := s.addColumn(ctx, "", migrations[2].columns[0]); err != nil {
		t.Fatalf("add the column: %v", err)
	}
	for i := range 2 {
		if err := Migrate(ctx, dsn, ""); err != nil {
			t.Fatalf("Migrate (run %d) after an interrupted migration 3: %v", i+1, err)
		}
	}
	st, err := Open(ctx, dsn, Options{RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after migration: %v", err)
	}
	defer st.Close()
	mig := old
	mig.IntervalStart, mig.IntervalEnd = old.IntervalEnd, old.IntervalEnd.Add(time.Minute)
	mig.SliceID, mig.MIGProfile, mig.SharingMode = "MIG-11111111-2222-3333-4444-555555555555", "1g.10gb", string(tenancy.MIG)
	if err := st.Append(ctx, []attribution.Row{mig}, nil); err != nil {
		t.Fatal(err)
	}
	got := collectRows(t, st, time.Time{}, time.Time{})
	if len(got) != 2 || got[0] != old || got[1] != mig {
		t.Fatalf("rows after migration:\n got %+v\nwant %+v and %+v", got, old, mig)
	}
}

// insertSchema2Rows writes rows with the columns of schema 2 (no MIG
// profile), as a gpuledger before migration 3 did, synchronously through
// Distributed tables in cluster mode; it returns the open connection.
func insertSchema2Rows(t *testing.T, dsn ledger.DSN, rows []attribution.Row) driver.Conn {
	t.Helper()
	ctx := ch.Context(context.Background(), ch.WithSettings(ch.Settings{"insert_distributed_sync": 1}))
	conn, _, err := connect(ctx, dsn, Options{}, dsn.Database)
	if err != nil {
		t.Fatal(err)
	}
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+qualified(dsn.Database, tableRows)+` (interval_start, interval_start_ns,
	interval_end, interval_end_ns, node, gpu_uuid, gpu_model, slice_id, sharing_mode, kind, namespace, pod, pod_uid, container,
	team, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, method, version)`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.IntervalStart.Nanosecond() != 0 || r.IntervalEnd.Nanosecond() != 0 {
			t.Fatalf("insertSchema2Rows takes whole-second rows, got %s", r.IntervalStart)
		}
		if err := b.Append(r.IntervalStart, uint32(0), r.IntervalEnd, uint32(0), r.Node, r.GPUUUID, r.GPUModel,
			r.SliceID, r.SharingMode, string(r.Kind), r.Namespace, r.Pod, r.PodUID, r.Container, r.Team,
			r.AllocatedGPUSeconds, r.UsedGPUSeconds, r.MemoryMiBSeconds, r.EnergyJoules, r.Method, uint64(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatalf("insert schema-2 rows: %v", err)
	}
	return conn
}
