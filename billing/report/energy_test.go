package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// energyDay is two GPUs for one UTC day, as one-hour rows with known
// energy: on the A100 (node n1) team a holds hours 0-9 at 0.3 kWh an hour
// (3 kWh) and nobody holds hours 10-23 at 0.1 kWh an hour (1.4 kWh); on
// the H100 (node n2) team b holds all 24 hours at 0.7 kWh an hour
// (16.8 kWh). 21.2 kWh in all.
func energyDay() []attribution.Row {
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for h := 0; h < 24; h++ {
		s := day.Add(time.Duration(h) * time.Hour)
		a100 := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured"}
		h100 := a100
		h100.Node, h100.GPUUUID, h100.SliceID, h100.GPUModel = "n2", "GPU-2", "GPU-2", "H100-SXM5-80GB"
		c := func(base attribution.Row, team string, joules float64) attribution.Row {
			r := base
			r.Kind, r.Namespace, r.Pod, r.PodUID, r.Container, r.Team = attribution.KindContainer, "ns-"+team, "p-"+team, "u-"+team, "c", team
			r.AllocatedGPUSeconds, r.UsedGPUSeconds, r.EnergyJoules = 3600, 3600, joules
			return r
		}
		if h < 10 {
			rows = append(rows, c(a100, "a", 1.08e6), kind(a100, attribution.KindUnallocated, 0, 0), kind(a100, attribution.KindIdle, 0, 0))
		} else {
			idle := kind(a100, attribution.KindIdle, 0, 3600)
			idle.EnergyJoules = 0.36e6
			rows = append(rows, kind(a100, attribution.KindUnallocated, 3600, 0), idle)
		}
		rows = append(rows, c(h100, "b", 2.52e6), kind(h100, attribution.KindUnallocated, 0, 0), kind(h100, attribution.KindIdle, 0, 0))
	}
	return rows
}

const energyBookYAML = `currency: USD
policy: allocation
idle: %s
rates: {A100-SXM4-80GB: 2.40, H100-SXM5-80GB: 4.10}
defaultRate: 2
energy:
  rate: 0.1234
  carbonIntensity: 412.5 gCO2e/kWh
`

