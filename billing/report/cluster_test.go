package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
)

// TestFleetBillIsItsClustersAdded: on random ledgers of two clusters
// whose nodes and GPUs have the same names, each cluster's bill is its
// own capacity priced at the book's rates and rounded once (expected
// from the generated GPUs, not from the report), the fleet's bill names
// both and totals their sum to the cent, every line names its cluster,
// and a cluster's lines add up to its total.
func TestFleetBillIsItsClustersAdded(t *testing.T) {
	ctx := context.Background()
	step := 5 * time.Minute
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(48 * time.Hour)
	for seed := int64(0); seed < 6; seed++ {
		rng := rand.New(rand.NewSource(seed))
		policy := []string{"allocation", "usage"}[rng.Intn(2)]
		idle := []string{"shared", "platform"}[rng.Intn(2)]
		b := randomBook(t, rng, policy, idle)
		b.Location = time.UTC // the period is whole UTC days
		names := []string{"east", "west"}
		var rows []attribution.Row
		want := map[string]int64{}
		for _, c := range names {
			gpus, tenants := randomFleet(rng, from, to, step)
			for _, r := range ledgerRows(gpus, tenants, step) {
				r.Cluster = c
				rows = append(rows, r)
			}
			want[c], _ = expectedTotal(t, b, capacitySeconds(gpus, step, from, to))
		}
		st := fileLedger(t, rows, nil)
		now := to.Add(time.Hour)
		fleet, err := BuildFleet(ctx, st, b, from, to, now, "")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if fleet.Total != want["east"]+want["west"] {
			t.Errorf("seed %d (%s, idle %s): fleet total %d, want %d + %d", seed, policy, idle, fleet.Total, want["east"], want["west"])
		}
		if len(fleet.Clusters) != 2 || fleet.Clusters[0] != (ClusterTotal{"east", want["east"]}) || fleet.Clusters[1] != (ClusterTotal{"west", want["west"]}) {
			t.Errorf("seed %d: clusters %+v, want east %d and west %d", seed, fleet.Clusters, want["east"], want["west"])
		}
		byLine := map[string]int64{}
		for _, l := range fleet.Lines {
			if l.Cluster != "east" && l.Cluster != "west" {
				t.Fatalf("seed %d: a %s line of the fleet bill names cluster %q", seed, l.Type, l.Cluster)
			}
			byLine[l.Cluster] += l.Amount
		}
		if byLine["east"] != want["east"] || byLine["west"] != want["west"] {
			t.Errorf("seed %d: lines add up to %v per cluster, want east %d and west %d", seed, byLine, want["east"], want["west"])
		}
		for _, c := range names {
			one, err := BuildFleet(ctx, st, b, from, to, now, c)
			if err != nil {
				t.Fatal(err)
			}
			if one.Total != want[c] || one.Cluster != c {
				t.Errorf("seed %d: cluster %s's own bill totals %d, want %d", seed, c, one.Total, want[c])
			}
		}
		// The finance CSV: a cluster column, and each cluster's amounts
		// add up to its total.
		var buf bytes.Buffer
		if err := WriteCSV(&buf, fleet); err != nil {
			t.Fatal(err)
		}
		recs := csvRecords(t, fleet)
		col, amount := -1, -1
		for i, h := range recs[0] {
			switch h {
			case "cluster":
				col = i
			case "amount":
				amount = i
			}
		}
		if col < 0 {
			t.Fatalf("seed %d: the finance CSV has no cluster column: %v", seed, recs[0])
		}
		minor := map[string]int64{}
		for _, rec := range recs[1:] {
			if len(rec) <= col || rec[0] == "" || rec[0][0] == '#' {
				continue
			}
			f, err := strconv.ParseFloat(rec[amount], 64)
			if err != nil {
				continue // a comment record
			}
			minor[rec[col]] += int64(f*float64(pow10(b.Currency.MinorUnit)) + 0.5*sign(f))
		}
		if minor["east"] != want["east"] || minor["west"] != want["west"] {
			t.Errorf("seed %d: CSV amounts per cluster %v, want east %d and west %d", seed, minor, want["east"], want["west"])
		}
	}
}

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

