package chcheck_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// The simulated month: October 2026, 15-minute ledger intervals, three
// nodes' GPUs under every sharing shape the dashboards break down, with
// awkward numbers (sevenths, thirds) so that sums are not exact in
// binary, and teams whose names hold a quote and a backslash.
var (
	monthStart = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	monthEnd   = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
)

const (
	step     = 15 * time.Minute
	stepSecs = 900.0
	// quoteTeam and quoteNS are labels an attacker might choose.
	quoteTeam = `o'brien\`
	quoteNS   = `q'ns`
)

// tenant is one container holding a share of a GPU for part of each day.
type tenant struct {
	team, ns, pod string
	share         float64 // of the GPU
	busy          float64 // fraction of its share it uses
	hours         [2]int  // UTC hours of the day it runs, [from, to)
	skipDays      [2]int  // days of the month it is away, [from, to)
}

type gpu struct {
	node, uuid, model, mode string
	tenants                 []tenant
}

func simGPUs() []gpu {
	return []gpu{
		{"node-a", "GPU-a0", "A100-SXM4-80GB", "exclusive", []tenant{
			{"ml", "train", "trainer-0", 1, 0.61, [2]int{0, 24}, [2]int{20, 23}},
		}},
		{"node-a", "GPU-a1", "A100-SXM4-80GB", "timeslicing", []tenant{
			{"ml", "notebooks", "nb-1", 1.0 / 3, 0.1, [2]int{8, 18}, [2]int{0, 0}},
			{"search", "index", "indexer", 1.0 / 3, 0.9, [2]int{0, 24}, [2]int{0, 0}},
			{quoteTeam, quoteNS, "odd-pod", 1.0 / 3, 0.37, [2]int{6, 22}, [2]int{5, 9}},
		}},
		{"node-b", "GPU-b0", "H100-SXM5-80GB", "mig", []tenant{
			{"search", "serve", "ranker", 3.0 / 7, 0.55, [2]int{0, 24}, [2]int{10, 13}},
			{"ads", "ctr", "ctr-model", 2.0 / 7, 0.21, [2]int{7, 19}, [2]int{10, 13}},
		}},
		{"node-b", "GPU-b1", "H100-SXM5-80GB", "mps", []tenant{
			{"ads", "ctr", "ctr-batch", 0.5, 0.83, [2]int{1, 5}, [2]int{0, 0}},
			{quoteTeam, quoteNS, "odd-pod-2", 0.5, 0.12, [2]int{0, 24}, [2]int{14, 30}},
		}},
		// A model the shipped price book does not list: the default rate.
		{"node-c", "GPU-c0", "L4", "exclusive", []tenant{
			{"ml", "train", "small-trainer", 1, 0.47, [2]int{9, 17}, [2]int{0, 0}},
		}},
	}
}

// simMonth writes the month's rows and findings, a day per Append.
func simMonth(ctx context.Context, t testing.TB, appendFn func(context.Context, []attribution.Row, []attribution.Finding) error) {
	t.Helper()
	for day := monthStart; day.Before(monthEnd); day = day.AddDate(0, 0, 1) {
		var rows []attribution.Row
		for ts := day; ts.Before(day.AddDate(0, 0, 1)); ts = ts.Add(step) {
			rows = append(rows, intervalRows(ts)...)
		}
		if err := appendFn(ctx, rows, dayFindings(day)); err != nil {
			t.Fatalf("append %s: %v", day.Format("2006-01-02"), err)
		}
	}
}

func active(tn tenant, ts time.Time) bool {
	d, h := ts.Day()-1, ts.Hour()
	if d >= tn.skipDays[0] && d < tn.skipDays[1] {
		return false
	}
	return h >= tn.hours[0] && h < tn.hours[1]
}

// intervalRows partitions each GPU's 900 s both ways: allocation
// (containers + unallocated) and usage (containers + unattributed + idle).
func intervalRows(ts time.Time) []attribution.Row {
	var out []attribution.Row
	for _, g := range simGPUs() {
		base := attribution.Row{IntervalStart: ts, IntervalEnd: ts.Add(step), Node: g.node, GPUUUID: g.uuid,
			GPUModel: g.model, SharingMode: g.mode, Method: "measured"}
		var alloc, used float64
		wobble := 1 + 0.1*math.Sin(float64(ts.Unix())/7919)
		for i, tn := range g.tenants {
			if !active(tn, ts) {
				continue
			}
			r := base
			r.Kind = attribution.KindContainer
			r.Namespace, r.Pod, r.PodUID, r.Container, r.Team = tn.ns, tn.pod, fmt.Sprintf("uid-%s-%d", g.uuid, i), "main", tn.team
			r.SliceID = fmt.Sprintf("%s::%d", g.uuid, i)
			r.AllocatedGPUSeconds = stepSecs * tn.share
			r.UsedGPUSeconds = math.Min(r.AllocatedGPUSeconds, stepSecs*tn.share*tn.busy*wobble)
			r.MemoryMiBSeconds = 1024 * stepSecs
			r.EnergyJoules = 250 * r.UsedGPUSeconds
			alloc += r.AllocatedGPUSeconds
			used += r.UsedGPUSeconds
			out = append(out, r)
		}
		if rest := stepSecs - alloc; rest > 1e-9 {
			r := base
			r.Kind, r.SliceID, r.AllocatedGPUSeconds = attribution.KindUnallocated, g.uuid, rest
			out = append(out, r)
		}
		unattr := 0.0
		if ts.Hour() == 3 {
			unattr = stepSecs / 9 // a host process now and then
		}
		if unattr > 0 {
			r := base
			r.Kind, r.SliceID, r.UsedGPUSeconds, r.EnergyJoules = attribution.KindUnattributed, g.uuid, unattr, 250*unattr
			out = append(out, r)
		}
		r := base
		r.Kind, r.SliceID, r.UsedGPUSeconds, r.EnergyJoules = attribution.KindIdle, g.uuid, stepSecs-used-unattr, 60*(stepSecs-used-unattr)
		out = append(out, r)
	}
	return out
}

func dayFindings(day time.Time) []attribution.Finding {
	if day.Day()%3 != 0 {
		return nil
	}
	return []attribution.Finding{
		{Start: day.Add(9 * time.Hour), End: day.Add(11 * time.Hour), Kind: attribution.FindingIdleAllocation,
			Node: "node-a", GPUUUID: "GPU-a1", Namespace: "notebooks", Pod: "nb-1", Container: "main", Team: "ml"},
		{Start: day.Add(2 * time.Hour), End: day.Add(3 * time.Hour), Kind: attribution.FindingNoisyNeighbour,
			Node: "node-b", GPUUUID: "GPU-b1", Namespace: "ctr", Pod: "ctr-batch", Container: "main", Team: "ads"},
		{Start: day.Add(2 * time.Hour), End: day.Add(3 * time.Hour), Kind: attribution.FindingStarved,
			Node: "node-b", GPUUUID: "GPU-b1", Namespace: quoteNS, Pod: "odd-pod-2", Container: "main", Team: quoteTeam, NoisyPod: "ctr/ctr-batch"},
	}
}
