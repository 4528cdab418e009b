package clickhouse

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

// TestMigrateVersion7KeysByCluster: a database at schema 7 (before the
// cluster) holding rows migrates to 8 by copying every keyed table; the
// rows read as the default cluster's, and a second cluster's rows with
// the same node, GPU, slice, pod and interval are kept beside them, never
// collapsed into them, in the raw rows and in the rollups. Running the
// migration again changes nothing.
func TestMigrateVersion7KeysByCluster(t *testing.T) {
	harness.Require(t)
	ctx := context.Background()
	dsn := mustDSN(t, harness.DSN(t))
	if err := migrateTo(ctx, dsn, "", 2); err != nil {
		t.Fatalf("migrate to 2: %v", err)
	}
	old := fleet(7, 2, 2, 90, t0) // 90 minutes: whole hours for the rollups
	insertSchema2Rows(t, dsn, old).Close()
	if err := migrateTo(ctx, dsn, "", 7); err != nil {
		t.Fatalf("migrate to 7: %v", err)
	}
	for i := range 2 {
		if err := Migrate(ctx, dsn, ""); err != nil {
			t.Fatalf("Migrate (run %d) to 8: %v", i+1, err)
		}
	}
	s, err := Open(ctx, dsn, Options{RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	end := t0.Add(90 * time.Minute)
	got := collectRows(t, s, t0, end)
	if len(got) != len(old) {
		t.Fatalf("%d rows after migration, want %d", len(got), len(old))
	}
	for _, r := range got {
		if r.Cluster != attribution.DefaultCluster {
			t.Fatalf("a row stored before clusters reads as cluster %q", r.Cluster)
		}
	}

	east := slices.Clone(old)
	var wantDefault, wantEast float64
	for i := range east {
		east[i].Cluster = "east"
		east[i].AllocatedGPUSeconds = old[i].AllocatedGPUSeconds * 2
		wantDefault += old[i].AllocatedGPUSeconds
		wantEast += east[i].AllocatedGPUSeconds
	}
	if err := s.Append(ctx, east, []attribution.Finding{
		{Start: t0, End: t0.Add(time.Minute), Kind: attribution.FindingNodeLeft, Node: old[0].Node},
		{Start: t0, End: t0.Add(time.Minute), Kind: attribution.FindingNodeLeft, Cluster: "east", Node: old[0].Node},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.RebuildRollups(ctx, t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := len(collectRows(t, s, t0, end)); n != 2*len(old) {
		t.Fatalf("%d rows after the second cluster's append, want %d", n, 2*len(old))
	}
	var findings []attribution.Finding
	if err := s.Findings(ctx, t0, end, func(f attribution.Finding) error { findings = append(findings, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(findings) != 2 || findings[0].Cluster != attribution.DefaultCluster || findings[1].Cluster != "east" {
		t.Fatalf("findings %+v, want one per cluster", findings)
	}
	sum := func(q ledger.AggregateQuery) (float64, []ledger.Aggregate) {
		t.Helper()
		as, err := s.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var v float64
		for _, a := range as {
			v += a.AllocatedSeconds
		}
		return v, as
	}
	// Bucketed by hour: the first hour from its rollup, the half hour raw.
	q := ledger.AggregateQuery{From: t0, To: end, Location: time.UTC, Bucket: ledger.BucketHour}
	fleetSum, fleetAs := sum(q)
	q.Cluster = "east"
	eastSum, _ := sum(q)
	q.Cluster = attribution.DefaultCluster
	defSum, _ := sum(q)
	q.Cluster, q.ByCluster = "", true
	splitSum, splitAs := sum(q)
	if fleetSum != wantDefault+wantEast || eastSum != wantEast || defSum != wantDefault || splitSum != fleetSum {
		t.Fatalf("allocated: fleet %v, east %v, default %v, split %v; want %v, %v, %v, %v",
			fleetSum, eastSum, defSum, splitSum, wantDefault+wantEast, wantEast, wantDefault, wantDefault+wantEast)
	}
	if len(splitAs) != 2*len(fleetAs) {
		t.Fatalf("%d split groups, want twice the fleet's %d", len(splitAs), len(fleetAs))
	}
	cov, err := s.Coverage(ctx, t0, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(cov.Devices) != 8 { // 2 nodes x 2 GPUs in each cluster
		t.Fatalf("%d devices in the coverage, want 8", len(cov.Devices))
	}

	at := t0.Add(time.Hour)
	if err := s.AppendNodeLabels(ctx, []nodelabel.Change{
		{Node: "n1", Key: "region", Value: "eu", At: at},
		{Cluster: "east", Node: "n1", Key: "region", Value: "us", At: at},
	}); err != nil {
		t.Fatal(err)
	}
	labels, err := s.NodeLabels(ctx, "region", at)
	if err != nil {
		t.Fatal(err)
	}
	if labels["n1"] != "eu" || labels["east/n1"] != "us" || len(labels) != 2 {
		t.Fatalf("node labels %v, want n1=eu and east/n1=us", labels)
	}
	e := quota.Entry{Key: quota.Key{Source: quota.SourceResourceQuota, Object: "ml/gpu", Resource: "nvidia.com/gpu"}, Team: "ml", Milli: 2000, LimitMilli: 2000}
	e2 := e
	e2.Milli = 4000
	if err := s.AppendQuota(ctx, []quota.Change{{At: at, Entry: e}, {Cluster: "east", At: at, Entry: e2}}); err != nil {
		t.Fatal(err)
	}
	var qs []quota.Change
	if err := s.QuotaChanges(ctx, at, at.Add(time.Hour), func(c quota.Change) error { qs = append(qs, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Cluster != attribution.DefaultCluster || qs[0].Milli != 2000 || qs[1].Cluster != "east" || qs[1].Milli != 4000 {
		t.Fatalf("quota changes %+v, want the default cluster's 2000 and east's 4000", qs)
	}
	if err := s.Append(ctx, []attribution.Row{{Cluster: "East", IntervalStart: t0, IntervalEnd: t0.Add(time.Minute)}}, nil); err == nil {
		t.Fatal("a row of cluster \"East\" was accepted")
	}
}

// TestClaimClusterNameClickHouse: as the embedded ledger, the first
// identity owns the name and a second is refused naming both.
func TestClaimClusterNameClickHouse(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := ledger.ClaimClusterName(ctx, s, "east", "uid-1", t0); err != nil {
		t.Fatal(err)
	}
	if err := ledger.ClaimClusterName(ctx, s, "east", "uid-1", t0.Add(time.Hour)); err != nil {
		t.Fatalf("the same cluster again: %v", err)
	}
	err := ledger.ClaimClusterName(ctx, s, "east", "uid-2", t0.Add(time.Hour))
	if !errors.Is(err, ledger.ErrClusterClaimed) || !strings.Contains(err.Error(), `"uid-1"`) || !strings.Contains(err.Error(), `"uid-2"`) {
		t.Fatalf("a second cluster claiming east: %v", err)
	}
	if err := ledger.ClaimClusterName(ctx, s, "east-2", "uid-1", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	ids, err := s.ClusterIdentities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0].Cluster != "east" || ids[1].Cluster != "east-2" || ids[1].ID != "uid-1" || !ids[1].FirstSeen.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("identities %+v", ids)
	}
}