// TestEnergyByHand: energyDay at 0.1234 USD per kWh and 412.5 gCO2e/kWh,
// worked out by hand:
//
//	a  3 kWh    x 0.1234 = 0.3702  -> 37.02 cents;  x 412.5 = 1237.5 g
//	b  16.8 kWh x 0.1234 = 2.07312 -> 207.312;      x 412.5 = 6930 g
//	platform 1.4 kWh     = 0.17276 -> 17.276;       x 412.5 = 577.5 g
//	total 21.2 kWh       = 2.61608 -> 262 cents (rounded once); 8745 g
//
// Floors give 37 + 207 + 17 = 261 cents: the one cent left goes to the
// largest remainder, b's .312, so b pays 2.08 (rounding each line alone
// would give 2.61 in all). Grams: floors 1237 + 6930 + 577 = 8744, the
// gram left goes to the first of the tied .5 remainders, a's.
func TestEnergyByHand(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	r := mustBuild(t, &memSource{rows: energyDay()}, book(t, fmt.Sprintf(energyBookYAML, "platform")), from, to)

	recs := csvRecords(t, r)
	wantHeader := strings.Join(CSVHeader, ",") + ",energy_cost,co2e_kg"
	if got := strings.Join(recs[0], ","); got != wantHeader {
		t.Fatalf("header %s\nwant   %s", got, wantHeader)
	}
	want := [][]string{ // team, line_type, energy_kwh, amount, energy_cost, co2e_kg
		{"a", "charge", "3.000000", "24.00", "0.37", "1.238"},
		{"b", "charge", "16.800000", "98.40", "2.08", "6.930"},
		{"", "platform", "1.400000", "33.60", "0.17", "0.577"},
		{"", "rounding", "", "0.00", "", ""},
	}
	if len(recs)-1 != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(recs)-1, len(want), recs)
	}
	n := len(CSVHeader)
	for i, w := range want {
		g := recs[i+1]
		got := []string{g[2], g[6], g[10], g[12], g[n], g[n+1]}
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("line %d = %v, want %v", i, got, w)
		}
	}
	// The energy cost is not in the bill: 10 h x 2.40 + 24 h x 4.10 + 14 h x 2.40.
	if r.Money(r.Total) != "156.00" {
		t.Errorf("total %s, want 156.00: energy cost must not be charged", r.Money(r.Total))
	}
	e := r.Energy
	if e == nil || e.KWh.Cmp(big.NewRat(212, 10)) != 0 || e.Cost != 262 || e.Co2eGrams != 8745 ||
		e.PlatformKWh.Cmp(big.NewRat(14, 10)) != 0 || e.PlatformCost != 17 || e.PlatformCo2eGrams != 577 {
		t.Errorf("totals %+v, want 21.2 kWh, 262 cents, 8745 g (platform 1.4 kWh, 17, 577)", e)
	}
	teams := map[string][3]string{}
	for _, tm := range r.Teams {
		teams[tm.Team] = [3]string{decimal(tm.EnergyKWh, 6), r.Money(tm.EnergyCost), Kg(tm.Co2eGrams)}
	}
	if teams["a"] != [3]string{"3.000000", "0.37", "1.238"} || teams["b"] != [3]string{"16.800000", "2.08", "6.930"} {
		t.Errorf("teams %v", teams)
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Energy map[string]json.Number `json:"energy"`
		Teams  []map[string]any       `json:"teams"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	wantEnergy := map[string]json.Number{"rate_per_kwh": "0.1234", "carbon_intensity_g_per_kwh": "412.5", "energy_kwh": "21.200000",
		"energy_cost": "2.62", "co2e_kg": "8.745", "platform_energy_kwh": "1.400000", "platform_energy_cost": "0.17", "platform_co2e_kg": "0.577"}
	if fmt.Sprint(doc.Energy) != fmt.Sprint(wantEnergy) {
		t.Errorf("JSON energy %v\nwant %v", doc.Energy, wantEnergy)
	}
	if got := fmt.Sprintf("%v %v %v %v", doc.Teams[0]["team"], doc.Teams[0]["energy_kwh"], doc.Teams[0]["energy_cost"], doc.Teams[0]["co2e_kg"]); got != "b 16.8 2.08 6.93" {
		t.Errorf("JSON first team: %s", got)
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<h2>Energy and carbon</h2>", "at 0.1234 USD per kWh", "412.5 gCO2e per kWh",
		`<td class="num">16.800000</td><td class="num">2.08</td><td class="num">6.930</td>`,
		`<td>Total</td><td class="num">21.200000</td><td class="num">2.62</td><td class="num">8.745</td>`} {
		if !strings.Contains(h.String(), s) {
			t.Errorf("HTML lacks %q", s)
		}
	}
}

// TestEnergyIdleShared: with idle: shared the platform's 1.4 kWh goes to
// team a, whose A100 it is (b has none), so a's lines carry 4.4 kWh:
// 3 x 0.1234 = 0.3702 and 1.4 x 0.1234 = 0.17276; the period total is
// still 262 cents and 8745 g.
func TestEnergyIdleShared(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	r := mustBuild(t, &memSource{rows: energyDay()}, book(t, fmt.Sprintf(energyBookYAML, "shared")), from, to)
	got := map[string]string{}
	for _, l := range r.Lines {
		if l.Type != LineRounding {
			got[l.Team+"/"+string(l.Type)] = fmt.Sprint(decimal(l.EnergyKWh, 3), " ", r.Money(l.EnergyCost), " ", Kg(l.Co2eGrams))
		}
	}
	want := map[string]string{"a/charge": "3.000 0.37 1.238", "a/idle_share": "1.400 0.17 0.577", "b/charge": "16.800 2.08 6.930"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %v\nwant  %v", got, want)
	}
	if r.Energy.Cost != 262 || r.Energy.Co2eGrams != 8745 || r.Teams[1].Team != "a" || r.Teams[1].EnergyCost != 54 {
		t.Errorf("totals %+v, teams %+v", r.Energy, r.Teams)
	}
}

// TestEnergyOptional: a book without an energy section writes what it
// wrote before: the contract's CSV header, no JSON energy key, no HTML
// section, FOCUSHeader. With only a rate, co2e_kg is empty.
func TestEnergyOptional(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	plain := "currency: USD\npolicy: allocation\nrates: {A100-SXM4-80GB: 2.40, H100-SXM5-80GB: 4.10}\ndefaultRate: 2\n"
	st := fileLedger(t, energyDay(), nil)
	r := mustBuild(t, st, book(t, plain), from, to)
	if err := LoadDevices(context.Background(), st, r); err != nil {
		t.Fatal(err)
	}
	var c, j, h, f bytes.Buffer
	for _, err := range []error{WriteCSV(&c, r), WriteJSON(&j, r), WriteHTML(&h, r), WriteFOCUS(&f, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if first, _, _ := strings.Cut(c.String(), "\n"); first != strings.Join(CSVHeader, ",") {
		t.Errorf("CSV header %s", first)
	}
	if first, _, _ := strings.Cut(f.String(), "\n"); first != strings.Join(FOCUSHeader, ",") {
		t.Errorf("FOCUS header %s", first)
	}
	for _, s := range []string{"energy_cost", "co2e", `"energy"`} {
		if strings.Contains(j.String(), s) {
			t.Errorf("JSON has %q without an energy section", s)
		}
	}
	if strings.Contains(h.String(), "Energy and carbon") || r.Energy != nil {
		t.Error("energy section without an energy section in the book")
	}

	r = mustBuild(t, st, book(t, plain+"energy: {rate: 150/MWh}\n"), from, to)
	recs := csvRecords(t, r)
	n := len(CSVHeader)
	if recs[1][n] != "0.45" || recs[1][n+1] != "" || recs[2][n] != "2.52" {
		t.Errorf("rate only (0.15 per kWh): %v / %v", recs[1][n:], recs[2][n:])
	}
}

// TestEnergyFOCUS: the FOCUS file has x_Co2eKg and x_EnergyCost in their
// alphabetical places among the x_ columns, and per device its rows add up
// to the finance lines' figures.
func TestEnergyFOCUS(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	st := fileLedger(t, energyDay(), nil)
	r := mustBuild(t, st, book(t, fmt.Sprintf(energyBookYAML, "platform")), from, to)
	for _, byDevice := range []bool{false, true} {
		if byDevice {
			if err := LoadDevices(context.Background(), st, r); err != nil {
				t.Fatal(err)
			}
		}
		var f bytes.Buffer
		if err := WriteFOCUS(&f, r); err != nil {
			t.Fatal(err)
		}
		if vs, err := focusvalidate.Validate(bytes.NewReader(f.Bytes())); err != nil || len(vs) > 0 {
			t.Errorf("by device %v: the FOCUS validator says %v %v", byDevice, err, vs)
		}
		recs, err := csv.NewReader(&f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		h := recs[0]
		var xs []string
		for _, c := range h {
			if strings.HasPrefix(c, "x_") {
				xs = append(xs, c)
			}
		}
		if !slices.IsSorted(xs) || !slices.Contains(xs, "x_Co2eKg") || !slices.Contains(xs, "x_EnergyCost") || len(h) != len(FOCUSHeader)+2 {
			t.Fatalf("x_ columns %v", xs)
		}
		ic, ig, it := slices.Index(h, "x_EnergyCost"), slices.Index(h, "x_Co2eKg"), slices.Index(h, "x_TeamName")
		sums := map[string][2]float64{}
		for _, row := range recs[1:] {
			if row[ic] == "" {
				continue
			}
			var cost, kg float64
			fmt.Sscan(row[ic], &cost)
			fmt.Sscan(row[ig], &kg)
			s := sums[row[it]]
			sums[row[it]] = [2]float64{s[0] + cost, s[1] + kg}
		}
		want := map[string][2]float64{"a": {0.37, 1.238}, "b": {2.08, 6.930}, "": {0.17, 0.577}}
		for k, w := range want {
			if g := sums[k]; fmt.Sprintf("%.3f %.3f", g[0], g[1]) != fmt.Sprintf("%.3f %.3f", w[0], w[1]) {
				t.Errorf("by device %v: %q sums to %v, want %v", byDevice, k, g, w)
			}
		}
	}
	var jl bytes.Buffer
	if err := WriteFOCUSJSONL(&jl, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"x_Co2eKg":1.238,`, `"x_EnergyCost":0.37,`} {
		if !strings.Contains(jl.String(), s) {
			t.Errorf("JSON lines lack %s", s)
		}
	}
}

