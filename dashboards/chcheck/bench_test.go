package chcheck_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/dashprices"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/dashboards/chcheck"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// The benchmark fleet: 100 GPUs for a month at 1-minute ledger rows (the
// collector's interval): 50 exclusive GPUs, 20 MIG GPUs with three slices,
// 20 time-sliced GPUs with two tenants and 10 MPS GPUs with two; 60 A100,
// 30 H100 and 10 L4; 230 pods of 20 teams in 40 namespaces, every pod
// running the whole month; a seventh of each MIG GPU never allocated: 290
// rows a minute, 12.5 million rows, and 37 findings a day.
const benchGPUs = 100

// benchRowsPerMinute is what benchRows writes each minute.
const benchRowsPerMinute = 290

func benchFleet() []gpu {
	var out []gpu
	pod := 0
	next := func(share, busy float64) tenant {
		pod++
		return tenant{team: fmt.Sprintf("team-%02d", pod%20), ns: fmt.Sprintf("ns-%02d", pod%40), pod: fmt.Sprintf("pod-%03d", pod),
			share: share, busy: busy, hours: [2]int{0, 24}}
	}
	for i := 0; i < benchGPUs; i++ {
		g := gpu{node: fmt.Sprintf("node-%02d", i/8), uuid: fmt.Sprintf("GPU-%03d", i)}
		switch {
		case i < 60:
			g.model = "A100-SXM4-80GB"
		case i < 90:
			g.model = "H100-SXM5-80GB"
		default:
			g.model = "L4"
		}
		switch {
		case i < 50:
			g.mode, g.tenants = "exclusive", []tenant{next(1, 0.7)}
		case i < 70:
			// One slice in seven never allocated: capacity to share out.
			g.mode, g.tenants = "mig", []tenant{next(3.0/7, 0.5), next(2.0/7, 0.3), next(1.0/7, 0.9)}
		case i < 90:
			g.mode, g.tenants = "timeslicing", []tenant{next(0.5, 0.4), next(0.5, 0.6)}
		default:
			g.mode, g.tenants = "mps", []tenant{next(0.5, 0.8), next(0.5, 0.2)}
		}
		out = append(out, g)
	}
	return out
}

// benchRows are one minute's rows: each GPU's containers and its idle row
// (the fleet is fully allocated, nothing is unattributed).
func benchRows(fleet []gpu, ts time.Time) []attribution.Row {
	rows := make([]attribution.Row, 0, 270)
	for _, g := range fleet {
		base := attribution.Row{IntervalStart: ts, IntervalEnd: ts.Add(time.Minute), Node: g.node, GPUUUID: g.uuid,
			GPUModel: g.model, SharingMode: g.mode, Method: "measured"}
		used, alloc := 0.0, 0.0
		for i, tn := range g.tenants {
			r := base
			r.Kind, r.Namespace, r.Pod, r.Team, r.Container = attribution.KindContainer, tn.ns, tn.pod, tn.team, "main"
			r.PodUID, r.SliceID = "uid-"+tn.pod, fmt.Sprintf("%s::%d", g.uuid, i)
			r.AllocatedGPUSeconds, r.UsedGPUSeconds = 60*tn.share, 60*tn.share*tn.busy
			r.EnergyJoules = 300 * r.UsedGPUSeconds
			used += r.UsedGPUSeconds
			alloc += r.AllocatedGPUSeconds
			rows = append(rows, r)
		}
		if alloc < 60 {
			r := base
			r.Kind, r.SliceID, r.AllocatedGPUSeconds = attribution.KindUnallocated, g.uuid, 60-alloc
			rows = append(rows, r)
		}
		r := base
		r.Kind, r.SliceID, r.UsedGPUSeconds, r.EnergyJoules = attribution.KindIdle, g.uuid, 60-used, 60*(60-used)
		rows = append(rows, r)
	}
	return rows
}

