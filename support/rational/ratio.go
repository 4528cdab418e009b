package rational

import (
	"math/big"
	"math/bits"
)

// Ratio is n/d (d > 0) as a big.Rat, reduced in words: big.NewRat
// reduces with big.Int's general greatest common divisor, which
// allocates its own copies of both operands; a month by pod makes some
// 300,000 of these (a line's hours and kWh). The same value and the same
// reduced numerator and denominator as big.NewRat.
func Ratio(n int64, d uint64) *big.Rat {
	if d == 0 {
		panic("rational: Ratio with a zero denominator")
	}
	u := absUint(n)
	g := gcd(u, d)
	return reduced(n < 0, 0, u/g, d/g)
}

// RatioOfProduct is a x b / d (d > 0), exactly and reduced, the product
// in two words: each operand is reduced against d first, so what is left
// has no common factor.
func RatioOfProduct(a, b int64, d uint64) *big.Rat {
	if d == 0 {
		panic("rational: RatioOfProduct with a zero denominator")
	}
	ua, ub := absUint(a), absUint(b)
	g := gcd(ub, d)
	ub, d = ub/g, d/g
	g = gcd(ua, d)
	ua, d = ua/g, d/g
	hi, lo := bits.Mul64(ua, ub)
	return reduced((a < 0) != (b < 0), hi, lo, d)
}

// reduced is ±(hi·2^64+lo)/d, already in lowest terms. It sets the
// numerator and denominator through Num and Denom, which math/big
// documents as references to them once the Rat is set: no reduction.
func reduced(neg bool, hi, lo, d uint64) *big.Rat {
	z := new(big.Rat)
	if hi == 0 && lo == 0 {
		return z // 0, with the zero value's denominator of 1
	}
	z.SetInt64(1) // sets both, so Num and Denom are references
	if hi == 0 {
		z.Num().SetUint64(lo)
	} else {
		z.Num().SetBits(words(hi, lo))
	}
	if neg {
		z.Num().Neg(z.Num())
	}
	z.Denom().SetUint64(d)
	return z
}

// words is hi·2^64+lo as big.Words, least significant first.
func words(hi, lo uint64) []big.Word {
	if bits.UintSize == 64 {
		return []big.Word{big.Word(lo), big.Word(hi)}
	}
	return []big.Word{big.Word(lo), big.Word(lo >> 32), big.Word(hi), big.Word(hi >> 32)}
}

func absUint(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1 // MinInt64 too
	}
	return uint64(n)
}

// gcd is the greatest common divisor of a and b (gcd(0, b) = b), by
// Stein's binary method.
func gcd(a, b uint64) uint64 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	shift := bits.TrailingZeros64(a | b)
	a >>= bits.TrailingZeros64(a)
	for b != 0 {
		b >>= bits.TrailingZeros64(b)
		if a > b {
			a, b = b, a
		}
		b -= a
	}
	return a << shift
}

// Mul is x x y as a new big.Rat, the same value and lowest terms as
// big.Rat's Mul: in words when both are ratios of word-size integers
// (a line's hours times its price), each numerator reduced against the
// other's denominator first, so the products have no common factor.
func Mul(x, y *big.Rat) *big.Rat {
	xn, xd, yn, yd := x.Num(), x.Denom(), y.Num(), y.Denom()
	if !xn.IsInt64() || !yn.IsInt64() || !xd.IsUint64() || !yd.IsUint64() {
		return new(big.Rat).Mul(x, y)
	}
	a, b := xn.Int64(), yn.Int64()
	ua, ub, da, db := absUint(a), absUint(b), xd.Uint64(), yd.Uint64()
	g := gcd(ua, db)
	ua, db = ua/max(g, 1), db/max(g, 1)
	g = gcd(ub, da)
	ub, da = ub/max(g, 1), da/max(g, 1)
	nhi, nlo := bits.Mul64(ua, ub)
	dhi, dlo := bits.Mul64(da, db)
	if dhi != 0 {
		z := reduced((a < 0) != (b < 0), nhi, nlo, 1)
		if z.Sign() != 0 {
			z.Denom().SetBits(words(dhi, dlo))
		}
		return z
	}
	return reduced((a < 0) != (b < 0), nhi, nlo, dlo)
}
