package pricebook

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// maxRateText bounds a rate's text: enough for any price with many
// decimals, short enough that nothing downstream meets a huge number.
const maxRateText = 40

// rateText is what we accept as a rate: plain decimal notation, so what the
// price book says is exactly what is charged. No exponents (1e3), no
// fractions (1/3), no signs, no thousands separators.
var rateText = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// Rate is an exact, non-negative amount of money per physical GPU-hour.
// The zero Rate is 0.
type Rate struct {
	r        *big.Rat
	decimals int // decimals as written, so 2.40 prints as 2.40
}

// ParseRate reads a rate in plain decimal notation ("2.40", "4", ".5",
// "2.123456789").
func ParseRate(s string) (Rate, error) {
	if len(s) > maxRateText {
		return Rate{}, fmt.Errorf("%q is too long for a rate (at most %d characters)", truncate(s), maxRateText)
	}
	if strings.HasPrefix(s, "-") {
		return Rate{}, fmt.Errorf("%q is negative: rates are amounts charged per GPU-hour", s)
	}
	if !rateText.MatchString(s) {
		return Rate{}, fmt.Errorf("%q is not a decimal number (want plain notation like 2.40)", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Rate{}, fmt.Errorf("%q is not a decimal number", s)
	}
	d := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		d = len(s) - i - 1
	}
	return Rate{r: r, decimals: d}, nil
}

// Rat returns the rate as an exact rational (a copy: Rates are values).
func (r Rate) Rat() *big.Rat {
	if r.r == nil {
		return new(big.Rat)
	}
	return new(big.Rat).Set(r.r)
}

// Format writes the rate with at least minDecimals decimals and as many
// more as it needs to be exact: 2.4 with 2 gives "2.40", 2.123456789 gives
// "2.123456789".
func (r Rate) Format(minDecimals int) string {
	d := max(minDecimals, r.significantDecimals())
	return r.Rat().FloatString(d)
}

// String writes the rate exactly, with no trailing zeros beyond the first
// decimal place it needs.
func (r Rate) String() string { return r.Format(0) }

// Float64 is the rate for display and metrics only (never for money).
func (r Rate) Float64() float64 {
	f, _ := r.Rat().Float64()
	return f
}

// Equal reports whether two rates are the same amount.
func (r Rate) Equal(o Rate) bool { return r.Rat().Cmp(o.Rat()) == 0 }

// significantDecimals is the fewest decimals that write the rate exactly:
// every parsed rate is a decimal fraction, so its denominator divides a
// power of ten.
func (r Rate) significantDecimals() int {
	x := r.Rat()
	ten := big.NewRat(10, 1)
	for d := 0; d <= r.decimals; d++ {
		if x.IsInt() {
			return d
		}
		x.Mul(x, ten)
	}
	return r.decimals
}

func truncate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// DerivedDecimals is how many decimals a derived rate prints (at most).
const DerivedDecimals = 9

// DerivedRate is a rate the report works out rather than reads: under
// policy flat, a slot's monthly price over the hours of its month. It
// keeps the exact rational for arithmetic and prints rounded to at most
// DerivedDecimals decimals (800 / 744 h prints 1.075268817). Negative x is
// taken as 0: rates are never negative.
func DerivedRate(x *big.Rat) Rate {
	if x == nil || x.Sign() < 0 {
		return Rate{}
	}
	return Rate{r: new(big.Rat).Set(x), decimals: DerivedDecimals}
}
