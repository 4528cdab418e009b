package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// memDay is one A100-SXM4-80GB (81920 MiB) time-sliced in two replicas,
// observed for 10 one-hour rows on 2026-03-10 (UTC). Each hour team a
// holds one replica (1800 s), keeps the GPU busy 2700 s and holds aMem of
// the device's memory; team b holds the other replica, is busy 180 s and
// holds bMem. The GPU is idle the other 720 s.
//
// Over the 10 h: a used 7.5 h, b 0.5 h, idle 2 h; each held 5 h.
func memDay(aMem, bMem float64) []attribution.Row {
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for h := 0; h < 10; h++ {
		s := day.Add(time.Duration(h) * time.Hour)
		base := gpu1Row(s, time.Hour, "timeslicing")
		c := func(team string, used, mem float64) attribution.Row {
			r := containerRow(base, team, 1800, used)
			r.MemoryMiBSeconds = mem * 81920 * 3600
			return r
		}
		rows = append(rows, c("a", 2700, aMem), c("b", 180, bMem),
			kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindUnattributed, 0, 0),
			kind(base, attribution.KindIdle, 0, 720))
	}
	return rows
}

// gpu1Row is a row of the hand tests' GPU: GPU-1, an A100-SXM4-80GB
// (81920 MiB) on node n1, for [start, start+d).
func gpu1Row(start time.Time, d time.Duration, mode string) attribution.Row {
	return attribution.Row{IntervalStart: start, IntervalEnd: start.Add(d), Node: "n1", GPUUUID: "GPU-1",
		GPUModel: "A100-SXM4-80GB", SliceID: "GPU-1", SharingMode: mode, Method: "measured"}
}

// containerRow is team's container row on base's GPU: namespace ns-team, pod
// p-team, its own slice.
func containerRow(base attribution.Row, team string, alloc, used float64) attribution.Row {
	r := kind(base, attribution.KindContainer, alloc, used)
	r.Namespace, r.Pod, r.PodUID, r.Container, r.Team = "ns-"+team, "p-"+team, "u-"+team, "c", team
	r.SliceID = base.GPUUUID + "::" + team
	return r
}

