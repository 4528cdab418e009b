package ledger

import "testing"

// Float noise from summing fractions of an interval must not reach the
// CSV: each quantity is the shortest decimal at Decimals places.
func TestFormatFloatPrintsTheShortestDecimalAtMicroPrecision(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{50.200000000000074, "50.2"},
		{0.1 + 0.2, "0.3"},
		{60.0 / 7, "8.571429"},
		{3600, "3600"},
		{1e21, "1000000000000000000000"},
		{0.0000004, "0"},
		{-0.0000004, "0"},
		{0.0000005, "0.000001"},
		{-2.5e-6, "-0.000003"},
	} {
		if got := FormatFloat(c.in); got != c.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
