package allocation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// now is after November 2026: the month has ended.
var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// novemberRows are November 2026 in Berlin and the days around it.
func novemberRows() []attribution.Row {
	return fleetRows(1, time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC), 34*24)
}

func run(t *testing.T, st ledger.Store, params string) *Answer {
	t.Helper()
	book := parseBook(t, shared)
	v, err := url.ParseQuery(params)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(v, book.Location, now)
	if err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	a, err := Run(context.Background(), st, book, q, now)
	if err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	return a
}

// minor reads a decimal amount with two decimals (EUR) as cents.
func minor(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	i, f, _ := strings.Cut(s, ".")
	if len(f) != 2 {
		t.Fatalf("amount %q has not two decimals", n)
	}
	var x int64
	for _, c := range i + f {
		x = x*10 + int64(c-'0')
	}
	if neg {
		x = -x
	}
	return x
}

// TestMonthByTeamIsTheReportsJSON: a calendar month grouped by team is
// the report's JSON to the cent, on both ledgers: each team's charge, idle
// share and total, the platform and rounding lines, the total.
func TestMonthByTeamIsTheReportsJSON(t *testing.T) {
	for name, st := range stores(t, novemberRows()) {
		t.Run(name, func(t *testing.T) {
			book := parseBook(t, shared)
			from, to, err := report.Month("2026-11", book.Location)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := report.BuildDated(context.Background(), st, book, from, to, now)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := report.WriteJSON(&buf, rep); err != nil {
				t.Fatal(err)
			}
			var raw struct {
				Total    json.Number `json:"total"`
				Platform json.Number `json:"platform"`
				Rounding json.Number `json:"rounding"`
				Teams    []struct {
					Team      string      `json:"team"`
					Charge    json.Number `json:"charge"`
					IdleShare json.Number `json:"idle_share"`
					Total     json.Number `json:"total"`
				} `json:"teams"`
			}
			if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			if len(raw.Teams) != 3 {
				t.Fatalf("the report has %d teams, want the fleet's 3", len(raw.Teams))
			}
			a := run(t, st, "window=2026-11&aggregate=team")
			if len(a.Sets) != 1 {
				t.Fatalf("%d sets without a step", len(a.Sets))
			}
			got := map[string]Entry{}
			for _, e := range a.Sets[0].Entries {
				got[e.Name] = e
			}
			for _, tm := range raw.Teams {
				e, ok := got[tm.Team]
				if !ok {
					t.Fatalf("team %s missing: %v", tm.Team, a.Sets[0].Entries)
				}
				if e.Charge != tm.Charge || e.IdleShare != tm.IdleShare || e.Total != tm.Total {
					t.Errorf("team %s: charge %s idle share %s total %s, the report's %s %s %s", tm.Team, e.Charge, e.IdleShare, e.Total, tm.Charge, tm.IdleShare, tm.Total)
				}
			}
			if a.Total != raw.Total || a.Sets[0].Total != raw.Total {
				t.Errorf("total %s (set %s), the report's %s", a.Total, a.Sets[0].Total, raw.Total)
			}
			if raw.Platform != "0.00" && got[Platform].Total != raw.Platform {
				t.Errorf("platform %s, the report's %s", got[Platform].Total, raw.Platform)
			}
			if raw.Rounding != "0.00" && got[Rounding].Total != raw.Rounding {
				t.Errorf("rounding %s, the report's %s", got[Rounding].Total, raw.Rounding)
			}
			if a.Window.Partial || a.Window.DataStart != "2026-11-01T00:00:00+01:00" || a.Window.DataEnd != "2026-12-01T00:00:00+01:00" {
				t.Errorf("window %+v: want the whole month, not partial", a.Window)
			}
		})
	}
}

