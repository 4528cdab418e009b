package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/big"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

var monthRates = map[string]string{"A100-SXM4-80GB": "2.40", "H100-SXM5-80GB": "4.123456789", "L4": "0.70"}

// monthFleet is a small mixed fleet over [from, to): a MIG A100 with three
// tenants, a time-sliced H100 with four replicas (one of them a noisy
// batch job), an MPS H100 and an L4 notebook GPU used in office hours.
// Daily tenants come and go every day; a few pods live the whole month.
func monthFleet(from, to time.Time, loc *time.Location) ([]gpu, []tenant) {
	gpus := []gpu{
		{node: "node-a", uuid: "GPU-a100", model: "A100-SXM4-80GB", mode: "mig", from: from, to: to},
		{node: "node-a", uuid: "GPU-h100-ts", model: "H100-SXM5-80GB", mode: "timeslicing", from: from, to: to, unattributed: 0.01},
		{node: "node-b", uuid: "GPU-h100-mps", model: "H100-SXM5-80GB", mode: "mps", from: from, to: to},
		{node: "node-b", uuid: "GPU-l4", model: "L4", mode: "exclusive", from: from, to: to},
	}
	tenants := []tenant{
		{gpu: 0, ns: "llm", pod: "serve-0", container: "server", team: "genai", share: 3.0 / 7, busy: 0.8, start: from, end: to},
		{gpu: 0, ns: "search", pod: "embed-0", container: "main", team: "search", share: 2.0 / 7, busy: 0.35, start: from, end: to},
		{gpu: 1, ns: "batch", pod: "backfill", container: "job", team: "data", share: 0.25, busy: 1.5, start: from, end: to},
		{gpu: 2, ns: "ads", pod: "ranker", container: "server", team: "ads", share: 0.5, busy: 0.6, start: from, end: to},
	}
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		y, m, d := day.In(loc).Date()
		at := func(h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, loc) }
		tenants = append(tenants,
			tenant{gpu: 0, ns: "search", pod: "query-" + day.Format("0102"), container: "main", team: "search", share: 1.0 / 7, busy: 0.6, start: at(8), end: at(20)},
			tenant{gpu: 1, ns: "fraud", pod: "score-" + day.Format("0102"), container: "main", team: "fraud", share: 0.25, busy: 0.2, start: at(6), end: at(23)},
			tenant{gpu: 1, ns: "vision", pod: "detect-" + day.Format("0102"), container: "main", team: "vision", share: 0.25, busy: 0.5, start: at(0), end: at(12)},
			tenant{gpu: 2, ns: "research", pod: "trial-" + day.Format("0102"), container: "main", team: "research", share: 0.25, busy: 0.9, start: at(2), end: at(5)},
			tenant{gpu: 3, ns: "notebooks", pod: "jupyter-" + day.Format("0102"), container: "nb", team: "research", share: 1, busy: 0.03, start: at(9), end: at(18).Add(-17 * time.Second)},
		)
	}
	return gpus, tenants
}

func monthBook(t testing.TB, zone, policy, idle string) *pricebook.Book {
	return bookFor(t, "USD", zone, policy, idle, monthRates, "1.00")
}

// TestMonthReconcilesEveryPolicy: a month of a mixed fleet through the
// embedded store; for every policy and idle handling the CSV adds up to
// 4 GPUs x 744 h x their rates, to the cent:
//
//	A100 744 x 2.40 = 1785.60; H100 2 x 744 x 4.123456789 = 6135.703702...;
//	L4 744 x 0.70 = 520.80; total 8442.103702... -> 8442.10
func TestMonthReconcilesEveryPolicy(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	gpus, tenants := monthFleet(from, to, time.UTC)
	const step = 15 * time.Minute
	st := fileLedger(t, ledgerRows(gpus, tenants, step), nil)
	for _, policy := range []string{"allocation", "usage"} {
		for _, idle := range []string{"platform", "shared"} {
			b := monthBook(t, "UTC", policy, idle)
			f, e, err := Month("2026-01", b.Location)
			if err != nil {
				t.Fatal(err)
			}
			r := mustBuild(t, st, b, f, e)
			if got := r.Money(r.Total); got != "8442.10" {
				t.Errorf("%s/%s: total %s, want 8442.10", policy, idle, got)
			}
			checkReconciles(t, r, b, capacitySeconds(gpus, step, f, e))
			var buf bytes.Buffer
			if err := WriteCSV(&buf, r); err != nil {
				t.Fatal(err)
			}
			recs, _ := csv.NewReader(&buf).ReadAll()
			sum := new(big.Rat)
			for _, rec := range recs[1:] {
				x, _ := new(big.Rat).SetString(rec[12])
				sum.Add(sum, x)
			}
			if sum.FloatString(2) != "8442.10" {
				t.Errorf("%s/%s: CSV amounts add up to %s", policy, idle, sum.FloatString(2))
			}
		}
	}
}