// benchFindings are a day's findings: one of each kind per node.
func benchFindings(day time.Time) []attribution.Finding {
	var out []attribution.Finding
	for n := 0; n < benchGPUs/8; n++ {
		node := fmt.Sprintf("node-%02d", n)
		for i, kind := range []string{attribution.FindingIdleAllocation, attribution.FindingNoisyNeighbour, attribution.FindingStarved} {
			start := day.Add(time.Duration(n+i) * time.Hour)
			out = append(out, attribution.Finding{Start: start, End: start.Add(time.Hour), Kind: kind, Node: node,
				GPUUUID: fmt.Sprintf("GPU-%03d", n*8), Namespace: fmt.Sprintf("ns-%02d", n), Pod: fmt.Sprintf("pod-%03d", n), Container: "main",
				Team: fmt.Sprintf("team-%02d", n%20)})
		}
	}
	return out
}

var (
	benchOnce sync.Once
	benchDB   *ledgerDB
	benchErr  error
)

// fleetMonth fills (or, on a kept server, finds) the benchmark month.
func fleetMonth(b *testing.B) *ledgerDB {
	b.Helper()
	harness.Require(b)
	benchOnce.Do(func() {
		benchDB, benchErr = newLedgerDB(b, func(ctx context.Context, s *clickhouse.Store) error {
			book := shippedBook(b, "allocation", "shared", false)
			if err := s.WritePrices(ctx, dashprices.Of(book), time.Now()); err != nil {
				return err
			}
			// A server kept with GPULEDGER_TEST_CLICKHOUSE_DSN may hold the
			// month from an earlier run.
			have, err := s.Aggregate(ctx, ledger.AggregateQuery{From: monthStart, To: monthEnd, Bucket: ledger.BucketNone})
			if err != nil {
				return err
			}
			var rows0 int64
			for _, a := range have {
				rows0 += a.Rows
			}
			if rows0 == int64(benchRowsPerMinute)*int64(monthEnd.Sub(monthStart)/time.Minute) {
				b.Logf("benchmark month: %d rows already there", rows0)
				return nil
			}
			start := time.Now()
			fleet := benchFleet()
			rows := 0
			for h := monthStart; h.Before(monthEnd); h = h.Add(6 * time.Hour) {
				var batch []attribution.Row
				for ts := h; ts.Before(h.Add(6 * time.Hour)); ts = ts.Add(time.Minute) {
					batch = append(batch, benchRows(fleet, ts)...)
				}
				var findings []attribution.Finding
				if h.Hour() == 0 {
					findings = benchFindings(h)
				}
				if err := s.Append(ctx, batch, findings); err != nil {
					return err
				}
				rows += len(batch)
			}
			appended := time.Since(start)
			if err := s.RebuildRollups(ctx, monthStart, monthEnd); err != nil {
				return err
			}
			b.Logf("benchmark month: %d rows appended in %s, rollups rebuilt in %s", rows, appended.Round(time.Second), (time.Since(start) - appended).Round(time.Second))
			return nil
		})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDB
}

// BenchmarkDashboardQueries runs each panel's and variable's query of the
// ClickHouse chargeback over the 100-GPU month, variables at All (the
// widest query): target under 1 s each.
//
//	go test -run '^$' -bench DashboardQueries -benchtime 5x ./dashboards/chcheck
func BenchmarkDashboardQueries(b *testing.B) {
	db := fleetMonth(b)
	bd := loadBoard(b)
	type q struct{ name, sql string }
	var qs []q
	for _, p := range bd.Panels {
		qs = append(qs, q{p.Title, p.Targets[0].RawSQL})
	}
	for _, v := range bd.Templating.List {
		if v.Name != "datasource" {
			qs = append(qs, q{"variable " + v.Name, bd.variableSQL(b, v.Name)})
		}
	}
	for _, x := range qs {
		sql, err := expandAll(x.sql)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(x.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, rows, err := db.query(sql); err != nil || len(rows) == 0 {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
	}
}

func expandAll(sql string) (string, error) {
	return chcheck.Expand(sql, month(), all())
}
