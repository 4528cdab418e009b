package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/ledger/outbox"
	"github.com/gpuledger/gpuledger/ledger/outbox/shipper"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestTwoClustersShipIntoOneFleetLedger: two simulated clusters run the
// same scenario, so their nodes and GPUs have the same names, and ship
// through their nodes' outboxes into the two-shard ClickHouse cluster.
// Nothing collides: each cluster's rows are all there, its partitions
// close (every GPU's allocated and used seconds in each interval add up
// to the interval), its bill equals the bill of its own node file, and
// the fleet's bill is the two clusters' added. A third collector claiming
// one of the names with another identity is refused.
func TestTwoClustersShipIntoOneFleetLedger(t *testing.T) {
	ctx := context.Background()
	c := chtest.StartClusterT(t)
	d, err := ledger.ParseDSN(c.Nodes[0].DSN("fleet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := clickhouse.Migrate(ctx, d, chtest.ClusterName); err != nil {
		t.Fatal(err)
	}
	remote, err := clickhouse.Open(ctx, d, clickhouse.Options{Cluster: chtest.ClusterName})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "churn-pidreuse", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"east", "west"}
	locals := map[string]*filestore.FileStore{}
	for _, name := range names {
		if err := ledger.ClaimClusterName(ctx, remote, name, "sim-"+name, time.Now()); err != nil {
			t.Fatal(err)
		}
		local, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{Sinks: []string{outbox.Sink}})
		if err != nil {
			t.Fatal(err)
		}
		defer local.Close()
		locals[name] = local
		if err := simulateScenario(ctx, sc, simOptions{Cluster: name, TeamLabel: "team"}, []collector.Sink{local}, nil); err != nil {
			t.Fatal(err)
		}
		ship := shipper.New(local, remote, shipper.Options{Sink: outbox.Sink, BatchSize: 500, RollupDelay: -1})
		for range 1000 {
			n, err := ship.ShipOnce(ctx)
			if err != nil {
				t.Fatalf("shipping cluster %s: %v", name, err)
			}
			if n == 0 {
				break
			}
		}
	}
	if err := ledger.ClaimClusterName(ctx, remote, "east", "another-cluster", time.Now()); err == nil {
		t.Fatal("a second cluster claiming east was accepted")
	}
	from := sc.Start.Truncate(24 * time.Hour)
	to := from.Add(24 * time.Hour)
	if sc.Start.Add(sc.Duration).After(to) {
		t.Fatalf("the scenario runs past its first day (%s + %s)", sc.Start, sc.Duration)
	}
	if err := remote.RebuildRollups(ctx, from, to); err != nil {
		t.Fatal(err)
	}

	// Every cluster's rows, and only its, under its name; the partitions
	// of ledger.md close per (cluster, GPU, interval).
	type gi struct {
		cluster, gpu string
		start        time.Time
	}
	alloc, used, length := map[gi]float64{}, map[gi]float64{}, map[gi]float64{}
	per := map[string]int{}
	if err := remote.Rows(ctx, from, to, func(r attribution.Row) error {
		per[r.Cluster]++
		k := gi{r.Cluster, r.GPUUUID, r.IntervalStart}
		length[k] = r.IntervalEnd.Sub(r.IntervalStart).Seconds()
		switch r.Kind {
		case attribution.KindContainer:
			alloc[k] += r.AllocatedGPUSeconds
			used[k] += r.UsedGPUSeconds
		case attribution.KindUnallocated:
			alloc[k] += r.AllocatedGPUSeconds
		default:
			used[k] += r.UsedGPUSeconds
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if n := countRows(t, locals[name], from, to); n == 0 || per[name] != n {
			t.Errorf("cluster %s: %d rows in the fleet ledger, %d in its node file", name, per[name], n)
		}
	}
	if len(per) != len(names) {
		t.Errorf("rows of clusters %v, want only %v", per, names)
	}
	for k, l := range length {
		if math.Abs(alloc[k]-l) > 1e-6 || math.Abs(used[k]-l) > 1e-6 {
			t.Errorf("%s %s at %s: allocated %v and used %v seconds of a %v-second interval", k.cluster, k.gpu, k.start, alloc[k], used[k], l)
		}
	}

	book, err := pricebook.Parse("fleet-prices.yaml", []byte("currency: USD\npolicy: allocation\nidle: shared\ndefaultRate: 250\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := to.Add(time.Hour)
	fleet, err := report.BuildFleet(ctx, remote, book, from, to, now, "")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for i, name := range names {
		own, err := report.BuildFleet(ctx, remote, book, from, to, now, name)
		if err != nil {
			t.Fatal(err)
		}
		// Independent of the fleet ledger: the bill of the cluster's own
		// node file.
		file, err := report.BuildFleet(ctx, locals[name], book, from, to, now, "")
		if err != nil {
			t.Fatal(err)
		}
		if own.Total != file.Total || own.Total == 0 {
			t.Errorf("cluster %s's bill from the fleet ledger: %d, from its node file: %d", name, own.Total, file.Total)
		}
		if i < len(fleet.Clusters) && fleet.Clusters[i] != (report.ClusterTotal{Cluster: name, Total: own.Total}) {
			t.Errorf("the fleet's split %+v, want %s at %d", fleet.Clusters[i], name, own.Total)
		}
		sum += own.Total
	}
	if fleet.Total != sum || len(fleet.Clusters) != 2 {
		t.Errorf("fleet total %d over %d clusters, want the two clusters' %d", fleet.Total, len(fleet.Clusters), sum)
	}
	t.Logf("fleet %d = %v", fleet.Total, fleet.Clusters)
}
