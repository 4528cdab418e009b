package filestore

import (
	"context"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// TestAggregateByNode: per day, group and node, the energy and row counts
// are the rows' own, summed here; the groups' sums over nodes equal the
// plain aggregates'; ByNode with ByDevice is refused.
//
// Case "moved": GPU-0003 appears on two nodes (as a simulator reusing
// names would write it), which the GPU-to-node map cannot answer.
func TestAggregateByNode(t *testing.T) {
	for _, moved := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-node-per-gpu", true: "moved"}[moved], func(t *testing.T) { testAggregateByNode(t, moved) })
	}
}

func testAggregateByNode(t *testing.T, moved bool) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 7, 22, 0, 0, 0, loc) // a day edge in the zone, and the DST switch
	rows := fleetRows(start, 40*4, 15*time.Minute, 20)
	if moved {
		for i := range rows {
			if rows[i].GPUUUID == "GPU-0003" && rows[i].IntervalStart.After(start.Add(20*time.Hour)) {
				rows[i].Node = "node-elsewhere"
			}
		}
	}
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	from, to := start.Add(3*time.Hour), start.Add(36*time.Hour)
	type key struct{ day, team, ns, model, mode, kind, node string }
	want := map[key]float64{}
	count := map[key]int64{}
	for _, r := range rows {
		if r.IntervalStart.Before(from) || !r.IntervalStart.Before(to) {
			continue
		}
		k := key{r.IntervalStart.In(loc).Format("2006-01-02"), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind), r.Node}
		want[k] += r.EnergyJoules
		count[k]++
	}
	got, err := s.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: loc, Bucket: ledger.BucketDay, ByNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d groups, want %d", len(got), len(want))
	}
	for _, a := range got {
		k := key{a.BucketStart.Format("2006-01-02"), a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind), a.Node}
		if a.Node == "" || !near(a.EnergyJoules, want[k]) || a.Rows != count[k] {
			t.Errorf("%+v: %v J, %d rows; want %v J, %d rows", k, a.EnergyJoules, a.Rows, want[k], count[k])
		}
	}
	if _, err := s.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: loc, Bucket: ledger.BucketDay, ByNode: true, ByDevice: true}); err == nil {
		t.Error("ByNode with ByDevice accepted")
	}
}
