package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math/big"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
	"github.com/gpuledger/gpuledger/ledger"
)

var priceModels = []string{"A100-SXM4-80GB", "H100-SXM5-80GB", "L4"}

// exactRows is a ledger of whole GPUs in 15-minute intervals whose
// seconds are whole numbers, so that every sum below is exact: each
// interval a GPU is held by one team (allocated 900 s, used a random
// part) or by nobody.
func exactRows(rng *rand.Rand, from, to time.Time) []attribution.Row {
	const step = 15 * time.Minute
	teams := []string{"search", "ads", "vision"}
	var rows []attribution.Row
	for g := 0; g < 1+rng.Intn(3); g++ {
		model := priceModels[rng.Intn(len(priceModels))]
		uuid := fmt.Sprintf("GPU-%d", g)
		for s := from; s.Before(to); s = s.Add(step) {
			base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(step), Node: "node-0", GPUUUID: uuid, SliceID: uuid,
				GPUModel: model, SharingMode: "exclusive", Method: attribution.MethodMeasured}
			var alloc, used float64
			if rng.Intn(4) > 0 {
				c := base
				c.Kind, c.Team, c.Namespace, c.Pod, c.Container, c.PodUID = attribution.KindContainer, teams[rng.Intn(len(teams))], "ns", "p", "main", "uid"
				alloc, used = 900, float64(rng.Intn(901))
				c.AllocatedGPUSeconds, c.UsedGPUSeconds = alloc, used
				rows = append(rows, c)
			}
			un, id := base, base
			un.Kind, un.AllocatedGPUSeconds = attribution.KindUnallocated, 900-alloc
			id.Kind, id.UsedGPUSeconds = attribution.KindIdle, 900-used
			rows = append(rows, un, id)
		}
	}
	return rows
}

func randomRates(rng *rand.Rand) map[string]string {
	out := map[string]string{}
	for _, m := range priceModels {
		out[m] = fmt.Sprintf("%d.%03d", rng.Intn(5), rng.Intn(1000))
	}
	return out
}

func ratesBook(t testing.TB, zone, policy string, rates map[string]string) *pricebook.Book {
	return bookFor(t, "USD", zone, policy, "platform", rates, "1.00")
}

func record(t testing.TB, st ledger.PriceBookStore, b *pricebook.Book, eff, now time.Time) bool {
	t.Helper()
	ok, err := st.RecordPriceBook(context.Background(), ledger.PriceBookRecord{EffectiveFrom: eff, RecordedAt: now, SHA256: b.SHA256, Source: b.Source, Body: b.Raw}, now)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestPriceChangesPricedHourByHour: random books take effect at random
// whole hours in and around a period; the bill must equal pricing each
// ledger interval on its own at the book in force at its hour (the
// latest recorded whose instant is at or before it, the first before
// any), and its total each book's part rounded once per model.
func TestPriceChangesPricedHourByHour(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewSource(seed))
		zone := allZones[rng.Intn(len(allZones))]
		policy := []string{"allocation", "usage"}[rng.Intn(2)]
		loc, _ := time.LoadLocation(zone)
		from := time.Date(2026, 11, 1, 0, 0, 0, 0, loc)
		to := from.AddDate(0, 0, 3)
		rows := exactRows(rng, from, to)
		st := fileLedger(t, rows, nil)

		// The books, recorded in force order at random whole hours.
		type rec struct {
			book *pricebook.Book
			eff  time.Time
		}
		var books []rec
		eff := from.Add(-24 * time.Hour).Truncate(time.Hour)
		for range 1 + rng.Intn(4) {
			eff = eff.Add(time.Duration(rng.Intn(40)) * time.Hour)
			b := ratesBook(t, zone, policy, randomRates(rng))
			if record(t, st, b, eff, to) {
				books = append(books, rec{b, eff})
			}
		}
		cli := books[len(books)-1].book
		if rng.Intn(2) == 0 {
			// Edited but not recorded: it must price no hour of the
			// period (it applies from the hour after now).
			cli = ratesBook(t, zone, policy, map[string]string{"A100-SXM4-80GB": "999", "H100-SXM5-80GB": "999", "L4": "999"})
		}
		r, err := BuildDated(ctx, st, cli, from, to, to)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}

		// By hand: each row at the book in force at its hour.
		inForce := func(at time.Time) int {
			i := 0
			for j, b := range books {
				if !b.eff.After(at) {
					i = j
				}
			}
			return i
		}
		type key struct{ team, model string }
		want := map[key]*big.Rat{}
		perBookModel := map[[2]string]*big.Rat{} // by book index and model
		for _, row := range rows {
			secs := row.AllocatedGPUSeconds
			if policy == "usage" {
				secs = row.UsedGPUSeconds
			}
			i := inForce(row.IntervalStart.Truncate(time.Hour))
			rate, _ := books[i].book.RateFor(row.GPUModel)
			x := new(big.Rat).Mul(new(big.Rat).SetFloat64(secs), rate.Rat())
			x.Quo(x, big.NewRat(3600, 1))
			k := key{row.Team, row.GPUModel}
			if want[k] == nil {
				want[k] = new(big.Rat)
			}
			want[k].Add(want[k], x)
			bk := [2]string{fmt.Sprint(i), row.GPUModel}
			if perBookModel[bk] == nil {
				perBookModel[bk] = new(big.Rat)
			}
			perBookModel[bk].Add(perBookModel[bk], x)
		}
		got := map[key]*big.Rat{}
		var sum int64
		for _, l := range r.Lines {
			sum += l.Amount
			if l.Type == LineRounding {
				continue
			}
			k := key{l.Team, l.GPUModel}
			if got[k] == nil {
				got[k] = new(big.Rat)
			}
			got[k].Add(got[k], l.Exact)
			cents := new(big.Rat).Mul(l.Exact, big.NewRat(100, 1))
			if d := new(big.Rat).Sub(cents, big.NewRat(l.Amount, 1)); d.Cmp(big.NewRat(-1, 1)) <= 0 || d.Cmp(big.NewRat(1, 1)) >= 0 {
				t.Errorf("seed %d: line %+v: amount %d is not its exact %s rounded", seed, k, l.Amount, cents.FloatString(4))
			}
			if l.PricedBy == nil {
				t.Errorf("seed %d: line %+v names no price book", seed, k)
			}
		}
		for k, w := range want {
			if w.Sign() == 0 && got[k] == nil {
				continue
			}
			if got[k] == nil || got[k].Cmp(w) != 0 {
				t.Errorf("seed %d (%s, %s, %d books): %+v: bill %v, by hand %s", seed, zone, policy, len(books), k, got[k], w.FloatString(6))
			}
		}
		// Each book's part is rounded once, as a report of its own.
		perBook := map[string]*big.Rat{}
		for k, x := range perBookModel {
			if perBook[k[0]] == nil {
				perBook[k[0]] = new(big.Rat)
			}
			perBook[k[0]].Add(perBook[k[0]], x)
		}
		var total int64
		for _, x := range perBook {
			c := new(big.Rat).Mul(x, big.NewRat(100, 1))
			c.Add(c, big.NewRat(1, 2))
			total += new(big.Int).Div(c.Num(), c.Denom()).Int64()
		}
		if r.Total != total || sum != total {
			t.Errorf("seed %d: total %d, lines add up to %d, by hand %d", seed, r.Total, sum, total)
		}
		used := map[string]bool{}
		for _, row := range rows {
			used[books[inForce(row.IntervalStart.Truncate(time.Hour))].book.SHA256] = true
		}
		if len(r.PriceBooks) != len(used) {
			t.Errorf("seed %d: the report names %d books, %d priced hours", seed, len(r.PriceBooks), len(used))
		}
	}
}

