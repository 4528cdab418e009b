package pricebook

import (
	"fmt"
	"time"
)

// fieldEffectiveFrom is the optional instant a book's rates hold from
// (docs/report.md, "Price books over time").
const fieldEffectiveFrom = "effectiveFrom"

// Bounds of an effective instant: a ClickHouse DateTime holds 1970 to
// 2106, and a price book older than 2000 is a typo.
var (
	minEffective = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxEffective = time.Date(2106, 1, 1, 0, 0, 0, 0, time.UTC)
)

func (p *parser) effectiveFrom(e *entry, loc *time.Location) time.Time {
	if e == nil {
		return time.Time{}
	}
	s, ok := p.scalar(e, fieldEffectiveFrom)
	if !ok {
		return time.Time{}
	}
	if loc == nil {
		loc = time.UTC // the time zone's own problem is reported
	}
	t, err := ParseEffective(s, loc)
	if err != nil {
		p.addf(e.value, fieldEffectiveFrom, "%v", err)
	}
	return t
}

// ParseEffective reads an effective instant: RFC 3339, or YYYY-MM-DD for
// the start of that day in loc. It must be a whole hour (reports price
// each hour at one book) between 2000 and 2106.
func ParseEffective(s string, loc *time.Location) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d, derr := time.ParseInLocation(time.DateOnly, s, loc)
		if derr != nil {
			return time.Time{}, fmt.Errorf("%q is not an instant: want RFC 3339 (2026-12-01T00:00:00Z) or a day (2026-12-01, its start in the book's time zone)", s)
		}
		t = d
	}
	switch {
	case t.Before(minEffective) || !t.Before(maxEffective):
		return time.Time{}, fmt.Errorf("%q: want an instant from %s to before %s", s, minEffective.Format(time.DateOnly), maxEffective.Format(time.DateOnly))
	case !t.Truncate(time.Hour).Equal(t):
		// Truncate works on the absolute time: a whole UTC hour, which is
		// a whole hour in every zone with a whole-hour offset.
		return time.Time{}, fmt.Errorf("%q is not on a whole hour: a book's rates start with an hour, as the ledger prices hours", s)
	}
	return t, nil
}
