package report

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
)

var (
	allModes  = []string{"exclusive", "timeslicing", "mps", "mig", "mig+timeslicing", "mig+mps", "hami"}
	allModels = []string{"A100-SXM4-80GB", "H100-SXM5-80GB", "L4", "MYSTERY-GPU"} // the last is not in the books
	allTeams  = []string{"search", "ads", "=cmd", "r&d, \"core\"", "vision"}
	allZones  = []string{"UTC", "America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe"}
)

// randomFleet makes GPUs observed over random parts of [from, to) and pods
// of any lifetime (seconds to the whole span) in slots whose shares never
// add up to more than one GPU.
func randomFleet(rng *rand.Rand, from, to time.Time, step time.Duration) ([]gpu, []tenant) {
	steps := int(to.Sub(from) / step)
	var gpus []gpu
	var tenants []tenant
	for g := 0; g < 1+rng.Intn(5); g++ {
		a, b := rng.Intn(steps), rng.Intn(steps)
		if a > b {
			a, b = b, a
		}
		if rng.Intn(3) == 0 {
			a, b = 0, steps // the whole span
		}
		gp := gpu{node: fmt.Sprintf("node-%d", g/2), uuid: fmt.Sprintf("GPU-%d", g), model: allModels[rng.Intn(len(allModels))],
			mode: allModes[rng.Intn(len(allModes))], from: from.Add(time.Duration(a) * step), to: from.Add(time.Duration(b+1) * step),
			unattributed: []float64{0, 0.01, 0.05}[rng.Intn(3)]}
		gpus = append(gpus, gp)
		slots := 1 + rng.Intn(7)
		for s := 0; s < slots; s++ {
			share := 1 / float64(slots)
			if gp.mode == "mig" {
				share = float64(1+rng.Intn(7/slots)) / 7
			}
			for t := gp.from.Add(-time.Duration(rng.Intn(7200)) * time.Second); t.Before(gp.to); {
				start := t.Add(time.Duration(rng.Intn(6*3600)) * time.Second)
				life := []time.Duration{time.Duration(1+rng.Intn(120)) * time.Second, time.Duration(1+rng.Intn(3600)) * time.Second,
					time.Duration(1+rng.Intn(86400)) * time.Second, to.Sub(from)}[rng.Intn(4)]
				tenants = append(tenants, tenant{gpu: g, ns: "ns-" + fmt.Sprint(rng.Intn(4)), pod: fmt.Sprintf("p%d", len(tenants)),
					container: "main", team: allTeams[rng.Intn(len(allTeams))], share: share, busy: rng.Float64() * 1.5,
					start: start, end: start.Add(life)})
				t = start.Add(life)
			}
		}
	}
	return gpus, tenants
}

func randomRate(rng *rand.Rand) string {
	return fmt.Sprintf("%d.%09d", rng.Intn(10), rng.Intn(1_000_000_000))
}

// allPolicies are the billing policies the property tests draw:
// "memory" is usage with a random memoryWeight.
var allPolicies = []string{"allocation", "usage", "memory", "flat"}

// testMemoryMiB sizes the models without a built-in size; the tenants'
// memory is drawn against these.
var testMemoryMiB = map[string]float64{"A100-SXM4-80GB": 81920, "H100-SXM5-80GB": 81920, "L4": 23034, "MYSTERY-GPU": 50000}

func randomBook(t testing.TB, rng *rand.Rand, policy, idle string) *pricebook.Book {
	cur := []string{"USD", "JPY", "KWD", "EUR"}[rng.Intn(4)]
	zone := allZones[rng.Intn(len(allZones))]
	switch policy {
	case "flat":
		// Every model needs a slot price: flat has no default.
		y := fmt.Sprintf("currency: %s\ntimezone: %s\npolicy: flat\nidle: %s\nslotRates:\n", cur, zone, idle)
		for _, m := range allModels {
			y += fmt.Sprintf("  %q: %d.%02d\n", m, rng.Intn(3000), rng.Intn(100))
		}
		return book(t, y)
	case "memory":
		rates := map[string]string{}
		for _, m := range allModels[:3] {
			rates[m] = randomRate(rng)
		}
		b := bookFor(t, cur, zone, "usage", idle, rates, randomRate(rng))
		w := []string{"0.3", "1", "0.5", fmt.Sprintf("0.%03d", rng.Intn(1000))}[rng.Intn(4)]
		y := fmt.Sprintf("currency: %s\ntimezone: %s\npolicy: usage\nidle: %s\nmemoryWeight: %s\nmemoryMiB: {L4: 23034, MYSTERY-GPU: 50000}\ndefaultRate: %s\nrates:\n",
			cur, zone, idle, w, b.DefaultRate.String())
		for m, r := range b.Rates {
			y += fmt.Sprintf("  %q: %s\n", m, r.String())
		}
		return book(t, y)
	}
	rates := map[string]string{}
	for _, m := range allModels[:3] {
		rates[m] = randomRate(rng)
	}
	return bookFor(t, cur, zone, policy, idle, rates, randomRate(rng))
}