// TestMonthIsTheSumOfItsDays: in Los Angeles, March 2026 (31 local days,
// one of them 23 hours long), each team's month lines are exactly the sum
// of its 31 daily reports' lines, hours and unrounded amounts alike, with
// idle shared; the rounded amounts differ by at most the rounding of the
// 31 days.
func TestMonthIsTheSumOfItsDays(t *testing.T) {
	la, _ := time.LoadLocation("America/Los_Angeles")
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, la), time.Date(2026, 4, 1, 0, 0, 0, 0, la)
	gpus, tenants := monthFleet(from, to, la)
	st := fileLedger(t, ledgerRows(gpus, tenants, 30*time.Minute), nil)
	for _, policy := range []string{"allocation", "usage"} {
		b := monthBook(t, "America/Los_Angeles", policy, "shared")
		month := mustBuild(t, st, b, from, to)
		type key struct {
			team string
			typ  LineType
		}
		sum := func(r *Report, into map[key][3]*big.Rat, amounts map[key]int64) {
			for _, l := range r.Lines {
				if l.Type == LineRounding {
					continue
				}
				k := key{l.Team + "|" + l.Namespace + "|" + l.GPUModel + "|" + l.SharingMode, l.Type}
				v := into[k]
				if v[0] == nil {
					v = [3]*big.Rat{new(big.Rat), new(big.Rat), new(big.Rat)}
				}
				v[0].Add(v[0], l.AllocatedHours)
				v[1].Add(v[1], l.UsedHours)
				v[2].Add(v[2], l.Exact)
				into[k] = v
				amounts[k] += l.Amount
			}
		}
		want, wantAmt := map[key][3]*big.Rat{}, map[key]int64{}
		sum(month, want, wantAmt)
		got, gotAmt := map[key][3]*big.Rat{}, map[key]int64{}
		days := 0
		for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
			day := mustBuild(t, st, b, d, d.AddDate(0, 0, 1))
			sum(day, got, gotAmt)
			days++
		}
		if days != 31 {
			t.Fatalf("%d days", days)
		}
		for k, w := range want {
			g := got[k]
			if g[0] == nil {
				t.Errorf("%s %v: in the month, in no day", policy, k)
				continue
			}
			for i, what := range []string{"allocated hours", "used hours", "exact amount"} {
				if g[i].Cmp(w[i]) != 0 {
					t.Errorf("%s %v %s: month %s, days add up to %s", policy, k, what, w[i].FloatString(12), g[i].FloatString(12))
				}
			}
			if d := gotAmt[k] - wantAmt[k]; d > int64(days) || d < -int64(days) {
				t.Errorf("%s %v: month %d cents, days %d", policy, k, wantAmt[k], gotAmt[k])
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d line keys in the days, %d in the month", policy, len(got), len(want))
		}
	}
}

// TestTeamLabelChangeMovesOnlyLaterUsage: one pod holds a whole A100 all
// March; its namespace's team label changes from "search" to "ads" at
// 2026-03-15T12:00Z. Rows carry the team of their time, so search pays
// 14.5 days (348 h) and ads 16.5 days (396 h); another pod is untouched.
func TestTeamLabelChangeMovesOnlyLaterUsage(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	switchAt := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	gpus := []gpu{
		{node: "n", uuid: "GPU-1", model: "A100-SXM4-80GB", mode: "exclusive", from: from, to: to},
		{node: "n", uuid: "GPU-2", model: "A100-SXM4-80GB", mode: "exclusive", from: from, to: to},
	}
	tenants := []tenant{
		{gpu: 0, ns: "shared-ns", pod: "mover", container: "c", team: "search", share: 1, busy: 0.5, start: from, end: to, teamFrom: switchAt, newTeam: "ads"},
		{gpu: 1, ns: "vision", pod: "stayer", container: "c", team: "vision", share: 1, busy: 0.5, start: from, end: to},
	}
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Hour), nil)
	b := monthBook(t, "UTC", "allocation", "platform")
	r := mustBuild(t, st, b, from, to)
	want := map[string]string{"search": "348.000000", "ads": "396.000000", "vision": "744.000000"}
	wantAmt := map[string]string{"search": "835.20", "ads": "950.40", "vision": "1785.60"}
	for _, tm := range r.Teams {
		if decimal(tm.AllocatedHours, 6) != want[tm.Team] || r.Money(tm.Total) != wantAmt[tm.Team] {
			t.Errorf("team %s: %s h, %s; want %s h, %s", tm.Team, decimal(tm.AllocatedHours, 6), r.Money(tm.Total), want[tm.Team], wantAmt[tm.Team])
		}
	}
	if len(r.Teams) != 3 {
		t.Errorf("teams %+v", r.Teams)
	}
	// Before the switch, a report has no ads at all.
	early := mustBuild(t, st, b, from, switchAt)
	for _, tm := range early.Teams {
		if tm.Team == "ads" {
			t.Errorf("ads charged before the label changed: %+v", tm)
		}
	}
}

