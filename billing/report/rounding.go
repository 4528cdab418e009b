package report

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"math/bits"
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
		n int // the line's place in idx
		i int
		// The remainder, a fraction of a minor unit: r/d in words where
		// both are below 2^53 (most lines: a whole number of
		// micro-seconds at a decimal rate), frac otherwise (nil then).
		r, d uint64
		frac *big.Rat
		// approx is the remainder rounded to the nearest float64, which
		// keeps the order: approx > other's means the remainder is larger
		// (rounding to nearest never reverses two values), and only equal
		// approx need the exact comparison. A month by pod sorts 35,000
		// remainders, and comparing each pair exactly was half of
		// apportion's time. Below 2^53, float64(r) / float64(d) is that
		// nearest float64: IEEE division of exact operands rounds once.
		approx float64
	}
	small := int64(0) // scale as a word, when it is one
	if scale.IsInt() && scale.Num().IsInt64() {
		small = scale.Num().Int64()
	}
	rems := make([]rem, 0, len(idx))
	var sum rational.Sum
	var floors int64
	for _, i := range idx {
		ex := lines[i].Exact
		sum.Add(ex)
		if f, r, d, ok := floorWords(ex, small); ok {
			lines[i].Amount = f
			floors += f
			rems = append(rems, rem{n: len(rems), i: i, r: r, d: d, approx: float64(r) / float64(d)})
			continue
		}
		x := new(big.Rat).Mul(ex, scale)
		f := floorRat(x)
		if !f.IsInt64() {
			return fmt.Errorf("amount %s too large", x.FloatString(0))
		}
		lines[i].Amount = f.Int64()
		floors += f.Int64()
		frac := x.Sub(x, new(big.Rat).SetInt(f))
		approx, _ := frac.Float64()
		rems = append(rems, rem{n: len(rems), i: i, frac: frac, approx: approx})
	}
	if sum := sum.Rat(); sum.Cmp(exact) != 0 {
		// The lines must cover the capacity exactly; anything else is a bug.
		return fmt.Errorf("lines add up to %s, capacity x rate is %s", sum.FloatString(9), exact.FloatString(9))
	}
	k := target - floors
	if k < 0 || k > int64(len(rems)) {
		return fmt.Errorf("cannot apportion %d minor units over %d lines", k, len(rems))
	}
	// The exact comparison of two remainders: in 128-bit words when both
	// are words, else as Rats.
	exactOf := func(x rem) *big.Rat {
		if x.frac != nil {
			return x.frac
		}
		return new(big.Rat).SetFrac(new(big.Int).SetUint64(x.r), new(big.Int).SetUint64(x.d))
	}
	cmpRem := func(a, b rem) int {
		if a.frac == nil && b.frac == nil {
			ah, al := bits.Mul64(a.r, b.d)
			bh, bl := bits.Mul64(b.r, a.d)
			return cmp.Or(cmp.Compare(ah, bh), cmp.Compare(al, bl))
		}
		return cmpRat(exactOf(a), exactOf(b))
	}
	// Largest remainder first; ties go to the earlier line, so the result
	// does not depend on map order.
	slices.SortFunc(rems, func(a, b rem) int {
		if a.approx != b.approx {
			return cmp.Compare(b.approx, a.approx)
		}
		return cmp.Or(cmpRem(b, a), cmp.Compare(a.n, b.n))
	})
	for _, x := range rems[:k] {
		lines[x.i].Amount++
	}
	return nil
}

// floorWords is x times scale split into its floor f and remainder r/d
// (0 <= r < d) in words: ok when scale > 0, x's numerator times scale
// fits an int64 and its denominator is below 2^53.
func floorWords(x *big.Rat, scale int64) (f int64, r, d uint64, ok bool) {
	if scale <= 0 || !x.Num().IsInt64() || !x.Denom().IsUint64() || x.Denom().Uint64() >= 1<<53 {
		return 0, 0, 0, false
	}
	n, den := x.Num().Int64(), int64(x.Denom().Uint64())
	if n > math.MaxInt64/scale || n < math.MinInt64/scale {
		return 0, 0, 0, false
	}
	n *= scale
	f, rem := n/den, n%den
	if rem < 0 { // Go truncates toward zero; the floor is one lower
		f--
		rem += den
	}
	return f, uint64(rem), uint64(den), true
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
