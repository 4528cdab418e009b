package report

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// handDay is one A100 for one UTC day (24 h), as one-hour rows: team a
// holds 10 h and uses 5 h, team b holds 6 h and uses 3 h, 8 h nobody
// holds; 1 h busy with no container, 15 h idle.
func handDay() []attribution.Row {
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for h := 0; h < 24; h++ {
		s := day.Add(time.Duration(h) * time.Hour)
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SliceID: "GPU-1", SharingMode: "timeslicing", Method: "measured"}
		c := func(team string, alloc, used float64) attribution.Row {
			r := base
			r.Kind, r.Namespace, r.Pod, r.PodUID, r.Container, r.Team = attribution.KindContainer, "ns-"+team, "p-"+team, "u-"+team, "c", team
			r.SliceID = "GPU-1::" + team
			r.AllocatedGPUSeconds, r.UsedGPUSeconds, r.EnergyJoules = alloc, used, 3.6e6*used/3600 // 1 kWh per used hour
			return r
		}
		// Hours 0-9: a holds the GPU (uses hours 0-4). Hours 10-15: b holds
		// it (uses 10-12). Hours 16-23: nobody. Hour 23 is busy with a host
		// process.
		switch {
		case h < 10:
			u := 0.0
			if h < 5 {
				u = 3600
			}
			rows = append(rows, c("a", 3600, u))
			rows = append(rows, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 3600-u))
		case h < 16:
			u := 0.0
			if h < 13 {
				u = 3600
			}
			rows = append(rows, c("b", 3600, u))
			rows = append(rows, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 3600-u))
		case h < 23:
			rows = append(rows, kind(base, attribution.KindUnallocated, 3600, 0), kind(base, attribution.KindIdle, 0, 3600))
		default:
			rows = append(rows, kind(base, attribution.KindUnallocated, 3600, 0), kind(base, attribution.KindUnattributed, 0, 3600))
		}
	}
	return rows
}

func kind(base attribution.Row, k attribution.Kind, alloc, used float64) attribution.Row {
	base.Kind, base.AllocatedGPUSeconds, base.UsedGPUSeconds = k, alloc, used
	return base
}

// TestPoliciesByHand: the four policy/idle combinations on handDay at
// 2.40 per GPU-hour, every figure worked out by hand:
//
//	allocation: a 10 h = 24.00, b 6 h = 14.40, unallocated 8 h = 19.20
//	  shared by allocated hours 10:6 -> a +5 h = 12.00, b +3 h = 7.20
//	usage:      a 5 h = 12.00, b 3 h = 7.20, idle + unattributed 16 h = 38.40
//	  shared by used hours 5:3 -> a +10 h = 24.00, b +6 h = 14.40
func TestPoliciesByHand(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	src := &memSource{rows: handDay()}
	const p0, p1 = "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"
	cases := []struct {
		policy, idle string
		want         [][]string // team, ns, line_type, alloc h, used h, efficiency, energy, amount
	}{
		{"allocation", "platform", [][]string{
			{"a", "ns-a", "charge", "10.000000", "5.000000", "0.5000", "5.000000", "24.00"},
			{"b", "ns-b", "charge", "6.000000", "3.000000", "0.5000", "3.000000", "14.40"},
			{"", "", "platform", "8.000000", "16.000000", "", "0.000000", "19.20"},
			{"", "", "rounding", "", "", "", "", "0.00"},
		}},
		{"allocation", "shared", [][]string{
			{"a", "ns-a", "charge", "10.000000", "5.000000", "0.5000", "5.000000", "24.00"},
			{"a", "ns-a", "idle_share", "5.000000", "0.000000", "", "0.000000", "12.00"},
			{"b", "ns-b", "charge", "6.000000", "3.000000", "0.5000", "3.000000", "14.40"},
			{"b", "ns-b", "idle_share", "3.000000", "0.000000", "", "0.000000", "7.20"},
			{"", "", "rounding", "", "", "", "", "0.00"},
		}},
		{"usage", "platform", [][]string{
			{"a", "ns-a", "charge", "10.000000", "5.000000", "0.5000", "5.000000", "12.00"},
			{"b", "ns-b", "charge", "6.000000", "3.000000", "0.5000", "3.000000", "7.20"},
			{"", "", "platform", "8.000000", "16.000000", "", "0.000000", "38.40"},
			{"", "", "rounding", "", "", "", "", "0.00"},
		}},
		{"usage", "shared", [][]string{
			{"a", "ns-a", "charge", "10.000000", "5.000000", "0.5000", "5.000000", "12.00"},
			{"a", "ns-a", "idle_share", "0.000000", "10.000000", "", "0.000000", "24.00"},
			{"b", "ns-b", "charge", "6.000000", "3.000000", "0.5000", "3.000000", "7.20"},
			{"b", "ns-b", "idle_share", "0.000000", "6.000000", "", "0.000000", "14.40"},
			{"", "", "rounding", "", "", "", "", "0.00"},
		}},
	}
	for _, c := range cases {
		t.Run(c.policy+"/"+c.idle, func(t *testing.T) {
			b := bookFor(t, "USD", "UTC", c.policy, c.idle, map[string]string{"A100-SXM4-80GB": "2.40"}, "9.99")
			r := mustBuild(t, src, b, from, to)
			recs := csvRecords(t, r)
			if strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") {
				t.Fatalf("header %v", recs[0])
			}
			if len(recs)-1 != len(c.want) {
				t.Fatalf("%d lines, want %d:\n%v", len(recs)-1, len(c.want), recs)
			}
			for i, w := range c.want {
				g := recs[i+1]
				got := []string{g[2], g[3], g[6], g[7], g[8], g[9], g[10], g[12]}
				if strings.Join(got, "|") != strings.Join(w, "|") {
					t.Errorf("line %d = %v\n          want %v", i, got, w)
				}
				if g[0] != p0 || g[1] != p1 || g[13] != "USD" {
					t.Errorf("line %d period/currency %v", i, g)
				}
				wantModel, wantRate := "A100-SXM4-80GB", "2.40"
				if w[2] == "rounding" {
					wantModel, wantRate = "", ""
				}
				if g[4] != wantModel || g[11] != wantRate {
					t.Errorf("line %d model %q rate %q", i, g[4], g[11])
				}
			}
			if r.Money(r.Total) != "57.60" {
				t.Errorf("total %s, want 57.60 (24 h x 2.40)", r.Money(r.Total))
			}
		})
	}
}