// randomMemory gives each tenant a memory footprint: up to its share of
// the device, or on a third of the GPUs (a faulty collector, a leak no
// driver would allow) up to 6 times it, so some days report more memory
// than the GPUs have and the clamp is exercised.
func randomMemory(rng *rand.Rand, gpus []gpu, tenants []tenant) {
	over := make([]float64, len(gpus))
	for g := range over {
		over[g] = []float64{1, 1, 6}[rng.Intn(3)]
	}
	for i := range tenants {
		if rng.Intn(5) == 0 {
			continue // no memory recorded
		}
		g := tenants[i].gpu
		tenants[i].memMiB = tenants[i].share * testMemoryMiB[gpus[g].model] * rng.Float64() * over[g]
	}
}

// checkPolicyMoney is what every policy must hold on any ledger: the
// money reconciles to the policy's defined total (capacity x rate, or
// under flat slot-months x slot price), no line but the rounding line is
// negative, every line's amount is its charged hours x its rate (so a
// reader, or a FOCUS file, can multiply them back), and memory shares
// never bill more than a model's capacity.
func checkPolicyMoney(t *testing.T, r *Report, b *pricebook.Book, gpus []gpu, step time.Duration, from, to time.Time) {
	t.Helper()
	capSecs := capacitySeconds(gpus, step, from, to)
	if b.Policy == pricebook.PolicyFlat {
		total, perModel := expectedFlat(t, b, flatCapacity(gpus, step, from, to, b.Location))
		checkReconcilesTo(t, r, b, total, perModel, int64(len(capSecs)))
	} else {
		checkReconciles(t, r, b, capSecs)
	}
	memory := map[string]*big.Rat{}
	for _, l := range r.Lines {
		if l.Type == LineRounding {
			continue
		}
		if l.Amount < 0 || l.Exact.Sign() < 0 {
			t.Errorf("line %s/%s/%s/%s is negative: %s (exact %s)", l.Team, l.GPUModel, l.SharingMode, l.Type, r.Money(l.Amount), l.Exact.FloatString(6))
		}
		if got := new(big.Rat).Mul(l.ChargedHours(b.Policy), l.Rate.Rat()); got.Cmp(l.Exact) != 0 {
			t.Errorf("line %s/%s/%s: charged %s h x rate %s = %s, exact amount %s", l.Team, l.GPUModel, l.Type,
				l.ChargedHours(b.Policy).FloatString(6), l.Rate, got.FloatString(9), l.Exact.FloatString(9))
		}
		if l.MemoryHours != nil {
			if memory[l.GPUModel] == nil {
				memory[l.GPUModel] = new(big.Rat)
			}
			memory[l.GPUModel].Add(memory[l.GPUModel], l.MemoryHours)
		}
	}
	for m, h := range memory {
		// The ledger's used column, which the clamp holds memory to, is
		// fixed to micro-seconds per aggregate: allow a millisecond.
		if h.Cmp(big.NewRat(capSecs[m]*1000+1, 3600*1000)) > 0 {
			t.Errorf("model %s: memory shares bill %s h, capacity %d s", m, h.FloatString(6), capSecs[m])
		}
	}
}

