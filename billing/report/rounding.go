package report

import (
	"fmt"
	"math/big"
	"slices"
	"sort"

	"github.com/gpuledger/gpuledger/billing/pricebook"
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
	sum := new(big.Rat)
	type rem struct {
		i    int
		frac *big.Rat
	}
	rems := make([]rem, 0, len(idx))
	var floors int64
	for _, i := range idx {
		sum.Add(sum, lines[i].Exact)
		x := new(big.Rat).Mul(lines[i].Exact, scale)
		f := floorRat(x)
		if !f.IsInt64() {
			return fmt.Errorf("amount %s too large", x.FloatString(0))
		}
		lines[i].Amount = f.Int64()
		floors += f.Int64()
		rems = append(rems, rem{i, new(big.Rat).Sub(x, new(big.Rat).SetInt(f))})
	}
	if sum.Cmp(exact) != 0 {
		// The lines must cover the capacity exactly; anything else is a bug.
		return fmt.Errorf("lines add up to %s, capacity x rate is %s", sum.FloatString(9), exact.FloatString(9))
	}
	k := target - floors
	if k < 0 || k > int64(len(rems)) {
		return fmt.Errorf("cannot apportion %d minor units over %d lines", k, len(rems))
	}
	// Largest remainder first; ties go to the earlier line, so the result
	// does not depend on map order.
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].frac.Cmp(rems[b].frac) > 0 })
	for _, x := range rems[:k] {
		lines[x.i].Amount++
	}
	return nil
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
