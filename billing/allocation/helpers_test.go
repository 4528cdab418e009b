package allocation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

var harness *chtest.Harness

func TestMain(m *testing.M) {
	harness = chtest.Setup()
	code := m.Run()
	harness.Close()
	os.Exit(code)
}

func parseBook(t testing.TB, y string) *pricebook.Book {
	t.Helper()
	b, err := pricebook.Parse("test-prices.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shared is the idle: shared book of most tests, in a zone with DST.
const shared = `currency: EUR
timezone: Europe/Berlin
policy: allocation
idle: shared
defaultRate: "1.10"
rates:
  A100: "2.30"
  H100: "4.123456789"
`

// fleetRows is a small mixed fleet, an hour a row: 3 nodes with 2 GPUs
// each, 3 teams, pods that come and go, time-slicing pairs, the rest of
// each GPU-hour unallocated or idle. Every number is a whole second or
// joule, so any order of sums is exact.
func fleetRows(seed uint64, from time.Time, hours int) []attribution.Row {
	r := rand.New(rand.NewPCG(seed, 7))
	teams := []string{"ads", "search", "ml"}
	var rows []attribution.Row
	for h := 0; h < hours; h++ {
		start := from.Add(time.Duration(h) * time.Hour)
		for n := 0; n < 3; n++ {
			for g := 0; g < 2; g++ {
				model, mode := "A100", "exclusive"
				if n == 2 {
					model = "H100"
				}
				if g == 1 {
					mode = "time-slicing"
				}
				node, uuid := fmt.Sprintf("node-%d", n), fmt.Sprintf("GPU-%d-%d", n, g)
				base := attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Hour), Node: node, GPUUUID: uuid,
					GPUModel: model, SliceID: uuid, SharingMode: mode}
				k := r.IntN(3) // containers this hour
				if mode == "exclusive" && k > 1 {
					k = 1
				}
				var alloc, used float64
				for c := 0; c < k; c++ {
					team := teams[(n+g+c+h/50)%3]
					pod := fmt.Sprintf("%s-train-%d-7c9f8d6b5-x%dz%d", team, (h/37+c)%4, g, c)
					row := base
					row.Kind = attribution.KindContainer
					row.Team, row.Namespace = team, team+"-ns"+fmt.Sprint(c%2)
					row.Pod, row.PodUID, row.Container = pod, "uid-"+pod, fmt.Sprintf("worker-%d", c)
					row.AllocatedGPUSeconds = float64(3600 / k)
					row.UsedGPUSeconds = float64(r.IntN(3600/k + 1))
					row.MemoryMiBSeconds = float64(r.IntN(40000)) * 3600
					row.EnergyJoules = float64(r.IntN(900000))
					alloc += row.AllocatedGPUSeconds
					used += row.UsedGPUSeconds
					rows = append(rows, row)
				}
				un := base
				un.Kind, un.AllocatedGPUSeconds = attribution.KindUnallocated, 3600-alloc
				idle := base
				idle.Kind, idle.UsedGPUSeconds, idle.EnergyJoules = attribution.KindIdle, 3600-used, float64(r.IntN(200000))
				rows = append(rows, un, idle)
			}
		}
	}
	return rows
}

// stores are the same rows in the embedded ledger and, when a
// ClickHouse server runs, in ClickHouse (rollups built).
func stores(t *testing.T, rows []attribution.Row) map[string]ledger.Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]ledger.Store{}
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	out["embedded"] = file
	if testing.Short() {
		return out
	}
	ch := clickhouseStore(t)
	if ch == nil {
		return out
	}
	for i := 0; i < len(rows); i += 20000 {
		if err := ch.Append(ctx, rows[i:min(i+20000, len(rows))], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.RebuildRollups(ctx, rows[0].IntervalStart, rows[len(rows)-1].IntervalEnd); err != nil {
		t.Fatal(err)
	}
	out["clickhouse"] = ch
	return out
}

// clickhouseStore is a fresh migrated ClickHouse ledger, or nil (the
// test then runs on the embedded one only, unless integration is
// required).
func clickhouseStore(t *testing.T) *clickhouse.Store {
	t.Helper()
	ctx := context.Background()
	var ch *clickhouse.Store
	t.Run("open-clickhouse", func(t *testing.T) {
		dsn, err := ledger.ParseDSN(harness.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := clickhouse.Migrate(ctx, dsn, ""); err != nil {
			t.Fatal(err)
		}
		if ch, err = clickhouse.Open(ctx, dsn, clickhouse.Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if ch != nil {
		t.Cleanup(func() { ch.Close() })
	}
	return ch
}