// TestEnergyRandomReconciles: on random fleets, under every policy and
// idle rule, the lines' energy adds up to the ledger's (every GPU's
// energy, summed here from the rows), the lines' energy cost and CO2e add
// up to their period totals, and those are the total kWh x the rate (and
// x the intensity) rounded once.
func TestEnergyRandomReconciles(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	step := 15 * time.Minute
	for i := 0; i < 24; i++ {
		rng := rand.New(rand.NewSource(int64(1000 + i)))
		gpus, tenants := randomFleet(rng, from, to, step)
		rows := ledgerRows(gpus, tenants, step)
		cur := []string{"USD", "JPY", "KWD"}[rng.Intn(3)]
		policy := []string{"allocation", "usage", "flat"}[rng.Intn(3)]
		idle := []string{"platform", "shared"}[rng.Intn(2)]
		rate := fmt.Sprintf("%d.%06d", rng.Intn(2), rng.Intn(1_000_000))
		intensity := fmt.Sprintf("%d.%03d", rng.Intn(900), rng.Intn(1000))
		y := fmt.Sprintf("currency: %s\npolicy: %s\nidle: %s\nenergy: {rate: %s, carbonIntensity: %s}\n", cur, policy, idle, rate, intensity)
		if policy == "flat" {
			y += "slotRates: {A100-SXM4-80GB: 800, H100-SXM5-80GB: 1200, L4: 300, MYSTERY-GPU: 50}\n"
		} else {
			y += "defaultRate: 1.5\n"
		}
		b := book(t, y)
		r := mustBuild(t, &memSource{rows: rows}, b, from, to)

		// The ledger's energy, independently: every row's joules, fixed
		// to milli-joules per (day, group) as the report reads them.
		var ledgerMJ float64
		for _, row := range rows {
			if !row.IntervalStart.Before(from) && row.IntervalStart.Before(to) {
				ledgerMJ += row.EnergyJoules * 1000
			}
		}
		kwh := new(big.Rat)
		var cost, grams int64
		for _, l := range r.Lines {
			if l.Type == LineRounding {
				continue
			}
			kwh.Add(kwh, l.EnergyKWh)
			cost += l.EnergyCost
			grams += l.Co2eGrams
		}
		kf, _ := kwh.Float64()
		// Each (day, group) sum is fixed to the milli-joule once: at most
		// half a milli-joule each, and there are fewer groups than rows.
		if diff := kf*3.6e9 - ledgerMJ; diff > 0.5*float64(len(rows)) || diff < -0.5*float64(len(rows)) {
			t.Errorf("case %d: lines hold %f kWh, the ledger %f", i, kf, ledgerMJ/3.6e9)
		}
		if kwh.Cmp(r.Energy.KWh) != 0 || cost != r.Energy.Cost || grams != r.Energy.Co2eGrams {
			t.Errorf("case %d: lines %s kWh, %d, %d g; totals %s, %d, %d g", i, kwh.FloatString(6), cost, grams,
				r.Energy.KWh.FloatString(6), r.Energy.Cost, r.Energy.Co2eGrams)
		}
		minor := int64(1)
		for range b.Currency.MinorUnit {
			minor *= 10
		}
		rt, _ := new(big.Rat).SetString(rate)
		in, _ := new(big.Rat).SetString(intensity)
		if want := roundRef(new(big.Rat).Mul(new(big.Rat).Mul(kwh, rt), big.NewRat(minor, 1))); cost != want {
			t.Errorf("case %d: energy cost %d, want %s kWh x %s = %d", i, cost, kwh.FloatString(6), rate, want)
		}
		if want := roundRef(new(big.Rat).Mul(kwh, in)); grams != want {
			t.Errorf("case %d: CO2e %d g, want %d", i, grams, want)
		}
		var teamCost, teamGrams int64
		for _, tm := range r.Teams {
			teamCost += tm.EnergyCost
			teamGrams += tm.Co2eGrams
		}
		if teamCost+r.Energy.PlatformCost != cost || teamGrams+r.Energy.PlatformCo2eGrams != grams {
			t.Errorf("case %d: teams + platform %d, %d g; lines %d, %d g", i, teamCost+r.Energy.PlatformCost, teamGrams+r.Energy.PlatformCo2eGrams, cost, grams)
		}
		// Every line is its exact figure rounded down or up.
		for _, l := range r.Lines {
			if l.Type == LineRounding {
				continue
			}
			ex := new(big.Rat).Mul(new(big.Rat).Mul(l.EnergyKWh, rt), big.NewRat(minor, 1))
			if d := new(big.Rat).Sub(big.NewRat(l.EnergyCost, 1), ex); d.Cmp(big.NewRat(1, 1)) >= 0 || d.Cmp(big.NewRat(-1, 1)) <= 0 {
				t.Errorf("case %d: line %s/%s energy cost %d, exact %s", i, l.Team, l.Type, l.EnergyCost, ex.FloatString(4))
			}
		}
	}
}

