package report

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/support/rational"
)

// round sets every line's Amount and adds the rounding line.
//
// Capacity x rate below is, under flat, capacity in slot-months x the
// slot price: the same identity in the unit the book prices.
//
// Per GPU model the lines share out round(capacity x rate) by largest
// remainder: each line gets its exact amount rounded down or up (so it is
// rounded once, off by less than one minor unit), and the model's lines
// add up to its capacity x rate rounded to the minor unit. The fleet total
// is the sum over models of capacity x rate rounded once; its difference
// from the models' rounded totals (at most half a minor unit per model) is
// the one rounding line. No minor unit is lost or invented.
func (b *builder) round(r *Report) error {
	scale := minorScale(b.book.Currency)
	byModel := map[string][]int{}
	for i, l := range r.Lines {
		byModel[l.GPUModel] = append(byModel[l.GPUModel], i)
	}
	fleet, targets, exacts, err := b.capacityAmounts(scale)
	if err != nil {
		return err
	}
	var models int64
	for _, name := range sortedKeys(b.models) {
		if err := apportion(r.Lines, byModel[name], exacts[name], targets[name], scale); err != nil {
			return fmt.Errorf("model %s: %w", name, err)
		}
		models += targets[name]
	}
	total, err := roundHalfAway(new(big.Rat).Mul(fleet, scale))
	if err != nil {
		return err
	}
	r.Total = total
	r.Rounding = total - models
	r.Lines = append(r.Lines, Line{Type: LineRounding, Exact: new(big.Rat), Amount: r.Rounding})
	b.modelSummaries(r, targets, exacts)
	return nil
}

// minorScale is 10^the currency's minor unit: an amount times it is in
// minor units.
func minorScale(c pricebook.Currency) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.MinorUnit)), nil))
}

// capacityAmounts is each model's capacity x rate, exact and rounded once
// to the minor unit (scale), and their exact sum: what every policy's
// file adds up to.
func (b *builder) capacityAmounts(scale *big.Rat) (fleet *big.Rat, targets map[string]int64, exacts map[string]*big.Rat, err error) {
	fleet, targets, exacts = new(big.Rat), map[string]int64{}, map[string]*big.Rat{}
	for _, name := range sortedKeys(b.models) {
		exact := new(big.Rat).Mul(b.models[name].priced, b.price(name).Rat())
		fleet.Add(fleet, exact)
		target, err := roundHalfAway(new(big.Rat).Mul(exact, scale))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("model %s: %w", name, err)
		}
		targets[name], exacts[name] = target, exact
	}
	return fleet, targets, exacts, nil
}

// apportion gives the lines idx amounts that add up to target minor units,
// each its exact amount rounded down or, for the largest remainders, up.
func apportion(lines []Line, idx []int, exact *big.Rat, target int64, scale *big.Rat) error {
	type rem struct {
		n    int // the line's place in idx
		i    int
		frac *big.Rat
		// approx is frac rounded to the nearest float64, which keeps the
		// order: approx > other's means frac > other's (rounding to
		// nearest never reverses two values), and only equal approx need
		// the exact comparison. A month by pod sorts 35,000 remainders, and
		// comparing each pair exactly was half of apportion's time.
		approx float64
	}
	rems := make([]rem, 0, len(idx))
	var sum rational.Sum
	var floors int64
	for _, i := range idx {
		sum.Add(lines[i].Exact)
		x := new(big.Rat).Mul(lines[i].Exact, scale)
		f := floorRat(x)
		if !f.IsInt64() {
			return fmt.Errorf("amount %s too large", x.FloatString(0))
		}
		lines[i].Amount = f.Int64()
		floors += f.Int64()
		frac := x.Sub(x, new(big.Rat).SetInt(f))
		approx, _ := frac.Float64()
		rems = append(rems, rem{len(rems), i, frac, approx})
	}
	if sum := sum.Rat(); sum.Cmp(exact) != 0 {
		// The lines must cover the capacity exactly; anything else is a bug.
		return fmt.Errorf("lines add up to %s, capacity x rate is %s", sum.FloatString(9), exact.FloatString(9))
	}
	k := target - floors
	if k < 0 || k > int64(len(rems)) {
		return fmt.Errorf("cannot apportion %d minor units over %d lines", k, len(rems))
	}
	// Largest remainder first; ties go to the earlier line, so the result
	// does not depend on map order.
	slices.SortFunc(rems, func(a, b rem) int {
		if a.approx != b.approx {
			return cmp.Compare(b.approx, a.approx)
		}
		return cmp.Or(cmpRat(b.frac, a.frac), cmp.Compare(a.n, b.n))
	})
	for _, x := range rems[:k] {
		lines[x.i].Amount++
	}
	return nil
}

// cmpRat is x.Cmp(y), without its two multiplications when the
// denominators are equal: remainders that tie in float64 mostly tie
// exactly (whole seconds at one rate leave few distinct fractions of a
// minor unit).
func cmpRat(x, y *big.Rat) int {
	if x.Denom().Cmp(y.Denom()) == 0 {
		return x.Num().Cmp(y.Num())
	}
	return x.Cmp(y)
}

// floorRat is the largest integer not above x.
func floorRat(x *big.Rat) *big.Int {
	// Euclidean division by the (always positive) denominator is the floor.
	return new(big.Int).Div(x.Num(), x.Denom())
}

// roundHalfAway rounds x to an integer, halves away from zero.
func roundHalfAway(x *big.Rat) (int64, error) {
	half := big.NewRat(1, 2)
	y := new(big.Rat).Abs(x)
	y.Add(y, half)
	f := floorRat(y)
	if x.Sign() < 0 {
		f.Neg(f)
	}
	if !f.IsInt64() {
		return 0, fmt.Errorf("amount %s too large", x.FloatString(0))
	}
	return f.Int64(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