// TestRandomLedgersReconcile: for every policy and idle handling, on random
// ledgers, the file total is capacity x rate rounded once (capacity counted
// from the GPUs' observed intervals, not from the ledger's columns), each
// model's lines add up to its own capacity x rate rounded, every line is
// its exact amount rounded down or up, and each team's hours match a
// direct float sum of its rows.
func TestRandomLedgersReconcile(t *testing.T) {
	iterations := 25
	if testing.Short() {
		iterations = 10
	}
	for pi, policy := range allPolicies {
		for _, idle := range []string{"platform", "shared"} {
			t.Run(policy+"/"+idle, func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(len(policy)*7 + len(idle) + 100*pi)))
				for it := 0; it < iterations; it++ {
					step := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}[rng.Intn(3)]
					base := time.Date(2026, 3, 5+rng.Intn(5), 0, 0, 0, 0, time.UTC)
					span := time.Duration(1+rng.Intn(4)) * 24 * time.Hour
					gpus, tenants := randomFleet(rng, base, base.Add(span), step)
					randomMemory(rng, gpus, tenants)
					rows := ledgerRows(gpus, tenants, step)
					b := randomBook(t, rng, policy, idle)
					from := base.Add(time.Duration(rng.Intn(int(span/step)/2)) * step)
					if rng.Intn(2) == 0 {
						from = base.Add(-time.Duration(rng.Intn(3600)) * time.Second) // not on an interval edge
					}
					to := from.Add(time.Duration(1+rng.Intn(int(span/time.Minute))) * time.Minute)
					src := &memSource{rows: rows}
					r := mustBuild(t, src, b, from, to)
					checkPolicyMoney(t, r, b, gpus, step, from, to)
					checkTeamHours(t, r, rows, from, to)
					checkIdleShares(t, r, rows, from, to)
					if t.Failed() {
						t.Fatalf("iteration %d: %d GPUs, %d tenants, step %s, zone %s, period [%s, %s)", it, len(gpus), len(tenants), step,
							b.Timezone, from.Format(time.RFC3339), to.Format(time.RFC3339))
					}
				}
			})
		}
	}
}

// TestRandomLedgersThroughFileStore runs a few random ledgers through the
// embedded store's own Aggregate, not the test's.
func TestRandomLedgersThroughFileStore(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for it := 0; it < 8; it++ {
		policy, idle := allPolicies[it%4], []string{"platform", "shared"}[it/4]
		step := 5 * time.Minute
		base := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
		gpus, tenants := randomFleet(rng, base, base.Add(3*24*time.Hour), step)
		randomMemory(rng, gpus, tenants)
		rows := ledgerRows(gpus, tenants, step)
		b := randomBook(t, rng, policy, idle)
		st := fileLedger(t, rows, nil)
		from, to := base.Add(7*time.Hour), base.Add(65*time.Hour)
		r := mustBuild(t, st, b, from, to)
		checkPolicyMoney(t, r, b, gpus, step, from, to)
		checkTeamHours(t, r, rows, from, to)
		checkIdleShares(t, r, rows, from, to)
	}
}

// checkReconciles checks the money against capacity x rate.
func checkReconciles(t *testing.T, r *Report, b *pricebook.Book, capSecs map[string]int64) {
	t.Helper()
	wantTotal, wantModel := expectedTotal(t, b, capSecs)
	checkReconcilesTo(t, r, b, wantTotal, wantModel, int64(len(capSecs)))
}

// checkReconcilesTo checks the money against the policy's total and its
// per-model totals, each rounded once.
func checkReconcilesTo(t *testing.T, r *Report, b *pricebook.Book, wantTotal int64, wantModel map[string]int64, models int64) {
	t.Helper()
	if r.Total != wantTotal {
		t.Errorf("total %s, want capacity x rate = %s", r.Money(r.Total), r.Money(wantTotal))
	}
	var sum int64
	perModel := map[string]int64{}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(b.Currency.MinorUnit)), nil))
	for _, l := range r.Lines {
		sum += l.Amount
		if l.Type == LineRounding {
			continue
		}
		perModel[l.GPUModel] += l.Amount
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(l.Amount), new(big.Rat).Mul(l.Exact, scale))
		if diff.Abs(diff).Cmp(big.NewRat(1, 1)) >= 0 {
			t.Errorf("line %+v: amount %d is not its exact amount %s rounded once", l, l.Amount, l.Exact.FloatString(6))
		}
	}
	if sum != r.Total {
		t.Errorf("lines add up to %d, total says %d", sum, r.Total)
	}
	for m, w := range wantModel {
		if w != 0 && perModel[m] != w {
			t.Errorf("model %s: lines add up to %s, the policy's capacity x price = %s", m, r.Money(perModel[m]), r.Money(w))
		}
	}
	if r.Rounding > models || r.Rounding < -models {
		t.Errorf("rounding line %d minor units for %d models", r.Rounding, models)
	}
	// The CSV says the same: its amounts add up to the total.
	recs := csvRecords(t, r)
	csvSum := new(big.Rat)
	for _, rec := range recs[1:] {
		x, ok := new(big.Rat).SetString(rec[12])
		if !ok {
			t.Fatalf("amount %q", rec[12])
		}
		csvSum.Add(csvSum, x)
	}
	if got := csvSum.Mul(csvSum, scale); !got.IsInt() || got.Num().Int64() != wantTotal {
		t.Errorf("CSV amounts add up to %s minor units, want %d", got.FloatString(3), wantTotal)
	}
}

