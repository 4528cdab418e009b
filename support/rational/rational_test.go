package rational

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// FloatString writes what math/big writes, on the values the money paths
// meet (GPU-hours, kWh, ratios, negatives, halves, carries into the
// integer part) and on random ones.
func TestFloatStringIsMathBigs(t *testing.T) {
	cases := []*big.Rat{
		big.NewRat(0, 1), big.NewRat(5, 1), big.NewRat(-5, 1), big.NewRat(1, 2), big.NewRat(-1, 2),
		big.NewRat(1, 3), big.NewRat(-1, 3), big.NewRat(2, 3), big.NewRat(999_999_5, 10_000_000),
		big.NewRat(-999_999_5, 10_000_000), big.NewRat(1, 20_000_000), big.NewRat(-1, 20_000_000),
		big.NewRat(-1, 1_000_000_000), big.NewRat(86_399_999_999, 3_600_000_000),
		big.NewRat(math.MaxInt64, 3), big.NewRat(math.MinInt64, 7), big.NewRat(math.MinInt64, 1),
		new(big.Rat).SetFrac(big.NewInt(7), new(big.Int).SetUint64(math.MaxUint64)),
		new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(3), 80), big.NewInt(7)), // a numerator past int64
		new(big.Rat).SetFrac(big.NewInt(3), new(big.Int).Lsh(big.NewInt(1), 70)), // a denominator past uint64
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		n := rng.Int64N(1<<62) - 1<<61
		if i%3 == 0 {
			n = rng.Int64N(20_000_000) - 10_000_000
		}
		d := rng.Int64N(1<<40) + 1
		if i%4 == 0 {
			d = []int64{3_600_000_000, 3_600_000_000_000, 2, 5, 1_000_000, 7}[rng.IntN(6)]
		}
		cases = append(cases, big.NewRat(n, d))
	}
	for _, x := range cases {
		for _, prec := range []int{0, 1, 2, 4, 6, 9, 12, 19, 20} {
			if got, want := FloatString(x, prec), x.FloatString(prec); got != want {
				t.Fatalf("FloatString(%s, %d) = %q, want %q", x, prec, got, want)
			}
		}
	}
}

// A Sum equals the terms added with Rat.Add, whatever their
// denominators, with many distinct ones (past the scan) and huge ones.
func TestSumIsTheExactSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		var s Sum
		want := new(big.Rat)
		n := rng.IntN(400)
		for i := 0; i < n; i++ {
			var x *big.Rat
			switch rng.IntN(5) {
			case 0:
				x = big.NewRat(rng.Int64N(1<<50)-1<<49, 3_600_000_000)
			case 1:
				x = big.NewRat(rng.Int64N(1000)-500, rng.Int64N(40)+1)
			case 2:
				x = new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(rng.Int64N(1000)+1), 90), new(big.Int).Lsh(big.NewInt(3), 70))
			case 3:
				x = big.NewRat(math.MaxInt64, 1)
			default:
				x = nil
			}
			s.Add(x)
			if x != nil {
				want.Add(want, x)
			}
		}
		if got := s.Rat(); got.Cmp(want) != 0 {
			t.Fatalf("trial %d: sum %s, want %s", trial, got, want)
		}
		for _, prec := range []int{0, 6, 30} {
			if got, w := s.FloatString(prec), want.FloatString(prec); got != w {
				t.Fatalf("trial %d: FloatString(%d) = %q, want %q", trial, prec, got, w)
			}
		}
	}
	var empty Sum
	if empty.Rat().Sign() != 0 {
		t.Fatal("the empty sum is not zero")
	}
}

// FloatString never panics and agrees with math/big on any value.
func FuzzFloatString(f *testing.F) {
	f.Add(int64(1), uint64(3), 6)
	f.Add(int64(-1), uint64(2), 0)
	f.Add(int64(math.MinInt64), uint64(math.MaxUint64), 19)
	f.Fuzz(func(t *testing.T, n int64, d uint64, prec int) {
		if d == 0 || prec < 0 || prec > 40 {
			return
		}
		x := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).SetUint64(d))
		if got, want := FloatString(x, prec), x.FloatString(prec); got != want {
			t.Fatalf("FloatString(%d/%d, %d) = %q, want %q", n, d, prec, got, want)
		}
	})
}

