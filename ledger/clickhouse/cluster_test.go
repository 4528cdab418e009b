package clickhouse

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/tenancy"
)

// TestClusterExactlyOnce runs the --clickhouse-cluster schema on a real
// two-shard cluster (two servers and ZooKeeper, started here): migrate twice,
// write through the Distributed tables from one node with a replayed
// stretch, and read from the other node. Rows must be spread over both
// shards, and every aggregate, from raw rows and from the rollups, must
// equal the sums computed straight from the generated rows: a replay lands
// on the same shard (the shard key is deterministic) and collapses there.
func TestClusterExactlyOnce(t *testing.T) {
	if harness.External() {
		t.Skip("the cluster test starts its own servers; GPULEDGER_TEST_CLICKHOUSE_DSN names a single server")
	}
	ctx := context.Background()
	c := chtest.StartClusterT(t)
	dsn := func(n int) ledger.DSN { return mustDSN(t, c.Nodes[n].DSN("ledger")) }
	// A database at schema 2 holding rows (before the MIG profile): the
	// upgrade alters the replicated tables and recreates the Distributed
	// ones on both hosts, and the rows stay.
	if err := migrateTo(ctx, dsn(0), chtest.ClusterName, 2); err != nil {
		t.Fatalf("migrate to 2: %v", err)
	}
	old := fleet(5, 2, 1, 3, time.Date(2025, 3, 31, 22, 0, 0, 0, time.UTC))
	insertSchema2Rows(t, dsn(0), old).Close()
	for i := 0; i < 2; i++ {
		if err := Migrate(ctx, dsn(0), chtest.ClusterName); err != nil {
			t.Fatalf("Migrate (run %d): %v", i+1, err)
		}
	}
	open := func(n int, cluster string) *Store {
		s, err := Open(ctx, dsn(n), Options{Cluster: cluster, RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("Open node %d: %v", n+1, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, reader := open(0, chtest.ClusterName), open(1, chtest.ClusterName)
	sortRows(old)
	if got := collectRows(t, reader, old[0].IntervalStart, old[len(old)-1].IntervalEnd); !reflect.DeepEqual(got, old) {
		t.Fatalf("schema-2 rows read through the other node after the upgrade: %d rows, want %d", len(got), len(old))
	}
	mig := old[0]
	mig.SliceID, mig.MIGProfile, mig.SharingMode = "MIG-22222222-3333-4444-5555-666666666666", "2g.20gb", string(tenancy.MIG)
	appendAll(t, writer, []attribution.Row{mig}, 1)
	if got := collectRows(t, reader, mig.IntervalStart, mig.IntervalStart.Add(time.Second)); !slices.Contains(got, mig) {
		t.Fatalf("a MIG row written on node 1 reads back on node 2 as %+v", got)
	}

	start := time.Date(2026, 3, 31, 22, 0, 0, 0, time.UTC) // spans a month boundary
	end := start.Add(4 * time.Hour)
	rows := fleet(11, 4, 2, int(end.Sub(start)/time.Minute), start)
	appendAll(t, writer, rows, 700)
	appendAll(t, writer, rows[:len(rows)/3], 500) // a replay, cut differently

	// Each shard holds part of the rows in its local table.
	for n := range c.Nodes {
		local := open(n, "")
		var cnt uint64
		q := fmt.Sprintf("SELECT count() FROM %s.%s_local FINAL", local.db, tableRows)
		if err := local.query(ctx, "count local rows", q, func(rs driver.Rows) error { return rs.Scan(&cnt) }); err != nil {
			t.Fatal(err)
		}
		if cnt == 0 || cnt >= uint64(len(rows)) {
			t.Errorf("shard %d holds %d of %d rows, want a part of them", n+1, cnt, len(rows))
		}
	}

	hour := func(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }
	month := func(t time.Time) time.Time {
		u := t.UTC()
		return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	check := func(stage string) {
		for _, q := range []struct {
			bucket string
			label  func(time.Time) time.Time
		}{{ledger.BucketHour, hour}, {ledger.BucketMonth, month}} {
			got, err := reader.Aggregate(ctx, ledger.AggregateQuery{From: start, To: end, Bucket: q.bucket})
			if err != nil {
				t.Fatalf("%s: Aggregate %s: %v", stage, q.bucket, err)
			}
			compareSums(t, stage+" "+q.bucket, fromAggregates(got), reference(rows, start, end, q.label))
		}
	}
	check("raw rows")
	if err := writer.RebuildRollups(ctx, start, end); err != nil {
		t.Fatalf("RebuildRollups: %v", err)
	}
	appendAll(t, writer, rows[len(rows)/2:], 900) // a replay after the rollups
	if err := writer.RebuildRollups(ctx, start, end); err != nil {
		t.Fatalf("RebuildRollups: %v", err)
	}
	check("rollups")

	// Quota changes written through one node and replayed read once,
	// in order, through the other (migration 4 on the cluster).
	h := quotaHistory()
	for range 2 {
		if err := writer.AppendQuota(ctx, h); err != nil {
			t.Fatalf("AppendQuota: %v", err)
		}
	}
	want := []quota.Change{h[1], h[0], h[5], h[6], h[2], h[11], h[10], h[9], h[8]}
	if got := readQuota(t, reader, qday(11, 1, 0), qday(12, 1, 0)); !reflect.DeepEqual(got, want) {
		t.Errorf("quota changes of November read through the other node:\n got %+v\nwant %+v", got, want)
	}

	// Node labels written through one node and replayed read once
	// through the other (migration 5 on the cluster).
	nh := nodeLabelHistory()
	for range 2 {
		if err := writer.AppendNodeLabels(ctx, nh); err != nil {
			t.Fatalf("AppendNodeLabels: %v", err)
		}
	}
	if got, want := readLabels(t, reader, regionKey, qday(12, 1, 0)), map[string]string{"a": "us-east-1", "b": "ap-south-1", "c": "eu-north-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("node labels read through the other node: %v, want %v", got, want)
	}
}
