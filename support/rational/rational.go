// Package rational is the exact arithmetic the money paths share where
// math/big alone is slow: the decimal text of a big.Rat and the sum of
// many terms.
//
// A month's allocation answer by pod prices some 70,000 report lines,
// and each line's numbers are written as decimals and added into
// groups: big.Rat's FloatString divides in big.nat, and Rat.Add
// multiplies and reduces every pair. Most of these values are ratios of
// word-size integers with a handful of distinct denominators (GPU-hours
// are micro-seconds over 3.6e9), so both have an exact fast path here,
// and fall back to math/big where a value is larger. The results are
// the same as math/big's, digit for digit.
package rational

import (
	"math/big"
	"math/bits"
	"strconv"
)

// pow10 are the powers of ten that fit a uint64.
var pow10 = func() [20]uint64 {
	var p [20]uint64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// FloatString is x.FloatString(prec): x rounded to prec decimals, halves
// away from zero, with a "-" on every negative non-integer x (even one
// that rounds to zero, as math/big writes it).
func FloatString(x *big.Rat, prec int) string {
	num, den := x.Num(), x.Denom()
	if prec < 0 || prec >= len(pow10) || !den.IsUint64() || !num.IsInt64() {
		return x.FloatString(prec)
	}
	n, d := num.Int64(), den.Uint64()
	neg := n < 0
	var a uint64
	if neg {
		a = uint64(-(n + 1)) + 1 // |n|, MinInt64 included
	} else {
		a = uint64(n)
	}
	buf := make([]byte, 0, 24+prec)
	if d == 1 {
		if neg {
			buf = append(buf, '-')
		}
		buf = strconv.AppendUint(buf, a, 10)
		return string(appendZeros(buf, prec))
	}
	q, r := a/d, a%d
	// r x 10^prec / d in 128 bits: r < d, so the high word is below d and
	// the quotient fits one word.
	p := pow10[prec]
	hi, lo := bits.Mul64(r, p)
	f, rem := bits.Div64(hi, lo, d)
	// Round half away from zero: up when 2 rem >= d.
	if rem >= d-rem {
		f++
		if f >= p {
			q++
			f -= p
		}
	}
	if neg {
		buf = append(buf, '-')
	}
	buf = strconv.AppendUint(buf, q, 10)
	if prec > 0 {
		buf = append(buf, '.')
		digits := strconv.AppendUint(nil, f, 10)
		for i := prec - len(digits); i > 0; i-- {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	}
	return string(buf)
}

func appendZeros(buf []byte, prec int) []byte {
	if prec > 0 {
		buf = append(buf, '.')
		for i := 0; i < prec; i++ {
			buf = append(buf, '0')
		}
	}
	return buf
}

// Sum adds many exact terms. Terms with one denominator are added as
// integers, and the reduction happens once per distinct denominator when
// the sum is read: adding n terms with Rat.Add costs n multiplications
// and n greatest common divisors. The zero Sum is empty and ready.
type Sum struct {
	// first is the one term while there is only one: most groups of a
	// month by pod are one line, and a lone term needs no reduction.
	first *big.Rat
	// dens and nums are the numerators added per word-size
	// denominator, in the order the denominators first came; other holds
	// the rest.
	dens  []uint64
	nums  []*big.Int
	index map[uint64]int
	other *big.Rat
}

// Add adds x (nil adds nothing); x itself is not kept.
func (s *Sum) Add(x *big.Rat) {
	if x == nil || x.Sign() == 0 {
		return
	}
	if s.first == nil && s.dens == nil && s.other == nil {
		s.first = new(big.Rat).Set(x)
		return
	}
	if f := s.first; f != nil {
		s.first = nil
		s.add(f)
	}
	s.add(x)
}

func (s *Sum) add(x *big.Rat) {
	den := x.Denom()
	if !den.IsUint64() {
		if s.other == nil {
			s.other = new(big.Rat)
		}
		s.other.Add(s.other, x)
		return
	}
	d := den.Uint64()
	i, ok := s.find(d)
	if !ok {
		i = len(s.dens)
		s.dens = append(s.dens, d)
		s.nums = append(s.nums, new(big.Int))
		if s.index != nil {
			s.index[d] = i
		} else if len(s.dens) > 8 {
			s.index = make(map[uint64]int, 16)
			for j, dj := range s.dens {
				s.index[dj] = j
			}
		}
	}
	s.nums[i].Add(s.nums[i], x.Num())
}

// find is the place of denominator d: a scan while there are few, a map
// after.
func (s *Sum) find(d uint64) (int, bool) {
	if s.index != nil {
		i, ok := s.index[d]
		return i, ok
	}
	for i, dj := range s.dens {
		if dj == d {
			return i, true
		}
	}
	return 0, false
}

// Rat is the sum so far, a new value.
func (s *Sum) Rat() *big.Rat {
	if s.first != nil {
		return new(big.Rat).Set(s.first)
	}
	out := new(big.Rat)
	if s.other != nil {
		out.Set(s.other)
	}
	var den big.Int
	for i, d := range s.dens {
		if s.nums[i].Sign() == 0 {
			continue
		}
		out.Add(out, new(big.Rat).SetFrac(s.nums[i], den.SetUint64(d)))
	}
	return out
}