// TestLargestRemainder: three teams hold a third of an hour each at 1.00:
// 0.333... each, floors add up to 0.99, the hour is 1.00, so one line (the
// first, on a tie) gets 0.34. Two models at 0.005 an hour round to 0.01
// each, but their sum 0.010 rounds once to 0.01: the rounding line is
// -0.01.
func TestLargestRemainder(t *testing.T) {
	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "G1", GPUModel: "X", SliceID: "G1", SharingMode: "timeslicing"}
	for _, team := range []string{"a", "b", "c"} {
		r := kind(base, attribution.KindContainer, 1200, 0)
		r.Team, r.Namespace, r.Pod, r.PodUID = team, team, team, team
		rows = append(rows, r)
	}
	rows = append(rows, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 3600))
	b := bookFor(t, "USD", "UTC", "allocation", "platform", map[string]string{"X": "1.00"}, "1")
	r := mustBuild(t, &memSource{rows: rows}, b, s, s.Add(24*time.Hour))
	got := map[string]string{}
	for _, l := range r.Lines {
		got[l.Team+"/"+string(l.Type)] = r.Money(l.Amount)
	}
	want := map[string]string{"a/charge": "0.34", "b/charge": "0.33", "c/charge": "0.33", "/platform": "0.00", "/rounding": "0.00"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %s (all: %v)", k, got[k], w, got)
		}
	}

	y := base
	y.GPUUUID, y.GPUModel, y.SliceID = "G2", "Y", "G2"
	rows = []attribution.Row{kind(base, attribution.KindUnallocated, 3600, 0), kind(y, attribution.KindUnallocated, 3600, 0)}
	b = bookFor(t, "USD", "UTC", "allocation", "platform", map[string]string{"X": "0.005", "Y": "0.005"}, "1")
	r = mustBuild(t, &memSource{rows: rows}, b, s, s.Add(24*time.Hour))
	if r.Money(r.Total) != "0.01" || r.Money(r.Rounding) != "-0.01" {
		t.Errorf("total %s rounding %s, want 0.01 and -0.01", r.Money(r.Total), r.Money(r.Rounding))
	}
	var sum int64
	for _, l := range r.Lines {
		sum += l.Amount
		if l.Type == LinePlatform && r.Money(l.Amount) != "0.01" {
			t.Errorf("platform %s = %s, want 0.01", l.GPUModel, r.Money(l.Amount))
		}
	}
	if sum != r.Total {
		t.Errorf("lines add up to %d, total %d", sum, r.Total)
	}
}

// TestUnknownModelAtDefaultRate: a model the book does not list is charged
// at defaultRate and listed.
func TestUnknownModelAtDefaultRate(t *testing.T) {
	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "G1", GPUModel: "L40S", SliceID: "G1", SharingMode: "exclusive"}
	c := kind(base, attribution.KindContainer, 3600, 1800)
	c.Team, c.Namespace = "vision", "cv"
	rows := []attribution.Row{c, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 1800)}
	b := bookFor(t, "EUR", "UTC", "allocation", "platform", map[string]string{"A100-SXM4-80GB": "2.40"}, "1.75")
	r := mustBuild(t, &memSource{rows: rows}, b, s, s.Add(time.Hour))
	u := r.UnknownModels()
	if len(u) != 1 || u[0].Model != "L40S" || u[0].Rows != 3 {
		t.Fatalf("unknown models %+v", u)
	}
	if r.Money(r.Total) != "1.75" {
		t.Errorf("total %s, want 1.75", r.Money(r.Total))
	}
	if r.Lines[0].Rate.Format(2) != "1.75" {
		t.Errorf("rate %s", r.Lines[0].Rate.Format(2))
	}
}
