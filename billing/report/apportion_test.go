package report

import (
	"cmp"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// apportion's amounts are the largest-remainder rounding done by hand
// with Rats (floor each line's exact amount, then one more minor unit to
// the largest remainders, ties to the earlier line), on random lines:
// remainders in words and past them, equal remainders, negative amounts
// and every minor unit.
func TestApportionIsLargestRemainder(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 3000; trial++ {
		scale := big.NewRat([]int64{1, 10, 100, 1000}[rng.IntN(4)], 1)
		n := 1 + rng.IntN(40)
		lines := make([]Line, n)
		idx := make([]int, n)
		exact := new(big.Rat)
		for i := range lines {
			var x *big.Rat
			switch rng.IntN(5) {
			case 0: // micro-seconds at a decimal rate
				x = new(big.Rat).Mul(big.NewRat(rng.Int64N(86_400_000_000), 3_600_000_000), big.NewRat(rng.Int64N(1000)+1, 100))
			case 1: // a share over a large denominator
				x = new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(rng.Int64N(1<<40)), 40), new(big.Int).Lsh(big.NewInt(rng.Int64N(1<<30)+1), 60))
			case 2: // the same remainder as another line
				x = big.NewRat(int64(rng.IntN(3))*7+1, 4)
			case 3:
				x = big.NewRat(-rng.Int64N(1_000_000), rng.Int64N(999)+1)
			default:
				x = big.NewRat(rng.Int64N(1<<62), int64(rng.Uint64N(1<<62))+1)
			}
			lines[i].Exact = x
			idx[i] = n - 1 - i // a place order other than the lines'
			exact.Add(exact, x)
		}
		// By hand.
		type rem struct {
			n    int
			frac *big.Rat
		}
		want := make([]int64, n)
		var rems []rem
		var floors int64
		for p, i := range idx {
			x := new(big.Rat).Mul(lines[i].Exact, scale)
			f := new(big.Int).Div(x.Num(), x.Denom())
			want[i] = f.Int64()
			floors += f.Int64()
			rems = append(rems, rem{p, x.Sub(x, new(big.Rat).SetInt(f))})
		}
		k := int64(rng.IntN(len(rems) + 1))
		slices.SortFunc(rems, func(a, b rem) int { return cmp.Or(b.frac.Cmp(a.frac), cmp.Compare(a.n, b.n)) })
		for _, r := range rems[:k] {
			want[idx[r.n]]++
		}
		if err := apportion(lines, idx, exact, floors+k, scale); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for i := range lines {
			if lines[i].Amount != want[i] {
				t.Fatalf("trial %d: line %d (%s x %s) gets %d, want %d", trial, i, lines[i].Exact, scale, lines[i].Amount, want[i])
			}
		}
	}
}

// Two remainders a float64 cannot tell apart (k/(2k+1) and
// (k+1)/(2k+3) differ by 1/((2k+1)(2k+3))) are compared exactly: the
// larger, though later, gets the minor unit.
func TestApportionTellsNearRemaindersApart(t *testing.T) {
	for _, k := range []int64{1 << 50, 1<<51 + 12345, 3_000_000_000_001} {
		a, b := big.NewRat(k, 2*k+1), big.NewRat(k+1, 2*k+3)
		fa, _ := a.Float64()
		fb, _ := b.Float64()
		if fa != fb {
			t.Fatalf("k=%d: the float64s differ (%v, %v): not a near tie", k, fa, fb)
		}
		lines := []Line{{Exact: a}, {Exact: b}}
		if err := apportion(lines, []int{0, 1}, new(big.Rat).Add(a, b), 1, big.NewRat(1, 1)); err != nil {
			t.Fatal(err)
		}
		if lines[0].Amount != 0 || lines[1].Amount != 1 {
			t.Errorf("k=%d: amounts %d, %d; want 0, 1", k, lines[0].Amount, lines[1].Amount)
		}
	}
}
