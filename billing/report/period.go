package report

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/calendar"
)

// Month returns the calendar month period ("2026-03") in loc: from its
// first instant to the first instant of the next month.
func Month(period string, loc *time.Location) (from, to time.Time, err error) {
	t, err := time.Parse("2006-01", strings.TrimSpace(period))
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("period %q: want a calendar month YYYY-MM", period)
	}
	y, m, _ := t.Date()
	from, to = firstInstant(y, m, 1, loc), firstInstant(y, m+1, 1, loc)
	if err := errors.Join(calendar.CheckTime(from), calendar.CheckTime(to)); err != nil {
		return from, to, fmt.Errorf("period %q: %w", period, err)
	}
	return from, to, nil
}

// ParseBound reads a --from/--to bound: RFC 3339 (an instant) or a date
// YYYY-MM-DD, meaning the start of that day in loc (the price book's zone,
// where invoice periods are cut).
func ParseBound(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.In(loc), calendar.CheckTime(t)
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		y, m, d := t.Date()
		if err := calendar.CheckTime(t); err != nil {
			return t, err
		}
		return firstInstant(y, m, d, loc), nil
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-03-01T00:00:00Z) or a date (2026-03-01, the start of that day in the price book's time zone)", s)
}

// firstInstant is the first instant of local date y-m-d in loc.
func firstInstant(y int, m time.Month, d int, loc *time.Location) time.Time {
	return calendar.DayStart(y, m, d, loc)
}

// isMonth reports whether [from, to) is exactly one calendar month in loc.
func isMonth(from, to time.Time, loc *time.Location) bool {
	l := from.In(loc)
	y, m, _ := l.Date()
	f, t := firstInstant(y, m, 1, loc), firstInstant(y, m+1, 1, loc)
	return f.Equal(from) && t.Equal(to)
}