// TestEnergyPerNodeByHand: energyDay with the A100's node n1 on a
// 30 gCO2e/kWh grid and the H100's node n2 on 380, other nodes 400:
//
//	a         3 kWh on n1    x 30  =   90 g
//	b         16.8 kWh on n2 x 380 = 6384 g
//	platform  1.4 kWh on n1  x 30  =   42 g   (idle: shared: a's idle share)
//	total                            6516 g
//
// through the embedded ledger (its per-node sums) and the test's own
// source alike.
func TestEnergyPerNodeByHand(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	rows := energyDay()
	for _, idle := range []string{"platform", "shared"} {
		y := strings.Replace(fmt.Sprintf(energyBookYAML, idle), "  carbonIntensity: 412.5 gCO2e/kWh\n",
			"  carbonIntensity: 400\n  carbonIntensityByNode: {n1: 30, n2: 0.38 kgCO2e/kWh}\n", 1)
		want := map[string]string{"a/charge": "0.090", "b/charge": "6.384", "/platform": "0.042"}
		if idle == "shared" {
			want = map[string]string{"a/charge": "0.090", "a/idle_share": "0.042", "b/charge": "6.384"}
		}
		for name, src := range map[string]Source{"memory": &memSource{rows: rows}, "file": fileLedger(t, rows, nil)} {
			r := mustBuild(t, src, book(t, y), from, to)
			got := map[string]string{}
			for _, l := range r.Lines {
				if l.Type != LineRounding {
					got[l.Team+"/"+string(l.Type)] = Kg(l.Co2eGrams)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || r.Energy.Co2eGrams != 6516 {
				t.Errorf("%s, idle %s: %v, total %d g\nwant %v, 6516 g", name, idle, got, r.Energy.Co2eGrams, want)
			}
			// The money and the energy cost do not depend on the nodes.
			if r.Money(r.Total) != "156.00" || r.Energy.Cost != 262 {
				t.Errorf("%s, idle %s: total %s, energy cost %d", name, idle, r.Money(r.Total), r.Energy.Cost)
			}
		}
	}
}

// TestEnergyPerNodeRandom: on random fleets, per-node intensities that
// are all the default give exactly the single-intensity figures (the
// per-node split follows the energy's split line by line), and random
// per-node intensities give lines that add up to the total, which is
// the rows' energy x their node's intensity rounded once (to the
// milli-joule fixing of the sums).
func TestEnergyPerNodeRandom(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	step := 15 * time.Minute
	for i := 0; i < 16; i++ {
		rng := rand.New(rand.NewSource(int64(2000 + i)))
		gpus, tenants := randomFleet(rng, from, to, step)
		rows := ledgerRows(gpus, tenants, step)
		policy := []string{"allocation", "usage"}[rng.Intn(2)]
		idle := []string{"platform", "shared"}[rng.Intn(2)]
		head := fmt.Sprintf("currency: USD\npolicy: %s\nidle: %s\ndefaultRate: 1.5\nenergy:\n  carbonIntensity: 321.5\n", policy, idle)
		src := &memSource{rows: rows}
		single := mustBuild(t, src, book(t, head), from, to)
		same := mustBuild(t, src, book(t, head+"  carbonIntensityByNode: {node-0: 321.5, node-1: 321.50, node-9: 321.5}\n"), from, to)
		for j := range single.Lines {
			if single.Lines[j].Co2eGrams != same.Lines[j].Co2eGrams {
				t.Errorf("case %d line %d: %d g with one intensity, %d g with the same per node", i, j, single.Lines[j].Co2eGrams, same.Lines[j].Co2eGrams)
			}
		}
		intensity := map[string]int64{"node-0": int64(rng.Intn(800)), "node-1": int64(rng.Intn(800)), "node-2": int64(rng.Intn(800))}
		y := head + "  carbonIntensityByNode:\n"
		for n, g := range intensity {
			y += fmt.Sprintf("    %s: %d\n", n, g)
		}
		r := mustBuild(t, src, book(t, y), from, to)
		var lines int64
		for _, l := range r.Lines {
			lines += l.Co2eGrams
		}
		var want float64
		for _, row := range rows {
			if row.IntervalStart.Before(from) || !row.IntervalStart.Before(to) {
				continue
			}
			x := 321.5
			if g, ok := intensity[row.Node]; ok {
				x = float64(g)
			}
			want += row.EnergyJoules / 3.6e6 * x
		}
		if lines != r.Energy.Co2eGrams || float64(lines) < want-1 || float64(lines) > want+1 {
			t.Errorf("case %d: lines %d g, total %d g, rows x their node's intensity %.3f g", i, lines, r.Energy.Co2eGrams, want)
		}
	}
}
