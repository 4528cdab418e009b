package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/tenancy"
)

var harness *chtest.Harness

func TestMain(m *testing.M) {
	harness = chtest.Setup()
	code := m.Run()
	harness.Close()
	os.Exit(code)
}

// openTest migrates a fresh database and opens a Store on it.
func openTest(t testing.TB) (*Store, ledger.DSN) {
	t.Helper()
	dsn := mustDSN(t, harness.DSN(t))
	ctx := context.Background()
	if err := Migrate(ctx, dsn, ""); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := Open(ctx, dsn, Options{RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn
}

func mustDSN(t testing.TB, raw string) ledger.DSN {
	t.Helper()
	d, err := ledger.ParseDSN(raw)
	if err != nil {
		t.Fatalf("ParseDSN(%q): %v", raw, err)
	}
	return d
}

// fleet generates ledger rows for nodes x gpus over n intervals of 60 s from
// start. Every number is a multiple of 1/64 below 2^20, so any order of
// summation is exact and totals can be compared with ==.
func fleet(seed uint64, nodes, gpus, n int, start time.Time) []attribution.Row {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dy := func(max int) float64 { return float64(rng.IntN(max*64)) / 64 }
	teams := []string{"ml", "search", "ads"}
	var rows []attribution.Row
	for i := 0; i < n; i++ {
		is := start.Add(time.Duration(i) * time.Minute)
		ie := is.Add(time.Minute)
		for nd := 0; nd < nodes; nd++ {
			node := fmt.Sprintf("node-%02d", nd)
			for g := 0; g < gpus; g++ {
				uuid := fmt.Sprintf("GPU-%02d-%02d", nd, g)
				model := []string{"A100-SXM4-80GB", "H100-80GB-HBM3"}[g%2]
				base := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: is, IntervalEnd: ie, Node: node, GPUUUID: uuid,
					GPUModel: model, SliceID: uuid, SharingMode: string(tenancy.Exclusive), Method: attribution.MethodMeasured}
				for c := 0; c < 2; c++ {
					r := base
					team := teams[(nd+g+c)%len(teams)]
					r.Kind, r.Namespace, r.Team = attribution.KindContainer, team+"-ns", team
					r.SliceID = fmt.Sprintf("%s::%d", uuid, c)
					r.SharingMode = string(tenancy.Timeslicing)
					r.Pod, r.PodUID, r.Container = fmt.Sprintf("pod-%d", c), fmt.Sprintf("uid-%s-%d", uuid, c), "main"
					r.AllocatedGPUSeconds, r.UsedGPUSeconds = 30, dy(30)
					r.MemoryMiBSeconds, r.EnergyJoules = dy(1<<14), dy(1<<10)
					rows = append(rows, r)
				}
				for _, k := range []attribution.Kind{attribution.KindUnallocated, attribution.KindIdle, attribution.KindUnattributed} {
					r := base
					r.Kind = k
					r.SharingMode = string(tenancy.Timeslicing)
					r.EnergyJoules = dy(100)
					if k == attribution.KindUnallocated {
						r.AllocatedGPUSeconds = 0
					} else {
						r.UsedGPUSeconds = dy(10)
					}
					rows = append(rows, r)
				}
			}
		}
	}
	return rows
}

// sortRows orders rows as Rows promises, by a comparison written here.
func sortRows(rows []attribution.Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.IntervalStart.Equal(b.IntervalStart) {
			return a.IntervalStart.Before(b.IntervalStart)
		}
		for _, p := range [][2]string{{a.Node, b.Node}, {a.GPUUUID, b.GPUUUID}, {a.SliceID, b.SliceID},
			{a.PodUID, b.PodUID}, {a.Container, b.Container}, {string(a.Kind), string(b.Kind)}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
}

// refKey and reference compute expected aggregates straight from rows.
type refKey struct {
	bucket                             int64 // unix start of the bucket, 0 for none
	team, namespace, model, mode, kind string
}

type refSum struct {
	alloc, used, mem, energy float64
	rows                     int64
}

func reference(rows []attribution.Row, from, to time.Time, label func(time.Time) time.Time) map[refKey]refSum {
	out := map[refKey]refSum{}
	for _, r := range rows {
		if r.IntervalStart.Before(from) || !r.IntervalStart.Before(to) {
			continue
		}
		var b int64
		if label != nil {
			b = label(r.IntervalStart).Unix()
		}
		k := refKey{b, r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind)}
		s := out[k]
		s.alloc += r.AllocatedGPUSeconds
		s.used += r.UsedGPUSeconds
		s.mem += r.MemoryMiBSeconds
		s.energy += r.EnergyJoules
		s.rows++
		out[k] = s
	}
	return out
}

func fromAggregates(aggs []ledger.Aggregate) map[refKey]refSum {
	out := map[refKey]refSum{}
	for _, a := range aggs {
		var b int64
		if !a.BucketStart.IsZero() {
			b = a.BucketStart.Unix()
		}
		k := refKey{b, a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind)}
		s := out[k]
		s.alloc += a.AllocatedSeconds
		s.used += a.UsedSeconds
		s.mem += a.MemoryMiBSeconds
		s.energy += a.EnergyJoules
		s.rows += a.Rows
		out[k] = s
	}
	return out
}

func compareSums(t *testing.T, what string, got, want map[refKey]refSum) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d groups, want %d", what, len(got), len(want))
	}
	bad := 0
	for k, w := range want {
		if g := got[k]; g != w {
			if bad++; bad <= 5 {
				t.Errorf("%s: group %+v = %+v, want %+v", what, k, g, w)
			}
		}
	}
}

func appendAll(t testing.TB, s *Store, rows []attribution.Row, batch int) {
	t.Helper()
	for i := 0; i < len(rows); i += batch {
		end := min(i+batch, len(rows))
		if err := s.Append(context.Background(), rows[i:end], nil); err != nil {
			t.Fatalf("Append rows %d-%d: %v", i, end, err)
		}
	}
}