// TestSingleClusterBillUnchanged: a ledger of one cluster (a
// single-cluster install) is billed as before: no cluster column, no
// split, the same total as Build.
func TestSingleClusterBillUnchanged(t *testing.T) {
	ctx := context.Background()
	step := 5 * time.Minute
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(24 * time.Hour)
	rng := rand.New(rand.NewSource(7))
	gpus, tenants := randomFleet(rng, from, to, step)
	b := bookFor(t, "USD", "UTC", "allocation", "shared", map[string]string{"L4": "1.25"}, "2")
	st := fileLedger(t, ledgerRows(gpus, tenants, step), nil)
	fleet, err := BuildFleet(ctx, st, b, from, to, to, "")
	if err != nil {
		t.Fatal(err)
	}
	plain := mustBuild(t, st, b, from, to)
	want, _ := expectedTotal(t, b, capacitySeconds(gpus, step, from, to))
	if fleet.Total != want || plain.Total != want || fleet.HasClusters() {
		t.Fatalf("total %d (Build %d), want %d; names clusters: %v", fleet.Total, plain.Total, want, fleet.HasClusters())
	}
	if recs := csvRecords(t, fleet); recs[0][len(recs[0])-1] == "cluster" {
		t.Fatal("a single-cluster bill's CSV has a cluster column")
	}
}

// TestRenamedClusterNoted: a cluster renamed mid-month keeps its rows
// under each name; the fleet's bill lists both names and says they are
// one cluster.
func TestRenamedClusterNoted(t *testing.T) {
	ctx := context.Background()
	step := 5 * time.Minute
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	mid, to := from.Add(12*time.Hour), from.Add(24*time.Hour)
	g := []gpu{{node: "n1", uuid: "GPU-1", model: "L4", mode: "exclusive", from: from, to: to}}
	var rows []attribution.Row
	for _, r := range ledgerRows(g, nil, step) {
		r.Cluster = "blue"
		if !r.IntervalStart.Before(mid) {
			r.Cluster = "green"
		}
		rows = append(rows, r)
	}
	st := fileLedger(t, rows, nil)
	if err := ledger.ClaimClusterName(ctx, st, "blue", "uid-7", from); err != nil {
		t.Fatal(err)
	}
	if err := ledger.ClaimClusterName(ctx, st, "green", "uid-7", mid); err != nil {
		t.Fatal(err)
	}
	b := bookFor(t, "USD", "UTC", "allocation", "shared", map[string]string{"L4": "1"}, "1")
	r, err := BuildFleet(ctx, st, b, from, to, to, "")
	if err != nil {
		t.Fatal(err)
	}
	// 12 hours of one GPU at 1 USD each under each name.
	if len(r.Clusters) != 2 || r.Clusters[0] != (ClusterTotal{"blue", 1200}) || r.Clusters[1] != (ClusterTotal{"green", 1200}) {
		t.Fatalf("clusters %+v, want blue and green at 12.00 each", r.Clusters)
	}
	if len(r.ClusterNotes) != 1 || !strings.Contains(r.ClusterNotes[0], "uid-7") ||
		!strings.Contains(r.ClusterNotes[0], "blue (from 2026-03-01T00:00:00Z), then green (from 2026-03-01T12:00:00Z)") {
		t.Fatalf("notes %q, want one naming uid-7 as blue then green", r.ClusterNotes)
	}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(j.String(), `"cluster_notes"`) {
		t.Fatal("the JSON has no cluster_notes")
	}
}

