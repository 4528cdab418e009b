package calendar

import (
	"fmt"
	"strings"
	"time"
)

// ParseTime reads a range bound given on a command line: RFC 3339
// (2026-03-01T00:00:00Z, offsets allowed) or a date YYYY-MM-DD, meaning
// midnight UTC. Every command that takes --from/--to uses it.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, CheckTime(t)
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, CheckTime(t)
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-03-01T00:00:00Z) or a date (2026-03-01, midnight UTC)", s)
}

// CheckTime refuses a time the ledger cannot hold: both stores keep times
// as nanoseconds since 1970 in 64 bits, from 1677-09-21 to 2262-04-11.
// Commands check their range bounds with it, so that an error names the
// bound instead of the query failing later.
func CheckTime(t time.Time) error {
	if !storable(t) {
		return fmt.Errorf("time %s is outside the years a ledger can hold (%d to %d)",
			t.UTC().Format(time.RFC3339), MinTime.UTC().Year()+1, MaxTime.UTC().Year()-1)
	}
	return nil
}
