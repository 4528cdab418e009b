package clickhouse

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestAggregateByDevice: ByDevice aggregates from ClickHouse equal the rows
// summed in Go per (day, group, GPU, slice, pod) exactly (the fleet's
// numbers are multiples of 1/64, so every order of summation gives the
// same), after some rows were rewritten with new values (the replacement
// must count once), and equal the embedded ledger's ByDevice aggregates
// of the same rows, in Los Angeles and UTC days.
func TestAggregateByDevice(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rows := fleet(7, 2, 2, 3*24*60, from)
	appendAll(t, ch, rows, 20000)
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	// Rewrite every 97th row with other values: both stores keep the new.
	var again []attribution.Row
	for i := 0; i < len(rows); i += 97 {
		r := rows[i]
		r.AllocatedGPUSeconds, r.UsedGPUSeconds = r.AllocatedGPUSeconds/2, 1
		rows[i] = r
		again = append(again, r)
	}
	appendAll(t, ch, again, 20000)
	if err := file.Append(ctx, again, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.RebuildRollups(ctx, from, from.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []*time.Location{time.UTC, la} {
		q := ledger.AggregateQuery{From: from.Add(5 * time.Hour), To: from.Add(53 * time.Hour), Location: loc, Bucket: ledger.BucketDay, ByDevice: true}
		got, err := ch.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		type key struct {
			day                                          string
			team, ns, model, mode, kind, gpu, slice, pod string
		}
		want := map[key]ledger.Aggregate{}
		for _, r := range rows {
			if r.IntervalStart.Before(q.From) || !r.IntervalStart.Before(q.To) {
				continue
			}
			k := key{r.IntervalStart.In(loc).Format("2006-01-02"), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind), r.GPUUUID, r.SliceID, r.Pod}
			a := want[k]
			a.AllocatedSeconds += r.AllocatedGPUSeconds
			a.UsedSeconds += r.UsedGPUSeconds
			a.MemoryMiBSeconds += r.MemoryMiBSeconds
			a.EnergyJoules += r.EnergyJoules
			a.Rows++
			want[k] = a
		}
		for _, a := range got {
			k := key{a.BucketStart.Format("2006-01-02"), a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind), a.GPUUUID, a.SliceID, a.Pod}
			w, ok := want[k]
			if !ok {
				t.Fatalf("%s: unexpected device group %+v", loc, k)
			}
			if a.AllocatedSeconds != w.AllocatedSeconds || a.UsedSeconds != w.UsedSeconds || a.MemoryMiBSeconds != w.MemoryMiBSeconds ||
				a.EnergyJoules != w.EnergyJoules || a.Rows != w.Rows {
				t.Fatalf("%s %+v: got %+v, want %+v", loc, k, a, w)
			}
			delete(want, k)
		}
		if len(want) > 0 {
			t.Fatalf("%s: %d device groups missing", loc, len(want))
		}
		emb, err := file.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, emb) {
			t.Fatalf("%s: ClickHouse and embedded ByDevice aggregates differ (%d vs %d groups)", loc, len(got), len(emb))
		}
	}
}