// TestGroupingsAddUpToTheReport is the property: over random windows,
// groupings and steps, each set's entries add up to the set's total, the
// set's total is report.Build's over the step, and the window's total is
// report.Build's over the window, whatever the grouping.
func TestGroupingsAddUpToTheReport(t *testing.T) {
	sts := stores(t, novemberRows())
	book := parseBook(t, shared)
	r := rand.New(rand.NewPCG(42, 1))
	lo := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	steps := []string{"", "", "day", "week", "hour"}
	n := 12
	if testing.Short() {
		n = 4
	}
	for i := 0; i < n; i++ {
		from := lo.Add(time.Duration(r.IntN(30*24)) * time.Hour).Add(time.Duration(r.IntN(4)) * 15 * time.Minute)
		to := from.Add(time.Duration(1+r.IntN(4*24)) * time.Hour)
		dims := slices.Clone(Dims)
		r.Shuffle(len(dims), func(a, b int) { dims[a], dims[b] = dims[b], dims[a] })
		dims = dims[:1+r.IntN(3)]
		var agg []string
		for _, d := range dims {
			agg = append(agg, string(d))
		}
		step := steps[r.IntN(len(steps))]
		params := url.Values{"window": {from.Format(time.RFC3339) + "," + to.Format(time.RFC3339)}, "aggregate": {strings.Join(agg, ",")}}
		if step != "" {
			params.Set("step", step)
		}
		answers := map[string][]byte{}
		for name, st := range sts {
			a := run(t, st, params.Encode())
			rep, err := report.Build(context.Background(), st, book, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if a.Total != json.Number(rep.Money(rep.Total)) {
				t.Errorf("%s %s: total %s, report.Build's %s", name, params.Encode(), a.Total, rep.Money(rep.Total))
			}
			team := run(t, st, url.Values{"window": params["window"], "aggregate": {"team"}}.Encode())
			if team.Total != a.Total {
				t.Errorf("%s %s: total %s, by team %s", name, params.Encode(), a.Total, team.Total)
			}
			for _, s := range a.Sets {
				var sum int64
				for _, e := range s.Entries {
					sum += minor(t, e.Total)
				}
				if sum != minor(t, s.Total) {
					t.Errorf("%s %s set %s: entries add up to %d cents, the set's total is %s", name, params.Encode(), s.Start, sum, s.Total)
				}
				sf, _ := time.Parse(time.RFC3339, s.Start)
				se, _ := time.Parse(time.RFC3339, s.End)
				sr, err := report.Build(context.Background(), st, book, sf, se)
				if err != nil {
					t.Fatal(err)
				}
				if s.Total != json.Number(sr.Money(sr.Total)) {
					t.Errorf("%s %s set %s: total %s, report.Build's %s", name, params.Encode(), s.Start, s.Total, sr.Money(sr.Total))
				}
			}
			b, _ := json.Marshal(a.Result)
			answers[name] = b
		}
		if len(answers) == 2 && !bytes.Equal(answers["embedded"], answers["clickhouse"]) {
			t.Errorf("%s: the ledgers answer differently:\nembedded   %s\nclickhouse %s", params.Encode(), answers["embedded"], answers["clickhouse"])
		}
	}
}

// TestPriceBooksOverTime: with two price books recorded, the second in
// force from 13:00 UTC on 10 November (the middle of a Berlin day), every
// grouping's total and the month by team are report.BuildDated's.
func TestPriceBooksOverTime(t *testing.T) {
	ctx := context.Background()
	old := parseBook(t, shared)
	newer := parseBook(t, strings.Replace(shared, `A100: "2.30"`, `A100: "2.75"`, 1))
	for name, st := range stores(t, novemberRows()) {
		ps, ok := st.(ledger.PriceBookStore)
		if !ok {
			t.Fatalf("%s keeps no price books", name)
		}
		if _, _, err := report.RecordBook(ctx, ps, old, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := report.RecordBook(ctx, ps, newer, time.Date(2026, 11, 10, 13, 0, 0, 0, time.UTC), now); err != nil {
			t.Fatal(err)
		}
		from, to, _ := report.Month("2026-11", newer.Location)
		rep, err := report.BuildDated(ctx, st, newer, from, to, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.PriceBooks) != 2 {
			t.Fatalf("%s: the report was priced by %d books, want 2", name, len(rep.PriceBooks))
		}
		for _, agg := range []string{"team", "pod", "node,container", "namespace,workload"} {
			v := url.Values{"window": {"2026-11"}, "aggregate": {agg}}
			q, err := Parse(v, newer.Location, now)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Run(ctx, st, newer, q, now)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, e := range a.Sets[0].Entries {
				sum += e.Minor()
			}
			if sum != rep.Total || a.Total != json.Number(rep.Money(rep.Total)) {
				t.Errorf("%s by %s: entries add up to %d, total %s; the report's %d", name, agg, sum, a.Total, rep.Total)
			}
			if agg != "team" {
				continue
			}
			for _, tm := range rep.Teams {
				var got int64
				for _, e := range a.Sets[0].Entries {
					if e.Name == tm.Team {
						got = e.Minor()
					}
				}
				if got != tm.Total {
					t.Errorf("%s: team %s pays %d, the report's %d", name, tm.Team, got, tm.Total)
				}
			}
		}
	}
}

// TestContainerAndNodeGroupingsCarryEnergy: grouped by container or by
// node, the entries' energy adds up to the team grouping's (within each
// entry's rounding to the watt-hour's thousandth), on both ledgers, and
// the two ledgers answer alike: ClickHouse sums its per-device rollups
// (AggregateContainers), the embedded ledger its container rows. Container
// rows once came without their energy, and these groupings showed only
// the idle-share lines' energy.
func TestContainerAndNodeGroupingsCarryEnergy(t *testing.T) {
	sts := stores(t, novemberRows())
	window := "window=2026-11-10T00:00:00Z,2026-11-13T00:00:00Z"
	energy := func(a *Answer) (float64, int) {
		var sum float64
		n := 0
		for _, s := range a.Sets {
			for _, e := range s.Entries {
				v, err := e.EnergyKWh.Float64()
				if err != nil {
					t.Fatal(err)
				}
				sum += v
				n++
			}
		}
		return sum, n
	}
	for _, agg := range []string{"container", "node", "pod,node"} {
		answers := map[string][]byte{}
		for name, st := range sts {
			want, _ := energy(run(t, st, window+"&aggregate=team"))
			a := run(t, st, window+"&aggregate="+agg+"&step=day")
			got, n := energy(a)
			if want == 0 || got < want-float64(n)*0.5e-6 || got > want+float64(n)*0.5e-6 {
				t.Errorf("%s by %s: entries' energy %.6f kWh, by team %.6f kWh", name, agg, got, want)
			}
			b, _ := json.Marshal(a.Result)
			answers[name] = b
		}
		if len(answers) == 2 && !bytes.Equal(answers["embedded"], answers["clickhouse"]) {
			t.Errorf("by %s: the ledgers answer differently:\nembedded   %s\nclickhouse %s", agg, answers["embedded"], answers["clickhouse"])
		}
	}
}

// An answer's entries written in parts (a large answer's way; here one
// entry a part at most) are the answer written in one, byte for byte,
// under -race in make race.
func TestEntriesWrittenInPartsAreTheSame(t *testing.T) {
	st := stores(t, novemberRows())["embedded"]
	for _, params := range []string{"window=2026-11&aggregate=pod", "window=2026-11&aggregate=team,node&step=week"} {
		one, err := json.Marshal(run(t, st, params).Result)
		if err != nil {
			t.Fatal(err)
		}
		keep := minEntriesPerPart
		minEntriesPerPart = 1
		a := run(t, st, params)
		parted, err := json.Marshal(a.Result)
		var w bytes.Buffer
		werr := WriteJSON(&w, &a.Result) // its entries written in parts too
		minEntriesPerPart = keep
		if want, _ := encoded(&a.Result); werr != nil || !bytes.Equal(w.Bytes(), want) {
			t.Errorf("%s: WriteJSON in parts (%v) differs from encoding/json", params, werr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one, parted) {
			t.Errorf("%s: written in parts\n%s\nin one\n%s", params, parted, one)
		}
		if len(one) < 1000 {
			t.Errorf("%s: a %d-byte answer writes too few entries to part", params, len(one))
		}
	}
}

// TestSeriesBuiltAtOnceIsOneAtATime: a series' steps built by several
// workers give the answer one worker gives, byte for byte, and the bound
// on entries holds at its edge either way: an answer of exactly the
// bound's entries is given, one more is refused naming the parameter.
func TestSeriesBuiltAtOnceIsOneAtATime(t *testing.T) {
	st := stores(t, novemberRows())["embedded"]
	book := parseBook(t, shared)
	keepWorkers, keepMax := stepWorkers, maxEntries
	defer func() { stepWorkers, maxEntries = keepWorkers, keepMax }()
	answer := func(workers int, params string) ([]byte, int, error) {
		stepWorkers = func() int { return workers }
		v, err := url.ParseQuery(params)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(v, book.Location, now)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Run(context.Background(), st, book, q, now)
		if err != nil {
			return nil, 0, err
		}
		n := 0
		for _, s := range a.Sets {
			n += len(s.Entries)
		}
		b, err := json.Marshal(a.Result)
		if err != nil {
			t.Fatal(err)
		}
		return b, n, nil
	}
	for _, params := range []string{
		"window=2026-11-02T00:00:00Z,2026-11-03T00:00:00Z&aggregate=pod&step=hour",
		"window=2026-11-02T00:00:00Z,2026-11-09T00:00:00Z&aggregate=team,namespace&step=day",
	} {
		one, n, err := answer(1, params)
		if err != nil {
			t.Fatal(err)
		}
		if n < 30 {
			t.Fatalf("%s: %d entries, too few to matter", params, n)
		}
		for _, workers := range []int{2, 5} {
			got, _, err := answer(workers, params)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, one) {
				t.Errorf("%s: built by %d workers\n%s\nby one\n%s", params, workers, got, one)
			}
			maxEntries = n
			if _, m, err := answer(workers, params); err != nil || m != n {
				t.Errorf("%s, %d workers, at most %d entries: %d entries, %v", params, workers, n, m, err)
			}
			maxEntries = n - 1
			_, _, err = answer(workers, params)
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != "aggregate" {
				t.Errorf("%s, %d workers, at most %d entries of %d: %v, want the aggregate refused", params, workers, n-1, n, err)
			}
			maxEntries = keepMax
		}
	}
}

// hourPanic is the embedded ledger whose hour aggregates of more than a
// day panic, as a defect would: a series of hours reads the window's in
// its workers (the window's report reads only its edge days' hours).
type hourPanic struct{ *filestore.FileStore }

func (h hourPanic) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.Bucket == ledger.BucketHour && q.To.Sub(q.From) > 24*time.Hour {
		panic("a defect in the hours")
	}
	return h.FileStore.Aggregate(ctx, q)
}

// A panic while a step is built (in a worker) is raised again in Run's
// caller, who can recover it (serve does, and answers 500), never left to
// end the process.
func TestAPanicInAStepIsTheCallers(t *testing.T) {
	st := hourPanic{stores(t, novemberRows())["embedded"].(*filestore.FileStore)}
	book := parseBook(t, shared)
	v, err := url.ParseQuery("window=2026-11-02T00:00:00Z,2026-11-05T00:00:00Z&aggregate=team&step=hour")
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(v, book.Location, now)
	if err != nil {
		t.Fatal(err)
	}
	got := func() (p any) {
		defer func() { p = recover() }()
		_, _ = Run(context.Background(), st, book, q, now)
		return nil
	}()
	if got == nil || !strings.Contains(fmt.Sprint(got), "a defect in the hours") {
		t.Fatalf("Run raised %v, want the hours' panic", got)
	}
}