// A Sum keeps its own copy of a lone term, and Rat hands out a new value:
// neither the term's owner nor Rat's caller changes the sum.
func TestSumKeepsNoReference(t *testing.T) {
	x := big.NewRat(7, 3)
	var s Sum
	s.Add(x)
	x.SetInt64(100)
	r := s.Rat()
	if r.Cmp(big.NewRat(7, 3)) != 0 {
		t.Fatalf("lone term: sum %s, want 7/3", r)
	}
	r.SetInt64(5)
	s.Add(big.NewRat(1, 3))
	if got := s.Rat(); got.Cmp(big.NewRat(8, 3)) != 0 {
		t.Fatalf("after a second term: sum %s, want 8/3", got)
	}
}

// AddFrac and Add mixed, near and past int64's edge, equal the terms
// added with Rat.Add; FloatString writes what the Rat writes; Frac, where
// it answers, is the sum.
func TestSumOfFractionsIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dens := []uint64{3_600_000_000, 3_600_000_000_000, 1_000_000, 7, 1, math.MaxUint64}
	fracs := 0
	for trial := 0; trial < 2000; trial++ {
		var s Sum
		want := new(big.Rat)
		for i := rng.IntN(30); i > 0; i-- {
			// Trials 0 mod 4 take the fast path (one denominator, small
			// numerators, AddFrac alone); 2 mod 4 overflow it; the odd ones
			// mix denominators.
			d := dens[rng.IntN(len(dens))]
			if trial%2 == 0 {
				d = dens[0]
			}
			n := rng.Int64N(7_200_000_000) - 1_000_000_000
			switch r := rng.IntN(6); {
			case trial%4 != 0 && r == 0:
				n = math.MaxInt64 - rng.Int64N(3) // overflows the int64 numerator
			case trial%4 != 0 && r == 1:
				n = math.MinInt64 + rng.Int64N(3)
			}
			x := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).SetUint64(d))
			want.Add(want, x)
			if trial%4 != 0 && rng.IntN(3) == 0 {
				s.Add(x)
			} else {
				s.AddFrac(n, d)
			}
		}
		if got := s.Rat(); got.Cmp(want) != 0 {
			t.Fatalf("trial %d: sum %s, want %s", trial, got, want)
		}
		for _, prec := range []int{0, 4, 6, 20} {
			if got, w := s.FloatString(prec), want.FloatString(prec); got != w {
				t.Fatalf("trial %d: FloatString(%d) = %q, want %q", trial, prec, got, w)
			}
		}
		if n, d, ok := s.Frac(); ok {
			fracs++
			if x := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).SetUint64(d)); x.Cmp(want) != 0 {
				t.Fatalf("trial %d: Frac %d/%d, want %s", trial, n, d, want)
			}
		}
	}
	if fracs < 500 {
		t.Fatalf("only %d of 2000 sums took the fast path", fracs)
	}
}

// FracString is FloatString of the fraction, reduced or not.
func TestFracStringOfUnreducedFractions(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 20000; i++ {
		k := rng.Int64N(1000) + 1
		n, d := (rng.Int64N(2_000_000)-1_000_000)*k, uint64(rng.Int64N(10_000)+1)*uint64(k)
		if i%5 == 0 {
			n = int64(d) * (rng.Int64N(20) - 10) // an integer value over d
		}
		x := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).SetUint64(d))
		for _, prec := range []int{0, 2, 6, 19, 25} {
			if got, want := FracString(n, d, prec), x.FloatString(prec); got != want {
				t.Fatalf("FracString(%d, %d, %d) = %q, want %q", n, d, prec, got, want)
			}
		}
	}
}

// bigFracString is FloatString of the fraction, reduced or not, at any
// size and sign.
func TestBigFracStringOfUnreducedFractions(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for i := 0; i < 20000; i++ {
		k := new(big.Int).Lsh(big.NewInt(rng.Int64N(1000)+1), uint(rng.IntN(100)))
		n := new(big.Int).Mul(new(big.Int).Lsh(big.NewInt(rng.Int64N(2_000_000)-1_000_000), uint(rng.IntN(80))), k)
		d := new(big.Int).Mul(big.NewInt(rng.Int64N(10_000)+1), k)
		if i%5 == 0 {
			n.Mul(d, big.NewInt(rng.Int64N(20)-10)) // an integer value over d
		}
		x := new(big.Rat).SetFrac(n, d)
		for _, prec := range []int{0, 2, 6, 19, 25} {
			if got, want := bigFracString(n, d, prec), x.FloatString(prec); got != want {
				t.Fatalf("bigFracString(%s, %s, %d) = %q, want %q", n, d, prec, got, want)
			}
		}
	}
}