// handLines reads a report's CSV as team|line_type|amount, plus the JSON's
// charged and memory hours per line.
func handLines(t *testing.T, r *Report) []string {
	t.Helper()
	recs := csvRecords(t, r)
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Lines []struct {
			Charged *json.Number `json:"charged_gpu_hours"`
			Memory  *json.Number `json:"memory_gpu_hours"`
		} `json:"lines"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, rec := range recs[1:] {
		s := rec[2] + "|" + rec[6] + "|" + rec[12]
		if c := doc.Lines[i].Charged; c != nil {
			s += "|" + c.String()
		}
		if m := doc.Lines[i].Memory; m != nil {
			s += "|mem " + m.String()
		}
		out = append(out, s)
	}
	return out
}

// checkHandLines compares handLines with what the test worked out.
func checkHandLines(t *testing.T, r *Report, want []string) {
	t.Helper()
	if got := handLines(t, r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMemoryWeightedByHand: memDay with a holding 25% of the memory and b
// 55%, at 2.40 per GPU-hour and memoryWeight 0.3 (docs/report.md, Billing
// policies, has the same numbers):
//
//	a: 0.7 x 7.5 h used + 0.3 x (0.25 x 10 h = 2.5 h memory) = 5.25 + 0.75 = 6 h -> 14.40
//	b: 0.7 x 0.5 h      + 0.3 x (0.55 x 10 h = 5.5 h)        = 0.35 + 1.65 = 2 h -> 4.80
//	platform: 10 h - 8 h = 2 h = 0.7 x 2 h idle + 0.3 x (10 - 8) h memory nobody held -> 4.80
//	idle: shared: the 2 h go 6:2 -> a +1.5 h = 3.60, b +0.5 h = 1.20
//
// Plain usage bills the same GPU a 18.00 (7.5 h), b 1.20 (0.5 h): b's
// 55% of the memory, which starves a's neighbours of it, is free there.
// Allocation bills each team its replica, 5 h = 12.00, whatever it used
// or held in memory; the GPU was never unheld, so the platform line (its
// 2 h idle) is 0.00.
//
// The clamp: with a reporting 50% and b 70% of the memory, 120% of the
// device, the report scales both by 10/12 (the device had 10 h of memory;
// 12 h were reported): a 5 h -> 25/6 h, b 7 h -> 35/6 h, together 10 h.
//
//	a: 0.7 x 7.5 + 0.3 x 25/6 = 5.25 + 1.25 = 6.5 h -> 15.60
//	b: 0.7 x 0.5 + 0.3 x 35/6 = 0.35 + 1.75 = 2.1 h -> 5.04
//	platform: 0.7 x 2 h idle + 0.3 x 0 h free memory = 1.4 h -> 3.36
//
// Total 10 h x 2.40 = 24.00 every time: the GPU partitions exactly.
func TestMemoryWeightedByHand(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	usage := "currency: USD\npolicy: usage\nrates: {A100-SXM4-80GB: 2.40}\ndefaultRate: 9.99\n"
	cases := []struct {
		name, book string
		aMem, bMem float64
		want       []string
	}{
		{"usage", usage, 0.25, 0.55, []string{"a|charge|18.00|7.500000", "b|charge|1.20|0.500000", "|platform|4.80|2.000000", "|rounding|0.00"}},
		{"allocation", "currency: USD\npolicy: allocation\nrates: {A100-SXM4-80GB: 2.40}\ndefaultRate: 1\n", 0.25, 0.55,
			[]string{"a|charge|12.00|5.000000", "b|charge|12.00|5.000000", "|platform|0.00|0.000000", "|rounding|0.00"}},
		{"memory/platform", usage + "memoryWeight: 0.3\n", 0.25, 0.55, []string{
			"a|charge|14.40|6.000000|mem 2.500000", "b|charge|4.80|2.000000|mem 5.500000", "|platform|4.80|2.000000", "|rounding|0.00"}},
		{"memory/shared", usage + "memoryWeight: 0.3\nidle: shared\n", 0.25, 0.55, []string{
			"a|charge|14.40|6.000000|mem 2.500000", "a|idle_share|3.60|1.500000",
			"b|charge|4.80|2.000000|mem 5.500000", "b|idle_share|1.20|0.500000", "|rounding|0.00"}},
		// memoryWeight 1: memory alone. a 2.5 h = 6.00, b 5.5 h = 13.20,
		// the 2 h of memory nobody held 4.80.
		{"memory only", usage + "memoryWeight: 1\n", 0.25, 0.55, []string{
			"a|charge|6.00|2.500000|mem 2.500000", "b|charge|13.20|5.500000|mem 5.500000", "|platform|4.80|2.000000", "|rounding|0.00"}},
		// memoryWeight 0 is plain usage.
		{"weight 0", usage + "memoryWeight: 0\n", 0.25, 0.55,
			[]string{"a|charge|18.00|7.500000", "b|charge|1.20|0.500000", "|platform|4.80|2.000000", "|rounding|0.00"}},
		{"clamp", usage + "memoryWeight: 0.3\n", 0.5, 0.7, []string{
			"a|charge|15.60|6.500000|mem 4.166667", "b|charge|5.04|2.100000|mem 5.833333", "|platform|3.36|1.400000", "|rounding|0.00"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustBuild(t, &memSource{rows: memDay(c.aMem, c.bMem)}, book(t, c.book), from, to)
			checkHandLines(t, r, c.want)
			if r.Money(r.Total) != "24.00" {
				t.Errorf("total %s, want 24.00 (10 h x 2.40)", r.Money(r.Total))
			}
		})
	}
}

// TestMemoryWeightedUnknownModel: a model with memory to bill and no size
// is an error naming it; a memoryMiB entry prices it; a model with no
// memory recorded needs no size.
func TestMemoryWeightedUnknownModel(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	rows := memDay(0.25, 0.55)
	for i := range rows {
		rows[i].GPUModel = "L40S"
	}
	src := &memSource{rows: rows}
	head := "currency: USD\npolicy: usage\nmemoryWeight: 0.3\ndefaultRate: 2.40\n"
	_, err := Build(context.Background(), src, book(t, head), from, to)
	if err == nil || !strings.Contains(err.Error(), `GPU model "L40S" has memory-weighted charges (memoryWeight 0.3) but no memory size`) || !strings.Contains(err.Error(), "memoryMiB") ||
		!strings.Contains(err.Error(), "test-prices.yaml") {
		t.Fatalf("err = %v", err)
	}
	// L40S: 46068 MiB. a holds 0.25 x 81920 = 20480 MiB of it: 20480/46068
	// of 10 h; the total is 10 h x 2.40 whatever the split.
	r := mustBuild(t, src, book(t, head+"memoryMiB: {L40S: 46068}\n"), from, to)
	if r.Money(r.Total) != "24.00" {
		t.Errorf("total %s, want 24.00", r.Money(r.Total))
	}
	for i := range rows {
		rows[i].MemoryMiBSeconds = 0
	}
	r = mustBuild(t, &memSource{rows: rows}, book(t, head), from, to)
	// No memory: a 0.7 x 7.5 h = 5.25 h -> 12.60.
	if got := handLines(t, r); got[0] != "a|charge|12.60|5.250000|mem 0.000000" {
		t.Errorf("no memory recorded: %v", got)
	}
}

// flatMonth is one A100-SXM4-80GB time-sliced in four replicas for all of
// March 2026 (744 h, UTC), as one-day rows: team a holds two replicas
// every day, team b one replica on the first 10 days, the last replica is
// never held. Nobody uses anything: flat ignores use.
func flatMonth() []attribution.Row {
	var rows []attribution.Row
	for d := 0; d < 31; d++ {
		s := time.Date(2026, 3, 1+d, 0, 0, 0, 0, time.UTC)
		base := gpu1Row(s, 24*time.Hour, "timeslicing")
		c := func(team string, share float64) attribution.Row { return containerRow(base, team, share*86400, 0) }
		held := 0.5
		rows = append(rows, c("a", 0.5))
		if d < 10 {
			rows = append(rows, c("b", 0.25))
			held += 0.25
		}
		rows = append(rows, kind(base, attribution.KindUnallocated, (1-held)*86400, 0), kind(base, attribution.KindIdle, 0, 86400))
	}
	return rows
}

// TestFlatByHand: flatMonth at 800.00 per slot per month (docs/report.md
// has the same numbers). March has 744 h, so a slot-hour is 1/744 of a
// slot-month:
//
//	a: 2 replicas x 1/4 x 744 h = 372 slot-hours = 0.5 slot-month -> 400.00
//	b: 1/4 x 240 h = 60 slot-hours = 60/744 x 800 = 64.516129 -> 64.52
//	platform: 744 - 372 - 60 = 312 slot-hours = 335.483871 -> 335.48
//	total: one slot all month = 800.00
//
// idle: shared, day by day in proportion to slot-hours held: days 1-10 a
// holds 12, b 6, 6 unheld -> a +4, b +2 a day; days 11-31 a holds 12, 12
// unheld -> a +12. a's share 10x4 + 21x12 = 292 slot-hours = 313.978495,
// b's 20 = 21.505376. Floors 400.00 + 313.97 + 64.51 + 21.50 = 799.98;
// the two cents go to the largest remainders (.8495 a's share, .6129 b's
// charge): 400.00, 313.98, 64.52, 21.50 = 800.00.
func TestFlatByHand(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	src := &memSource{rows: flatMonth()}
	cases := []struct {
		idle string
		want []string
	}{
		{"platform", []string{"a|charge|400.00|372.000000", "b|charge|64.52|60.000000", "|platform|335.48|312.000000", "|rounding|0.00"}},
		{"shared", []string{"a|charge|400.00|372.000000", "a|idle_share|313.98|292.000000",
			"b|charge|64.52|60.000000", "b|idle_share|21.50|20.000000", "|rounding|0.00"}},
	}
	for _, c := range cases {
		t.Run(c.idle, func(t *testing.T) {
			b := book(t, "currency: USD\npolicy: flat\nidle: "+c.idle+"\nslotRates: {A100-SXM4-80GB: 800.00}\n")
			r := mustBuild(t, src, b, from, to)
			checkHandLines(t, r, c.want)
			if r.Money(r.Total) != "800.00" {
				t.Errorf("total %s, want 800.00", r.Money(r.Total))
			}
			// 800 / 744 h, as the rate per GPU-hour; the slot price as is.
			l := r.Lines[0]
			if l.Rate.Format(2) != "1.075268817" || l.SlotRate.Format(2) != "800.00" || l.SlotMonths.RatString() != "1/2" {
				t.Errorf("a's rate %s slot rate %s slot-months %s", l.Rate.Format(2), l.SlotRate.Format(2), l.SlotMonths.RatString())
			}
			if m := r.Models[0]; m.SlotMonths.RatString() != "1" || m.Amount != 80000 {
				t.Errorf("model: %s slot-months, amount %d", m.SlotMonths.RatString(), m.Amount)
			}
		})
	}
}

// TestFlatProratesByMonth: a slot held over the end of a month pays each
// month's hours at that month's rate. One whole A100 slot from 2026-02-27
// to 2026-03-03 (UTC): 2 days of February (672 h) and 2 of March (744 h)
// at 800.00: 48/672 x 800 + 48/744 x 800 = 57.142857 + 51.612903 =
// 108.755760 -> 108.76.
func TestFlatProratesByMonth(t *testing.T) {
	var rows []attribution.Row
	for d := 0; d < 4; d++ {
		s := time.Date(2026, 2, 27+d, 0, 0, 0, 0, time.UTC)
		base := gpu1Row(s, 24*time.Hour, "exclusive")
		c := containerRow(base, "a", 86400, 0)
		rows = append(rows, c, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 86400))
	}
	b := book(t, "currency: USD\npolicy: flat\nslotRates: {A100-SXM4-80GB: 800}\n")
	r := mustBuild(t, &memSource{rows: rows}, b, time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC))
	if r.Money(r.Total) != "108.76" || r.Lines[0].Amount != 10876 {
		t.Errorf("total %s, line %d", r.Money(r.Total), r.Lines[0].Amount)
	}
}

// TestFlatUnpricedModel: under flat a model without a slot price is an
// error naming it, never a silent zero.
func TestFlatUnpricedModel(t *testing.T) {
	b := book(t, "currency: USD\npolicy: flat\nslotRates: {H100-SXM5-80GB: 1200}\n")
	_, err := Build(context.Background(), &memSource{rows: flatMonth()}, b, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
	if err == nil || !strings.Contains(err.Error(), `no slotRates entry for GPU model "A100-SXM4-80GB"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestMemoryWeightedMIGByHand: on MIG a container's memory share is its
// instance's part of the device, with no profile needed. One A100-80GB in
// two instances for 7 h at 2.40 (16.80): a on a 3g.40gb (compute 3/7)
// busy all the time, 3 h, filling its 40960 MiB (half the device, 3.5 h);
// b on a 4g.40gb (4/7) busy 2 h, holding 20480 MiB (a quarter, 1.75 h).
// With memoryWeight 0.3:
//
//	a: 0.7 x 3 h + 0.3 x 3.5 h  = 2.1 + 1.05  = 3.15 h  -> 7.56
//	b: 0.7 x 2 h + 0.3 x 1.75 h = 1.4 + 0.525 = 1.925 h -> 4.62
//	platform: 0.7 x 2 h idle + 0.3 x (7 - 5.25) h = 1.925 h -> 4.62
func TestMemoryWeightedMIGByHand(t *testing.T) {
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for h := 0; h < 7; h++ {
		s := day.Add(time.Duration(h) * time.Hour)
		base := gpu1Row(s, time.Hour, "mig")
		c := func(team string, slices, used, mib float64) attribution.Row {
			r := containerRow(base, team, 3600*slices/7, used)
			r.MemoryMiBSeconds = mib * 3600
			return r
		}
		rows = append(rows, c("a", 3, 3600*3.0/7, 40960), c("b", 4, 3600*2.0/7, 20480),
			kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 3600*2.0/7))
	}
	b := book(t, "currency: USD\npolicy: usage\nmemoryWeight: 0.3\nrates: {A100-SXM4-80GB: 2.40}\ndefaultRate: 1\n")
	r := mustBuild(t, &memSource{rows: rows}, b, day, day.Add(24*time.Hour))
	want := []string{"a|charge|7.56|3.150000|mem 3.500000", "b|charge|4.62|1.925000|mem 1.750000", "|platform|4.62|1.925000", "|rounding|0.00"}
	checkHandLines(t, r, want)
	if r.Money(r.Total) != "16.80" {
		t.Errorf("total %s, want 16.80 (7 h x 2.40)", r.Money(r.Total))
	}
}
