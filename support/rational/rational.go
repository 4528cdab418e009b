// Package rational is the exact arithmetic the money paths share where
// math/big alone is slow: the decimal text of a big.Rat, the sum of many
// terms, and a ratio of word-size integers made already reduced.
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
	return FracString(num.Int64(), den.Uint64(), prec)
}

// FracString is FloatString of n/d (d > 0), reduced or not: the digits
// depend only on the value.
func FracString(n int64, d uint64, prec int) string {
	if prec < 0 || prec >= len(pow10) || d == 0 {
		return new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).SetUint64(d)).FloatString(prec) // d == 0 panics, as SetFrac does
	}
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
	// slots are the word-size denominators, in the order they first
	// came, each with its numerator; other holds the rest.
	slots []slot
	index map[uint64]int
	other *big.Rat
}

// slot is the numerator added over denominator d: small while it fits an
// int64, large (nil until then) after.
type slot struct {
	d     uint64
	small int64
	large *big.Int
}

// Add adds x (nil adds nothing); x itself is not kept.
func (s *Sum) Add(x *big.Rat) {
	if x == nil || x.Sign() == 0 {
		return
	}
	if s.first == nil && s.slots == nil && s.other == nil {
		s.first = new(big.Rat).Set(x)
		return
	}
	s.spill()
	s.add(x)
}

// AddFrac adds n/d (d > 0), which need not be reduced: a sum of integer
// micro-seconds over one unit stays one integer.
func (s *Sum) AddFrac(n int64, d uint64) {
	if d == 0 {
		panic("rational: AddFrac with a zero denominator")
	}
	if n == 0 {
		return
	}
	s.spill()
	s.addInt(s.slot(d), n)
}

// spill moves a lone first term into the per-denominator sums.
func (s *Sum) spill() {
	if f := s.first; f != nil {
		s.first = nil
		s.add(f)
	}
}

func (s *Sum) add(x *big.Rat) {
	den, num := x.Denom(), x.Num()
	if !den.IsUint64() {
		if s.other == nil {
			s.other = new(big.Rat)
		}
		s.other.Add(s.other, x)
		return
	}
	i := s.slot(den.Uint64())
	if num.IsInt64() {
		s.addInt(i, num.Int64())
		return
	}
	s.promote(i)
	s.slots[i].large.Add(s.slots[i].large, num)
}

// addInt adds n to slot i's numerator, in big.Int once it overflows.
func (s *Sum) addInt(i int, n int64) {
	sl := &s.slots[i]
	if sl.large == nil {
		if r, ok := addInt64(sl.small, n); ok {
			sl.small = r
			return
		}
		s.promote(i)
	}
	sl.large.Add(sl.large, big.NewInt(n))
}

func addInt64(a, b int64) (int64, bool) {
	r := a + b
	return r, (a >= 0) != (b >= 0) || (r >= 0) == (a >= 0)
}

func (s *Sum) promote(i int) {
	if sl := &s.slots[i]; sl.large == nil {
		sl.large = big.NewInt(sl.small)
	}
}

// slot is the place of denominator d, added when new: a scan while
// there are few, a map after.
func (s *Sum) slot(d uint64) int {
	if s.index != nil {
		if i, ok := s.index[d]; ok {
			return i
		}
	} else {
		for i := range s.slots {
			if s.slots[i].d == d {
				return i
			}
		}
	}
	i := len(s.slots)
	s.slots = append(s.slots, slot{d: d})
	if s.index != nil {
		s.index[d] = i
	} else if len(s.slots) > 8 {
		s.index = make(map[uint64]int, 16)
		for j := range s.slots {
			s.index[s.slots[j].d] = j
		}
	}
	return i
}

// Frac is the sum as n/d (not reduced) when it is one word-size fraction:
// every term so far over one denominator d, the numerator an int64;
// ok false otherwise. The empty sum is 0/1.
func (s *Sum) Frac() (n int64, d uint64, ok bool) {
	if f := s.first; f != nil {
		if f.Num().IsInt64() && f.Denom().IsUint64() {
			return f.Num().Int64(), f.Denom().Uint64(), true
		}
		return 0, 0, false
	}
	if s.other != nil {
		return 0, 0, false
	}
	d, live := uint64(1), 0
	for _, sl := range s.slots {
		switch {
		case sl.large != nil && sl.large.Sign() != 0:
			return 0, 0, false
		case sl.large == nil && sl.small != 0:
			n, d = sl.small, sl.d
			live++
		}
	}
	if live > 1 {
		return 0, 0, false
	}
	return n, d, true
}

// FloatString is s.Rat().FloatString(prec), without reducing: one
// word-size fraction in words, any other sum as one unreduced fraction of
// big.Ints (a pod's idle shares over a month are a fraction a day, each
// with its own denominator).
func (s *Sum) FloatString(prec int) string {
	if n, d, ok := s.Frac(); ok {
		return FracString(n, d, prec)
	}
	if s.first != nil {
		return FloatString(s.first, prec)
	}
	num, den := big.NewInt(0), big.NewInt(1)
	var t, dd big.Int
	// num/den += n/d: num = num*d + n*den, den = den*d.
	add := func(n, d *big.Int) {
		num.Mul(num, d)
		num.Add(num, t.Mul(n, den))
		den.Mul(den, d)
	}
	if s.other != nil {
		add(s.other.Num(), s.other.Denom())
	}
	s.eachTerm(func(n *big.Int, d uint64) { add(n, dd.SetUint64(d)) })
	return bigFracString(num, den, prec)
}

// bigFracString is FloatString of num/den (den > 0), reduced or not.
func bigFracString(num, den *big.Int, prec int) string {
	if prec < 0 {
		return new(big.Rat).SetFrac(num, den).FloatString(prec)
	}
	var q, r, r2 big.Int
	q.QuoRem(new(big.Int).Abs(num), den, &r)
	var p *big.Int
	if prec < len(pow10) {
		p = new(big.Int).SetUint64(pow10[prec])
	} else {
		p = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)
	}
	r.Mul(&r, p)
	r.QuoRem(&r, den, &r2)
	// Round half away from zero: up when 2 r2 >= den.
	if r2.Lsh(&r2, 1).Cmp(den) >= 0 {
		r.Add(&r, big.NewInt(1))
		if r.Cmp(p) >= 0 {
			q.Add(&q, big.NewInt(1))
			r.Sub(&r, p)
		}
	}
	buf := make([]byte, 0, 24+prec)
	if num.Sign() < 0 {
		buf = append(buf, '-')
	}
	buf = q.Append(buf, 10)
	if prec > 0 {
		buf = append(buf, '.')
		digits := r.Append(nil, 10)
		for i := prec - len(digits); i > 0; i-- {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	}
	return string(buf)
}

// eachTerm calls fn with each denominator's numerator that is not zero.
func (s *Sum) eachTerm(fn func(num *big.Int, d uint64)) {
	for _, sl := range s.slots {
		num := sl.large
		if num == nil {
			if sl.small == 0 {
				continue
			}
			num = big.NewInt(sl.small)
		}
		if num.Sign() != 0 {
			fn(num, sl.d)
		}
	}
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
	s.eachTerm(func(num *big.Int, d uint64) { out.Add(out, new(big.Rat).SetFrac(num, den.SetUint64(d))) })
	return out
}