// TestNoRecordedBooksIsBuild: a ledger that records no book bills
// exactly as Build, byte for byte in every format.
func TestNoRecordedBooksIsBuild(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 2)
	st := fileLedger(t, exactRows(rng, from, to), nil)
	b := ratesBook(t, "UTC", "allocation", randomRates(rng))
	old := mustBuild(t, st, b, from, to)
	r, err := BuildDated(context.Background(), st, b, from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{FormatCSV, FormatJSON, FormatHTML, FormatFOCUS} {
		var x, y bytes.Buffer
		if err := Write(context.Background(), &x, st, old, f); err != nil {
			t.Fatal(err)
		}
		if err := Write(context.Background(), &y, st, r, f); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("%s differs without recorded books", f)
		}
	}
}

// TestChangeMidMonthInEveryFormat: a book recorded mid-period prices the
// hours from its instant; every format names both books.
func TestChangeMidMonthInEveryFormat(t *testing.T) {
	ctx := context.Background()
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 2)
	// One A100 held whole by team search for two days.
	var rows []attribution.Row
	for s := from; s.Before(to); s = s.Add(time.Hour) {
		rows = append(rows, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "GPU-0", SliceID: "GPU-0",
			GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindContainer, Team: "search", Namespace: "ns",
			Pod: "p", Container: "c", PodUID: "u", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 1800, Method: attribution.MethodMeasured},
			attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "GPU-0", SliceID: "GPU-0",
				GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindIdle, UsedGPUSeconds: 1800, Method: attribution.MethodMeasured})
	}
	st := fileLedger(t, rows, nil)
	old := ratesBook(t, "UTC", "allocation", map[string]string{"A100-SXM4-80GB": "2.40"})
	change := from.Add(30 * time.Hour)
	record(t, st, old, from, to)
	newer := ratesBook(t, "UTC", "allocation", map[string]string{"A100-SXM4-80GB": "3.00"})
	record(t, st, newer, change, to)
	r, err := BuildDated(ctx, st, newer, from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	// 30 h at 2.40 and 18 h at 3.00: 72.00 + 54.00.
	if r.Total != 12600 {
		t.Fatalf("total %d, want 12600 (30 h x 2.40 + 18 h x 3.00)", r.Total)
	}
	for f, want := range map[Format][]string{
		FormatCSV:   {"price_book,price_book_effective_from", old.SHA256[:12] + ",2026-11-01T00:00:00Z", newer.SHA256[:12] + ",2026-11-02T06:00:00Z"},
		FormatJSON:  {`"price_books"`, `"sha256": "` + newer.SHA256 + `"`, `"effective_from": "2026-11-02T06:00:00Z"`, `"price_book": "` + old.SHA256[:12] + `"`},
		FormatHTML:  {`id="price-books"`, old.SHA256[:12], newer.SHA256[:12] + " (test-prices.yaml, effective 2026-11-02T06:00:00Z)"},
		FormatFOCUS: {"x_PriceBook,x_PriceBookEffectiveFrom", old.SHA256[:12] + ",2026-11-01T00:00:00Z", newer.SHA256[:12] + ",2026-11-02T06:00:00Z"},
	} {
		var b bytes.Buffer
		if err := Write(ctx, &b, st, r, f); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q", f, w)
			}
		}
		if f == FormatFOCUS {
			if vs, err := focusvalidate.Validate(bytes.NewReader(b.Bytes())); err != nil || len(vs) > 0 {
				t.Errorf("FOCUS file of two books: %v %v", err, vs)
			}
			checkFOCUSPieces(t, b.Bytes(), r.Total, change)
		}
	}
}

