package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/ledger/outbox"
	"github.com/gpuledger/gpuledger/ledger/outbox/shipper"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// A simulated run commits every row to the node's embedded ledger and ships
// it to a real ClickHouse server that is SIGKILLed for a third of the run
// and then restarted: every row arrives once, and ClickHouse's totals equal
// the embedded ledger's to the last GPU-second.
func TestOutboxShipsThroughClickHouseOutage(t *testing.T) {
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	srv := h.Server(t)
	ctx := context.Background()

	d, err := ledger.ParseDSN(h.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, d, ""); err != nil {
		t.Fatal(err)
	}
	remote, err := clickhouse.Open(ctx, d, clickhouse.Options{MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	local, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{Sinks: []string{outbox.Sink}})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ship := shipper.New(local, remote, shipper.Options{Sink: outbox.Sink, BatchSize: 50, RollupDelay: -1})

	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "churn-pidreuse", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var failedWhileDown, shippedWhileDown int
	down := false
	progress := func(done, total time.Duration) {
		switch {
		case !down && done == total/3:
			srv.Kill()
			down = true
		case down && done == 2*total/3:
			if err := srv.Restart(ctx); err != nil {
				t.Fatalf("restart ClickHouse: %v", err)
			}
			down = false
		}
		if done%(30*time.Second) != 0 {
			return
		}
		n, err := ship.ShipOnce(ctx)
		if down && err != nil {
			failedWhileDown++
		}
		if down && n > 0 {
			shippedWhileDown++
		}
	}
	if err := simulateScenario(ctx, sc, simOptions{TeamLabel: "team", Progress: progress}, []collector.Sink{local}, nil); err != nil {
		t.Fatal(err)
	}
	if failedWhileDown == 0 || shippedWhileDown != 0 {
		t.Fatalf("the outage was not seen: %d failed rounds, %d rounds shipped while ClickHouse was down", failedWhileDown, shippedWhileDown)
	}
	for range 100 {
		n, err := ship.ShipOnce(ctx)
		if err != nil {
			t.Fatalf("shipping after the outage: %v", err)
		}
		if n == 0 {
			break
		}
	}
	from, to := sc.Start.Add(-time.Hour), sc.Start.Add(sc.Duration+time.Hour)
	if err := remote.RebuildRollups(ctx, from, to); err != nil {
		t.Fatal(err)
	}

	if l, r := countRows(t, local, from, to), countRows(t, remote, from, to); l != r || l == 0 {
		t.Errorf("rows: embedded %d, ClickHouse %d", l, r)
	}
	for _, bucket := range []string{ledger.BucketNone, ledger.BucketHour} {
		want := aggregates(t, local, from, to, bucket)
		got := aggregates(t, remote, from, to, bucket)
		if len(want) != len(got) {
			t.Fatalf("%q buckets: embedded has %d groups, ClickHouse %d", bucket, len(want), len(got))
		}
		for k, w := range want {
			g := got[k]
			if math.Abs(g[0]-w[0]) > 1e-6 || math.Abs(g[1]-w[1]) > 1e-6 {
				t.Errorf("%q %s: ClickHouse allocated/used %v, embedded %v", bucket, k, g, w)
			}
		}
	}
}

func countRows(t *testing.T, st ledger.Store, from, to time.Time) int {
	t.Helper()
	n := 0
	if err := st.Rows(context.Background(), from, to, func(attribution.Row) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// aggregates keys a store's aggregates by their group; values are
// allocated and used seconds.
func aggregates(t *testing.T, st ledger.Store, from, to time.Time, bucket string) map[string][2]float64 {
	t.Helper()
	aggs, err := st.Aggregate(context.Background(), ledger.AggregateQuery{From: from, To: to, Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for _, a := range aggs {
		k := a.BucketStart.UTC().Format(time.RFC3339) + "|" + a.Team + "|" + a.Namespace + "|" + a.GPUModel + "|" + a.Mode + "|" + string(a.Kind)
		v := out[k]
		out[k] = [2]float64{v[0] + a.AllocatedSeconds, v[1] + a.UsedSeconds}
	}
	return out
}
