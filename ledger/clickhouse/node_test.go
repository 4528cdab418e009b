package clickhouse

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestAggregateByNode: ByNode aggregates from ClickHouse (the report's
// per-node carbon intensities) equal the rows' energy summed in Go per
// (day, group, node), and the embedded ledger's ByNode aggregates of the
// same rows, in Los Angeles and UTC days.
func TestAggregateByNode(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rows := fleet(7, 2, 2, 2*24*60, from)
	appendAll(t, ch, rows, 20000)
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []*time.Location{time.UTC, la} {
		q := ledger.AggregateQuery{From: from.Add(5 * time.Hour), To: from.Add(41 * time.Hour), Location: loc, Bucket: ledger.BucketDay, ByNode: true}
		got, err := ch.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		type key struct{ day, team, ns, model, mode, kind, node string }
		want := map[key]ledger.Aggregate{}
		nodes := map[string]bool{}
		for _, r := range rows {
			if r.IntervalStart.Before(q.From) || !r.IntervalStart.Before(q.To) {
				continue
			}
			nodes[r.Node] = true
			k := key{r.IntervalStart.In(loc).Format("2006-01-02"), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind), r.Node}
			a := want[k]
			a.EnergyJoules += r.EnergyJoules
			a.Rows++
			want[k] = a
		}
		if len(nodes) < 2 {
			t.Fatalf("the fleet has %d nodes: the test needs several", len(nodes))
		}
		for _, a := range got {
			k := key{a.BucketStart.Format("2006-01-02"), a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind), a.Node}
			w, ok := want[k]
			if !ok {
				t.Fatalf("%s: unexpected node group %+v", loc, k)
			}
			if a.EnergyJoules != w.EnergyJoules || a.Rows != w.Rows {
				t.Fatalf("%s %+v: got %v J in %d rows, want %v J in %d", loc, k, a.EnergyJoules, a.Rows, w.EnergyJoules, w.Rows)
			}
			delete(want, k)
		}
		if len(want) > 0 {
			t.Fatalf("%s: %d node groups missing", loc, len(want))
		}
		emb, err := file.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, emb) {
			t.Fatalf("%s: ClickHouse and embedded ByNode aggregates differ (%d vs %d groups):\n%+v\n%+v", loc, len(got), len(emb), got[:min(3, len(got))], emb[:min(3, len(emb))])
		}
	}
}