// checkFOCUSPieces: the rows' BilledCost adds up to the total, and each
// book's rows have its part as their charge period.
func checkFOCUSPieces(t *testing.T, data []byte, total int64, change time.Time) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	var cents int64
	starts := map[string]string{}
	for _, r := range recs[1:] {
		var whole, frac int64
		fmt.Sscanf(r[col["BilledCost"]], "%d.%d", &whole, &frac)
		cents += whole*100 + frac
		if b := r[col["x_PriceBook"]]; b != "" {
			starts[r[col["x_PriceBookEffectiveFrom"]]] = r[col["ChargePeriodStart"]] + "/" + r[col["ChargePeriodEnd"]]
		}
	}
	if cents != total {
		t.Errorf("FOCUS BilledCost adds up to %d, the total is %d", cents, total)
	}
	c := change.UTC().Format("2006-01-02T15:04:05Z")
	if got := starts[c]; got != c+"/2026-11-03T00:00:00Z" {
		t.Errorf("the second book's rows charge %q, want from the change to the end", got)
	}
}

// TestBooksOfOnePeriodAgree: a period whose books differ in currency is
// refused naming the field, not billed in two currencies.
func TestBooksOfOnePeriodAgree(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 2)
	st := fileLedger(t, exactRows(rand.New(rand.NewSource(3)), from, to), nil)
	usd := ratesBook(t, "UTC", "allocation", map[string]string{"L4": "0.50"})
	eur := bookFor(t, "EUR", "UTC", "allocation", "platform", map[string]string{"L4": "0.45"}, "1.00")
	record(t, st, usd, from, to)
	record(t, st, eur, from.Add(24*time.Hour), to)
	_, err := BuildDated(context.Background(), st, usd, from, to, to)
	if err == nil || !strings.Contains(err.Error(), "has currency EUR, not USD") || !strings.Contains(err.Error(), eur.SHA256[:12]) {
		t.Fatalf("%v", err)
	}
	// The day before the change is one currency: billed.
	if _, err := BuildDated(context.Background(), st, usd, from, from.Add(24*time.Hour), to); err != nil {
		t.Fatal(err)
	}
}

// TestEnergyAcrossAChange: with an energy section, a period priced by two
// books shows each team's energy as the sum of its lines', and the
// period's energy figures as the parts' sums.
func TestEnergyAcrossAChange(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 2)
	var rows []attribution.Row
	for s := from; s.Before(to); s = s.Add(time.Hour) {
		rows = append(rows, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "GPU-0", SliceID: "GPU-0",
			GPUModel: "L4", SharingMode: "exclusive", Kind: attribution.KindContainer, Team: "search", Namespace: "ns", Pod: "p",
			Container: "c", PodUID: "u", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600, EnergyJoules: 3.6e6, Method: attribution.MethodMeasured})
	}
	st := fileLedger(t, rows, nil)
	const energy = "energy:\n  rate: 0.10\n"
	a := book(t, "currency: USD\npolicy: allocation\ndefaultRate: 1.00\n"+energy)
	b := book(t, "currency: USD\npolicy: allocation\ndefaultRate: 2.00\n"+energy)
	record(t, st, a, from, to)
	record(t, st, b, from.Add(24*time.Hour), to)
	r, err := BuildDated(context.Background(), st, b, from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	// 48 kWh at 0.10: 4.80; 24 h at 1.00 and 24 h at 2.00: 72.00.
	if r.Total != 7200 || r.Energy == nil || r.Energy.Cost != 480 || len(r.Teams) != 1 || r.Teams[0].EnergyCost != 480 ||
		r.Teams[0].EnergyKWh.Cmp(big.NewRat(48, 1)) != 0 {
		t.Fatalf("total %d, energy %+v, teams %+v", r.Total, r.Energy, r.Teams)
	}
}