// TestMonthInTimeZone: a GPU observed from February to April is charged
// exactly the local hours of each month: March in Los Angeles has 743
// (spring forward), November 721 (30 days and fall back), January 744;
// Lord Howe's half-hour DST makes its April 720.5 h.
func TestMonthInTimeZone(t *testing.T) {
	cases := []struct {
		zone, period string
		hours        string
	}{
		{"America/Los_Angeles", "2026-03", "743.000000"},
		{"America/Los_Angeles", "2026-11", "721.000000"},
		{"America/Los_Angeles", "2026-01", "744.000000"},
		{"UTC", "2026-03", "744.000000"},
		{"Europe/Berlin", "2026-03", "743.000000"},
		{"Australia/Lord_Howe", "2026-04", "720.500000"},
	}
	ctx := context.Background()
	for _, c := range cases {
		b := bookFor(t, "USD", c.zone, "allocation", "platform", map[string]string{"L4": "1.00"}, "1")
		from, to, err := Month(c.period, b.Location)
		if err != nil {
			t.Fatal(err)
		}
		g := gpu{node: "n", uuid: "GPU-1", model: "L4", mode: "exclusive",
			from: from.UTC().Truncate(24*time.Hour).AddDate(0, 0, -3), to: to.UTC().Truncate(24*time.Hour).AddDate(0, 0, 3)}
		src := &memSource{rows: ledgerRows([]gpu{g}, nil, 30*time.Minute)}
		r, err := Build(ctx, src, b, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Models) != 1 || decimal(r.Models[0].CapacityHours, 6) != c.hours {
			t.Errorf("%s %s: capacity %v h, want %s", c.zone, c.period, r.Models, c.hours)
			continue
		}
		if got, want := r.Money(r.Total), c.hours[:len(c.hours)-4]; got != want {
			t.Errorf("%s %s: total %s, want %s", c.zone, c.period, got, want)
		}
		if r.PeriodLabel() != c.period {
			t.Errorf("label %q", r.PeriodLabel())
		}
	}
}

func TestMonthBounds(t *testing.T) {
	la, _ := time.LoadLocation("America/Los_Angeles")
	f, e, err := Month("2026-03", la)
	if err != nil {
		t.Fatal(err)
	}
	if f.UTC().Format(time.RFC3339) != "2026-03-01T08:00:00Z" || e.UTC().Format(time.RFC3339) != "2026-04-01T07:00:00Z" {
		t.Errorf("March in LA = [%s, %s)", f.UTC(), e.UTC())
	}
	if e.Sub(f) != 743*time.Hour {
		t.Errorf("March in LA is %s", e.Sub(f))
	}
	for _, bad := range []string{"2026-13", "2026", "March", "2026-03-01"} {
		if _, _, err := Month(bad, la); err == nil {
			t.Errorf("Month(%q) accepted", bad)
		}
	}
	d, err := ParseBound("2026-03-08", la)
	if err != nil || d.UTC().Format(time.RFC3339) != "2026-03-08T08:00:00Z" {
		t.Errorf("ParseBound date = %s, %v", d.UTC(), err)
	}
	d, err = ParseBound("2026-03-08T12:00:00Z", la)
	if err != nil || !d.Equal(time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("ParseBound RFC 3339 = %s, %v", d, err)
	}
	if _, err := ParseBound("yesterday", la); err == nil {
		t.Error("ParseBound accepted yesterday")
	}
	// A zone whose midnight does not exist on DST day: the day starts at
	// the first instant of its date (Santiago springs forward at 24:00).
	scl, _ := time.LoadLocation("America/Santiago")
	d, _ = ParseBound("2026-09-06", scl)
	if d.In(scl).Format("2006-01-02") != "2026-09-06" || d.Add(-time.Nanosecond).In(scl).Format("2006-01-02") != "2026-09-05" {
		t.Errorf("Santiago DST day starts at %s", d.In(scl))
	}
}