// checkTeamHours compares each team's charge lines with a float sum of its
// container rows.
func checkTeamHours(t *testing.T, r *Report, rows []attribution.Row, from, to time.Time) {
	t.Helper()
	wantA, wantU := map[string]float64{}, map[string]float64{}
	for _, row := range rows {
		if row.Kind != attribution.KindContainer || row.IntervalStart.Before(from) || !row.IntervalStart.Before(to) {
			continue
		}
		wantA[row.Team] += row.AllocatedGPUSeconds / 3600
		wantU[row.Team] += row.UsedGPUSeconds / 3600
	}
	gotA, gotU := map[string]float64{}, map[string]float64{}
	for _, l := range r.Lines {
		if l.Type == LineCharge {
			gotA[l.Team] += ratF(l.AllocatedHours)
			gotU[l.Team] += ratF(l.UsedHours)
		}
	}
	for _, team := range sortedTeams(wantA) {
		if math.Abs(gotA[team]-wantA[team]) > 1e-6 || math.Abs(gotU[team]-wantU[team]) > 1e-6 {
			t.Errorf("team %q: allocated %.9f used %.9f h, want %.9f %.9f", team, gotA[team], gotU[team], wantA[team], wantU[team])
		}
	}
	if len(gotA) != len(wantA) {
		t.Errorf("teams %v, want %v", sortedTeams(gotA), sortedTeams(wantA))
	}
}

// checkIdleShares recomputes, in float, each team's share of the capacity
// nobody was charged for: per local day and model, in proportion to the
// team's charged hours. Under memory weighting a container is charged
// (1-w) x used + w x memory / device memory, the memory scaled down where a
// day's containers on a model report more than its capacity.
func checkIdleShares(t *testing.T, r *Report, rows []attribution.Row, from, to time.Time) {
	t.Helper()
	b := r.Book
	column := func(row attribution.Row) float64 {
		if b.Policy == pricebook.PolicyUsage {
			return row.UsedGPUSeconds / 3600
		}
		return row.AllocatedGPUSeconds / 3600
	}
	w := 0.0
	if b.MemoryWeighted() {
		w, _ = b.MemoryWeight.Float64()
	}
	memory := func(row attribution.Row) float64 {
		mib, _ := b.MemoryMiBFor(row.GPUModel)
		return row.MemoryMiBSeconds / float64(mib) / 3600
	}
	type dm struct{ day, model string }
	capacity, mem, used := map[dm]float64{}, map[dm]float64{}, map[dm]float64{}
	in := func(row attribution.Row) bool { return !row.IntervalStart.Before(from) && row.IntervalStart.Before(to) }
	key := func(row attribution.Row) dm {
		return dm{row.IntervalStart.In(b.Location).Format("2006-01-02"), row.GPUModel}
	}
	for _, row := range rows {
		if !in(row) {
			continue
		}
		capacity[key(row)] += column(row)
		used[key(row)] += row.UsedGPUSeconds / 3600
		if row.Kind == attribution.KindContainer && w > 0 {
			mem[key(row)] += memory(row)
		}
	}
	charged := func(row attribution.Row) float64 {
		if w == 0 {
			return column(row)
		}
		k, m := key(row), memory(row)
		if mem[k] > used[k] {
			m *= used[k] / mem[k]
		}
		return (1-w)*row.UsedGPUSeconds/3600 + w*m
	}
	weight := map[dm]float64{}
	teamW := map[dm]map[string]float64{}
	for _, row := range rows {
		if !in(row) || row.Kind != attribution.KindContainer {
			continue
		}
		k := key(row)
		weight[k] += charged(row)
		if teamW[k] == nil {
			teamW[k] = map[string]float64{}
		}
		teamW[k][row.Team] += charged(row)
	}
	want, platform := map[string]float64{}, 0.0
	for k, c := range capacity {
		p := c - weight[k]
		if b.Idle == pricebook.IdleShared && weight[k] > 1e-9 {
			for team, tw := range teamW[k] {
				want[team] += p * tw / weight[k]
			}
		} else {
			platform += p
		}
	}
	got, gotPlatform := map[string]float64{}, 0.0
	for _, l := range r.Lines {
		switch l.Type {
		case LineIdleShare:
			got[l.Team] += ratF(l.ChargedHours(b.Policy))
		case LinePlatform:
			gotPlatform += ratF(l.ChargedHours(b.Policy))
		}
	}
	for team, w := range want {
		if math.Abs(got[team]-w) > 1e-6 {
			t.Errorf("team %q idle share %.9f h, want %.9f", team, got[team], w)
		}
	}
	if math.Abs(gotPlatform-platform) > 1e-6 {
		t.Errorf("platform %.9f h, want %.9f", gotPlatform, platform)
	}
}
