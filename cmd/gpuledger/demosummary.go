package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
)

// teamSummary is a sink that totals GPU-hours per team, and the hours no
// container was charged for, for the terminal summary of demo and simulate.
type teamSummary struct {
	teams    map[string]*teamTotals
	findings map[string]int
	// uncharged is the capacity outside containers by ledger kind:
	// unallocated (allocated column), idle and unattributed (used column).
	uncharged map[attribution.Kind]float64
}

type teamTotals struct{ allocated, used float64 }

func newTeamSummary() *teamSummary {
	return &teamSummary{teams: map[string]*teamTotals{}, findings: map[string]int{}, uncharged: map[attribution.Kind]float64{}}
}

func (s *teamSummary) Write(_ context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	for _, r := range rows {
		if r.Kind != attribution.KindContainer {
			s.uncharged[r.Kind] += r.AllocatedGPUSeconds + r.UsedGPUSeconds
			continue
		}
		t := s.teams[r.Team]
		if t == nil {
			t = &teamTotals{}
			s.teams[r.Team] = t
		}
		t.allocated += r.AllocatedGPUSeconds
		t.used += r.UsedGPUSeconds
	}
	for _, f := range fs {
		s.findings[f.Team+"\x00"+f.Kind]++
	}
	return nil
}

// Column headings and legend of the summary, in the project's vocabulary
// (docs/report.md): held = allocated to a container; "held but unused",
// "never allocated" and "idle device time" are three different things.
const (
	summaryHeader = "team\theld GPU-h\tused GPU-h\tused/held\theld-but-unused episodes\tnoisy-neighbour episodes\tstarved episodes\tcost %s\t"
	summaryLegend = `
held GPU-h: allocated to the team's containers; used GPU-h: the time they kept a GPU busy
  (time-slicing and MPS lend time others leave unused, so used can exceed held: used/held
  above 100% is borrowed time, the CSV's borrowed_gpu_hours).
episodes: detector findings on the team's containers: held but unused = a GPU held but
  barely used; noisy neighbour = slowed others on a shared GPU; starved = slowed by one.
cost: what the chargeback bills the team (chargeback.csv: its charge and idle_share lines).
`
)

// print writes the per-team table, with each team's cost from rep (the
// chargeback of the same period), the capacity outside containers and,
// for a partial period, the report's note of what it covers.
func (s *teamSummary) print(w io.Writer, rep *report.Report) {
	cost := map[string]int64{}
	for _, t := range rep.Teams {
		cost[t.Team] = t.Total
	}
	names := make([]string, 0, len(s.teams))
	for n := range s.teams {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, summaryHeader+"\n", rep.Book.Currency.Code)
	for _, n := range names {
		t := s.teams[n]
		eff := "-"
		if t.allocated > 0 {
			eff = fmt.Sprintf("%.0f%%", 100*t.used/t.allocated)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t%d\t%d\t%d\t%s\t\n", n, t.allocated/3600, t.used/3600, eff,
			s.findings[n+"\x00"+attribution.FindingIdleAllocation], s.findings[n+"\x00"+attribution.FindingNoisyNeighbour],
			s.findings[n+"\x00"+attribution.FindingStarved], rep.Money(cost[n]))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntotal billed: %s %s (teams %s, platform line %s, rounding %s)\n", rep.Money(rep.Total), rep.Book.Currency.Code,
		rep.Money(rep.Total-rep.Platform-rep.Rounding), rep.Money(rep.Platform), rep.Money(rep.Rounding))
	fmt.Fprintf(w, "capacity outside containers: never allocated %.3f GPU-h; idle device time %.3f GPU-h; unattributed busy time %.3f GPU-h\n",
		s.uncharged[attribution.KindUnallocated]/3600, s.uncharged[attribution.KindIdle]/3600, s.uncharged[attribution.KindUnattributed]/3600)
	// What the chargeback lacks (an interrupted backfill: the nodes that
	// stopped sending, the gap GPU-hours) in the report's own words.
	if note := rep.PartialNote(); note != "" {
		fmt.Fprintf(w, "%s\n", note)
	}
	fmt.Fprint(w, summaryLegend)
}
