package clickhouse

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestContainerRowsAgree stores the same rows (with a replayed copy) in
// ClickHouse and in the embedded ledger: both stores' ContainerRows must
// give the same deduplicated container rows, across several read chunks.
func TestContainerRowsAgree(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	rows := fleet(5, 1, 2, 3*60, t0)
	appendAll(t, ch, rows, 1000)
	appendAll(t, ch, rows[:500], 500) // a replay must not double rows
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	ch.opts.RowsChunk = 700 // several chunks
	from, to := t0.Add(17*time.Minute), t0.Add(2*time.Hour+41*time.Minute)
	read := func(st ledger.Store) []attribution.Row {
		var out []attribution.Row
		if err := st.ContainerRows(ctx, from, to, func(r attribution.Row) error {
			out = append(out, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(out, func(a, b attribution.Row) int {
			if c := a.IntervalStart.Compare(b.IntervalStart); c != 0 {
				return c
			}
			return strings.Compare(a.Node+a.GPUUUID+a.SliceID+a.PodUID+a.Container, b.Node+b.GPUUUID+b.SliceID+b.PodUID+b.Container)
		})
		return out
	}
	want, got := read(file), read(ch)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("ClickHouse gave %d container rows, the embedded store %d", len(got), len(want))
	}
	var energy float64
	for i := range want {
		energy += want[i].EnergyJoules
		if !got[i].IntervalStart.Equal(want[i].IntervalStart) || !got[i].IntervalEnd.Equal(want[i].IntervalEnd) {
			t.Fatalf("row %d: times differ", i)
		}
		got[i].IntervalStart, got[i].IntervalEnd = want[i].IntervalStart, want[i].IntervalEnd
		if got[i] != want[i] || got[i].Kind != attribution.KindContainer {
			t.Fatalf("row %d:\n ClickHouse %+v\n embedded   %+v", i, got[i], want[i])
		}
	}
	if energy == 0 {
		t.Fatal("no container row carried its energy: a reader summing them (allocation per container) would price none")
	}
	stop := errors.New("stop")
	if err := ch.ContainerRows(ctx, from, to, func(attribution.Row) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("callback error came back as %v", err)
	}
}
