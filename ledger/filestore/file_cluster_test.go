package filestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

// TestVersion10FileMigratesToClusters opens a ledger written by the
// gpuledger before clusters (schema 10: `gpuledger simulate --ledger` of
// testdata/v10/scenario.yaml, with its ledger.csv and flags.csv beside
// it) and checks that migration 11 kept every row and finding, read as
// the default cluster's, and that a second cluster's rows of the same
// node, GPU and interval are stored beside them, not over them.
func TestVersion10FileMigratesToClusters(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("testdata", "v10", "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatalf("open a schema-10 ledger: %v", err)
	}
	defer s.Close()
	var v int
	if err := s.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != FileSchemaVersion {
		t.Fatalf("user_version %d (%v), want %d", v, err, FileSchemaVersion)
	}
	var got bytes.Buffer
	if _, err := ledger.Export(ctx, s, time.Time{}, time.Time{}, "csv", &got, nil); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "v10", "ledger.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := sortedLines(got.String()), sortedLines(string(want)); !slices.Equal(g, w) {
		t.Fatalf("rows after migration differ from the v10 ledger.csv: %d lines, want %d", len(g), len(w))
	}
	var rows []attribution.Row
	if err := s.Rows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error {
		if r.Cluster != attribution.DefaultCluster {
			t.Fatalf("row stored before clusters reads as cluster %q, want %q", r.Cluster, attribution.DefaultCluster)
		}
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	nf := 0
	if err := s.Findings(ctx, time.Time{}, time.Time{}, func(f attribution.Finding) error {
		nf++
		if f.Cluster != attribution.DefaultCluster {
			t.Errorf("finding stored before clusters reads as cluster %q", f.Cluster)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if nf != 1 || len(rows) != 70 { // the simulation's log: rows=70 findings=1
		t.Fatalf("%d rows and %d findings after migration, want 70 and 1", len(rows), nf)
	}
	day := rows[0].IntervalStart.Truncate(24 * time.Hour)
	q := ledger.AggregateQuery{From: day, To: day.Add(24 * time.Hour), Location: time.UTC, Bucket: ledger.BucketDay}
	before, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}

	// The same rows again from a second cluster whose nodes and GPUs have
	// the same names: stored beside the first cluster's.
	other := slices.Clone(rows)
	for i := range other {
		other[i].Cluster = "east"
		other[i].AllocatedGPUSeconds *= 2
	}
	if err := s.Append(ctx, other, []attribution.Finding{{Start: day, End: day.Add(time.Minute), Kind: attribution.FindingNodeLeft,
		Cluster: "east", Node: rows[0].Node}}); err != nil {
		t.Fatal(err)
	}
	byCluster := map[string]int{}
	if err := s.Rows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error { byCluster[r.Cluster]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if byCluster[attribution.DefaultCluster] != 70 || byCluster["east"] != 70 {
		t.Fatalf("rows per cluster %v, want 70 each", byCluster)
	}
	fleet, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	qd := q
	qd.Cluster = attribution.DefaultCluster
	def, err := s.Aggregate(ctx, qd)
	if err != nil {
		t.Fatal(err)
	}
	qe := q
	qe.Cluster = "east"
	east, err := s.Aggregate(ctx, qe)
	if err != nil {
		t.Fatal(err)
	}
	qb := q
	qb.ByCluster = true
	split, err := s.Aggregate(ctx, qb)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(as []ledger.Aggregate) (alloc float64, rows int64) {
		for _, a := range as {
			alloc += a.AllocatedSeconds
			rows += a.Rows
		}
		return
	}
	var rowAlloc float64
	for _, r := range rows {
		rowAlloc += r.AllocatedGPUSeconds
	}
	ba, bn := sum(before)
	da, dn := sum(def)
	ea, en := sum(east)
	fa, fn := sum(fleet)
	sa, sn := sum(split)
	switch {
	case bn != 70 || dn != 70 || en != 70 || fn != 140 || sn != 140:
		t.Fatalf("rows: before %d, default %d, east %d, fleet %d, split %d; want 70, 70, 70, 140, 140", bn, dn, en, fn, sn)
	case !near(ba, rowAlloc) || !near(da, rowAlloc) || !near(ea, 2*rowAlloc) || !near(fa, 3*rowAlloc) || !near(sa, 3*rowAlloc):
		t.Fatalf("allocated: before %v, default %v, east %v, fleet %v, split %v; rows give %v (east twice that)", ba, da, ea, fa, sa, rowAlloc)
	case len(fleet) != len(before) || len(split) != 2*len(before):
		t.Fatalf("%d fleet groups and %d split ones, want %d and %d", len(fleet), len(split), len(before), 2*len(before))
	}
	for _, a := range fleet {
		if a.Cluster != "" {
			t.Fatalf("a fleet aggregate names cluster %q", a.Cluster)
		}
	}
	if _, err := s.Aggregate(ctx, ledger.AggregateQuery{From: day, To: day.Add(time.Hour), Cluster: "East!"}); err == nil {
		t.Fatal("an invalid cluster filter was accepted")
	}

	// Per node: the same node name in two clusters is two nodes.
	qn := q
	qn.ByNode = true
	nodes, err := s.Aggregate(ctx, qn)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range nodes {
		seen[a.Cluster+"/"+a.Node] = true
	}
	if !seen[attribution.DefaultCluster+"/"+rows[0].Node] || !seen["east/"+rows[0].Node] || len(seen) != 2 {
		t.Fatalf("nodes %v, want %s in each cluster", seen, rows[0].Node)
	}
	cov, err := s.Coverage(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cov.Devices) == 0 || len(cov.Devices)%2 != 0 || cov.Devices[0].Cluster != attribution.DefaultCluster || cov.Devices[len(cov.Devices)-1].Cluster != "east" {
		t.Fatalf("coverage devices %+v, want each GPU once per cluster", cov.Devices)
	}

	// Node labels and quota changes of one name in two clusters.
	at := day.Add(time.Hour)
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
}

// TestAppendRefusesBadClusterNames: a cluster name goes into keys, URLs
// and metric labels, so a row naming a bad one is refused, naming it.
func TestAppendRefusesBadClusterNames(t *testing.T) {
	ctx := context.Background()
	s, err := OpenFile(ctx, filepath.Join(t.TempDir(), "l.db"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"East", "a_b", "-a", "a-", string(make([]byte, 64)), "x/y"} {
		r := attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Cluster: name, Node: "n", GPUUUID: "g", Kind: attribution.KindIdle}
		if err := s.Append(ctx, []attribution.Row{r}, nil); err == nil {
			t.Errorf("cluster %q accepted", name)
		}
	}
}

// TestClaimClusterName: the first identity to ship under a name owns
// it; another identity claiming the name is refused with both named; a
// cluster renamed keeps one identity under two names.
func TestClaimClusterName(t *testing.T) {
	ctx := context.Background()
	s, err := OpenFile(ctx, filepath.Join(t.TempDir(), "l.db"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t1 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	if err := ledger.ClaimClusterName(ctx, s, "east", "uid-1", t1); err != nil {
		t.Fatal(err)
	}
	if err := ledger.ClaimClusterName(ctx, s, "east", "uid-1", t1.Add(time.Hour)); err != nil {
		t.Fatalf("the same cluster again: %v", err)
	}
	err = ledger.ClaimClusterName(ctx, s, "east", "uid-2", t1.Add(time.Hour))
	if !errors.Is(err, ledger.ErrClusterClaimed) || !strings.Contains(err.Error(), `"uid-1"`) || !strings.Contains(err.Error(), `"uid-2"`) {
		t.Fatalf("a second cluster claiming east: %v, want an error naming uid-1 and uid-2", err)
	}
	if err := ledger.ClaimClusterName(ctx, s, "east-2", "uid-1", t1.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	ids, err := s.ClusterIdentities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.ClusterIdentity{{Cluster: "east", ID: "uid-1", FirstSeen: t1}, {Cluster: "east-2", ID: "uid-1", FirstSeen: t1.Add(2 * time.Hour)}}
	if !slices.Equal(ids, want) {
		t.Fatalf("identities %v, want %v", ids, want)
	}
	if r := ledger.RenamedClusters(ids); len(r["uid-1"]) != 2 {
		t.Fatalf("renamed %v, want uid-1 under two names", r)
	}
	for _, bad := range []string{"", "a b", strings.Repeat("x", 254)} {
		if err := ledger.ClaimClusterName(ctx, s, "west", bad, t1); err == nil {
			t.Errorf("identity %q accepted", bad)
		}
	}
}
