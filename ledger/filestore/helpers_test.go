package filestore

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// openTemp opens a fresh ledger file in the test's temp dir.
func openTemp(t testing.TB, opts FileOptions) *FileStore {
	t.Helper()
	s, err := OpenFile(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), opts)
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fleetRows builds a deterministic ledger: every interval, every GPU gets two
// container rows and one row of each other kind, with awkward float values.
func fleetRows(start time.Time, intervals int, step time.Duration, gpus int) []attribution.Row {
	var rows []attribution.Row
	teams := []string{"ml", "vision", "search"}
	for k := 0; k < intervals; k++ {
		s := start.Add(time.Duration(k) * step).UTC()
		e := s.Add(step)
		d := step.Seconds()
		for g := 0; g < gpus; g++ {
			node := fmt.Sprintf("node-%d", g/8)
			uuid := fmt.Sprintf("GPU-%04d", g)
			model := []string{"A100-SXM4-80GB", "H100-80GB-HBM3"}[g%2]
			a1 := d * float64(1+(k+g)%3) / 7 // thirds and sevenths: inexact in binary
			a2 := d * 0.1 * float64(1+g%4)
			u1, u2 := a1*0.3, a2/3
			for c, x := range []struct{ alloc, used float64 }{{a1, u1}, {a2, u2}} {
				team := teams[(g+c)%len(teams)]
				rows = append(rows, attribution.Row{Cluster: attribution.DefaultCluster,
					IntervalStart: s, IntervalEnd: e, Node: node, GPUUUID: uuid, GPUModel: model,
					SliceID: fmt.Sprintf("%s::%d", uuid, c), SharingMode: string(tenancy.Timeslicing),
					Kind: attribution.KindContainer, Namespace: "ns-" + team, Pod: fmt.Sprintf("pod-%d-%d", g, c),
					PodUID: fmt.Sprintf("uid-%d-%d", g, c), Container: "main", Team: team,
					AllocatedGPUSeconds: x.alloc, UsedGPUSeconds: x.used,
					MemoryMiBSeconds: 1024.5 * d * float64(c+1), EnergyJoules: 250.125 * x.used,
					Method: attribution.MethodMeasured,
				})
			}
			base := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: s, IntervalEnd: e, Node: node, GPUUUID: uuid, GPUModel: model,
				SliceID: uuid, SharingMode: string(tenancy.Timeslicing), Method: attribution.MethodMeasured}
			un, ua, id := base, base, base
			un.Kind, un.AllocatedGPUSeconds = attribution.KindUnallocated, d-a1-a2
			ua.Kind, ua.UsedGPUSeconds = attribution.KindUnattributed, d/11
			id.Kind, id.UsedGPUSeconds, id.EnergyJoules = attribution.KindIdle, d-u1-u2-d/11, 60*(d-u1-u2-d/11)
			rows = append(rows, un, ua, id)
		}
	}
	return rows
}

// sortRows puts rows in the Store.Rows order, computed here independently.
func sortRows(rows []attribution.Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.IntervalStart.Equal(b.IntervalStart) {
			return a.IntervalStart.Before(b.IntervalStart)
		}
		ka := []string{a.Node, a.GPUUUID, a.SliceID, a.PodUID, a.Container, string(a.Kind)}
		kb := []string{b.Node, b.GPUUUID, b.SliceID, b.PodUID, b.Container, string(b.Kind)}
		for x := range ka {
			if ka[x] != kb[x] {
				return ka[x] < kb[x]
			}
		}
		return false
	})
}

func readAll(t testing.TB, s ledger.Store, from, to time.Time) []attribution.Row {
	t.Helper()
	var out []attribution.Row
	if err := s.Rows(context.Background(), from, to, func(r attribution.Row) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatalf("Rows: %v", err)
	}
	return out
}

func countRows(t testing.TB, s *FileStore) int64 {
	t.Helper()
	var n int64
	if err := s.r.QueryRow("SELECT count(*) FROM ledger_rows").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// undoSchema4and5 takes a file's tables back to schema 3: without the
// per-device rollup (4) and the rows' MIG profile (5). Tests that migrate
// older files start from it.
const undoSchema4and5 = "DROP TABLE ledger_rollup_device; ALTER TABLE ledger_rows DROP COLUMN mig_profile; "

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
