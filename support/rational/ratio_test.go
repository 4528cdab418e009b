package rational

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// randomInt64 is an int64 of any size, often with small prime factors in
// common with others (micro-seconds, 3.6e9) and often an extreme.
func randomInt64(rng *rand.Rand) int64 {
	switch rng.IntN(6) {
	case 0:
		return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, 3_600_000_000, -3_600_000_000}[rng.IntN(8)]
	case 1:
		return rng.Int64N(1000) - 500
	case 2:
		return (rng.Int64N(1_000_000) - 500_000) * 3_600_000
	default:
		n := int64(rng.Uint64())
		return n >> rng.IntN(63)
	}
}

func randomDen(rng *rand.Rand) uint64 {
	for {
		switch rng.IntN(4) {
		case 0:
			return []uint64{1, 2, 3_600_000_000, 3_600_000_000_000, math.MaxUint64, 1 << 63}[rng.IntN(6)]
		case 1:
			if d := uint64(rng.Int64N(1_000_000)) * 1_000; d > 0 {
				return d
			}
		default:
			if d := rng.Uint64() >> rng.IntN(64); d > 0 {
				return d
			}
		}
	}
}

// same: x is want in the same lowest terms, and usable as any Rat is.
func same(t *testing.T, what string, x, want *big.Rat) {
	t.Helper()
	if x.Num().Cmp(want.Num()) != 0 || x.Denom().Cmp(want.Denom()) != 0 || x.Cmp(want) != 0 || x.Sign() != want.Sign() || x.IsInt() != want.IsInt() {
		t.Fatalf("%s = %s, want %s", what, x.RatString(), want.RatString())
	}
	twice := new(big.Rat).Add(x, x)
	if twice.Cmp(new(big.Rat).Add(want, want)) != 0 {
		t.Fatalf("%s doubled = %s, want %s", what, twice.RatString(), new(big.Rat).Add(want, want).RatString())
	}
}

// Ratio and RatioOfProduct are big.NewRat's value in big.NewRat's lowest
// terms, on random and extreme operands.
func TestRatioIsMathBigs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 200_000; i++ {
		n, d := randomInt64(rng), randomDen(rng)
		want := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).SetUint64(d))
		same(t, "Ratio("+big.NewInt(n).String()+", "+new(big.Int).SetUint64(d).String()+")", Ratio(n, d), want)

		a, b := randomInt64(rng), randomInt64(rng)
		want = new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(a), big.NewInt(b)), new(big.Int).SetUint64(d))
		same(t, "RatioOfProduct("+big.NewInt(a).String()+", "+big.NewInt(b).String()+", "+new(big.Int).SetUint64(d).String()+")", RatioOfProduct(a, b, d), want)
	}
}

func TestRatioRefusesAZeroDenominator(t *testing.T) {
	for _, f := range []func(){func() { Ratio(1, 0) }, func() { RatioOfProduct(1, 1, 0) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on a zero denominator")
				}
			}()
			f()
		}()
	}
}

// Mul is big.Rat's Mul, value and lowest terms, on random and extreme
// ratios, in words or not.
func TestMulIsMathBigs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	ratio := func() *big.Rat {
		if rng.IntN(10) == 0 { // beyond a word
			return new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(randomInt64(rng)), 70), new(big.Int).SetUint64(randomDen(rng)))
		}
		return new(big.Rat).SetFrac(big.NewInt(randomInt64(rng)), new(big.Int).SetUint64(randomDen(rng)))
	}
	for i := 0; i < 200_000; i++ {
		x, y := ratio(), ratio()
		if rng.IntN(20) == 0 {
			y = x
		}
		same(t, "Mul("+x.RatString()+", "+y.RatString()+")", Mul(x, y), new(big.Rat).Mul(x, y))
	}
}