// TestFleetQuotaOfTwoClusters: both clusters have a ResourceQuota of one
// name for team ml, 2 GPUs in one and 4 in the other: the fleet's quota
// section counts both (6 GPUs over the day, 144 quota-hours), neither
// replacing the other.
func TestFleetQuotaOfTwoClusters(t *testing.T) {
	ctx := context.Background()
	step := 5 * time.Minute
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(24 * time.Hour)
	g := []gpu{{node: "n1", uuid: "GPU-1", model: "L4", mode: "exclusive", from: from, to: to}}
	var rows []attribution.Row
	for _, c := range []string{"east", "west"} {
		for _, r := range ledgerRows(g, nil, step) {
			r.Cluster = c
			rows = append(rows, r)
		}
	}
	st := fileLedger(t, rows, nil)
	e := quota.Entry{Key: quota.Key{Source: quota.SourceResourceQuota, Object: "ml/gpu", Resource: "gpu"}, Team: "ml", Milli: 2000}
	e2 := e
	e2.Milli = 4000
	if err := st.AppendQuota(ctx, []quota.Change{{Cluster: "east", At: from, Entry: e}, {Cluster: "west", At: from, Entry: e2}}); err != nil {
		t.Fatal(err)
	}
	b := bookFor(t, "USD", "UTC", "allocation", "shared", map[string]string{"L4": "1"}, "1")
	r, err := BuildFleet(ctx, st, b, from, to, to, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Quota == nil || len(r.Quota.Rows) != 1 || r.Quota.Rows[0].QuotaHours.Cmp(big.NewRat(144, 1)) != 0 {
		t.Fatalf("fleet quota %+v, want ml's 144 quota-hours (2 + 4 GPUs for 24 hours)", r.Quota)
	}
}

// TestFleetFOCUSPerDevice: the per-device FOCUS file of a fleet of two
// clusters with the same node names: every row names its cluster in
// SubAccountId, each cluster's rows add up to its own bill's total, and
// are split over its own GPUs only (west's GPUs are named W-...).
func TestFleetFOCUSPerDevice(t *testing.T) {
	ctx := context.Background()
	step := 5 * time.Minute
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(24 * time.Hour)
	var rows []attribution.Row
	want := map[string]int64{}
	b := bookFor(t, "USD", "UTC", "allocation", "shared", map[string]string{"L4": "1.25", "A100-SXM4-80GB": "3"}, "2")
	for _, c := range []string{"east", "west"} {
		// The same fleet in both: the same teams, models and modes, so
		// the two clusters' lines have the same keys.
		gpus, tenants := randomFleet(rand.New(rand.NewSource(11)), from, to, step)
		if c == "west" {
			for i := range gpus {
				gpus[i].uuid = "W-" + gpus[i].uuid
			}
		}
		for _, r := range ledgerRows(gpus, tenants, step) {
			r.Cluster = c
			rows = append(rows, r)
		}
		want[c], _ = expectedTotal(t, b, capacitySeconds(gpus, step, from, to))
	}
	st := fileLedger(t, rows, nil)
	r, err := BuildFleet(ctx, st, b, from, to, to, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := LoadDevices(ctx, st, r); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteFOCUS(&buf, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if _, ok := col["SubAccountId"]; !ok {
		t.Fatalf("no SubAccountId column: %v", recs[0])
	}
	got := map[string]int64{}
	for _, rec := range recs[1:] {
		f, err := strconv.ParseFloat(rec[col["BilledCost"]], 64)
		if err != nil {
			t.Fatal(err)
		}
		sub := rec[col["SubAccountId"]]
		got[sub] += int64(f*100 + 0.5*sign(f))
		if res := rec[col["ResourceId"]]; strings.Contains(res, "W-GPU") != (sub == "west") && strings.Contains(res, "GPU") {
			t.Errorf("a row of %s is split to resource %s", sub, res)
		}
	}
	if len(got) != 2 || got["east"] != want["east"] || got["west"] != want["west"] {
		t.Fatalf("BilledCost per SubAccountId %v, want east %d and west %d", got, want["east"], want["west"])
	}
}
