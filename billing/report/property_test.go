package report

import (
	"bytes"
	"encoding/csv"
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

func randomBook(t testing.TB, rng *rand.Rand, policy, idle string) *pricebook.Book {
	rates := map[string]string{}
	for _, m := range allModels[:3] {
		rates[m] = randomRate(rng)
	}
	cur := []string{"USD", "JPY", "KWD", "EUR"}[rng.Intn(4)]
	return bookFor(t, cur, allZones[rng.Intn(len(allZones))], policy, idle, rates, randomRate(rng))
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
	for _, policy := range []string{"allocation", "usage"} {
		for _, idle := range []string{"platform", "shared"} {
			t.Run(policy+"/"+idle, func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(len(policy)*7 + len(idle))))
				for it := 0; it < iterations; it++ {
					step := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}[rng.Intn(3)]
					base := time.Date(2026, 3, 5+rng.Intn(5), 0, 0, 0, 0, time.UTC)
					span := time.Duration(1+rng.Intn(4)) * 24 * time.Hour
					gpus, tenants := randomFleet(rng, base, base.Add(span), step)
					rows := ledgerRows(gpus, tenants, step)
					b := randomBook(t, rng, policy, idle)
					from := base.Add(time.Duration(rng.Intn(int(span/step)/2)) * step)
					if rng.Intn(2) == 0 {
						from = base.Add(-time.Duration(rng.Intn(3600)) * time.Second) // not on an interval edge
					}
					to := from.Add(time.Duration(1+rng.Intn(int(span/time.Minute))) * time.Minute)
					src := &memSource{rows: rows}
					r := mustBuild(t, src, b, from, to)
					checkReconciles(t, r, b, capacitySeconds(gpus, step, from, to))
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
	for it := 0; it < 4; it++ {
		policy, idle := []string{"allocation", "usage"}[it%2], []string{"platform", "shared"}[it/2]
		step := 5 * time.Minute
		base := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
		gpus, tenants := randomFleet(rng, base, base.Add(3*24*time.Hour), step)
		rows := ledgerRows(gpus, tenants, step)
		b := randomBook(t, rng, policy, idle)
		st := fileLedger(t, rows, nil)
		from, to := base.Add(7*time.Hour), base.Add(65*time.Hour)
		r := mustBuild(t, st, b, from, to)
		checkReconciles(t, r, b, capacitySeconds(gpus, step, from, to))
		checkTeamHours(t, r, rows, from, to)
		checkIdleShares(t, r, rows, from, to)
	}
}

// checkReconciles checks the money against capacity x rate.
func checkReconciles(t *testing.T, r *Report, b *pricebook.Book, capSecs map[string]int64) {
	t.Helper()
	wantTotal, wantModel := expectedTotal(t, b, capSecs)
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
			t.Errorf("model %s: lines add up to %s, capacity %d s x rate = %s", m, r.Money(perModel[m]), capSecs[m], r.Money(w))
		}
	}
	if n := int64(len(capSecs)); r.Rounding > n || r.Rounding < -n {
		t.Errorf("rounding line %d minor units for %d models", r.Rounding, n)
	}
	// The CSV says the same: its amounts add up to the total.
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
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
// team's charged hours.
func checkIdleShares(t *testing.T, r *Report, rows []attribution.Row, from, to time.Time) {
	t.Helper()
	usage := r.Book.Policy == pricebook.PolicyUsage
	charged := func(row attribution.Row) float64 {
		if usage {
			return row.UsedGPUSeconds / 3600
		}
		return row.AllocatedGPUSeconds / 3600
	}
	type dm struct{ day, model string }
	pool, weight := map[dm]float64{}, map[dm]float64{}
	teamW := map[dm]map[string]float64{}
	for _, row := range rows {
		if row.IntervalStart.Before(from) || !row.IntervalStart.Before(to) {
			continue
		}
		k := dm{row.IntervalStart.In(r.Book.Location).Format("2006-01-02"), row.GPUModel}
		if row.Kind != attribution.KindContainer {
			pool[k] += charged(row)
			continue
		}
		weight[k] += charged(row)
		if teamW[k] == nil {
			teamW[k] = map[string]float64{}
		}
		teamW[k][row.Team] += charged(row)
	}
	want, platform := map[string]float64{}, 0.0
	for k, p := range pool {
		if r.Book.Idle == pricebook.IdleShared && weight[k] > 1e-9 {
			for team, w := range teamW[k] {
				want[team] += p * w / weight[k]
			}
		} else {
			platform += p
		}
	}
	got, gotPlatform := map[string]float64{}, 0.0
	for _, l := range r.Lines {
		switch l.Type {
		case LineIdleShare:
			got[l.Team] += ratF(l.ChargedHours(r.Book.Policy))
		case LinePlatform:
			gotPlatform += ratF(l.ChargedHours(r.Book.Policy))
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
