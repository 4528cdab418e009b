// Package calendar holds the calendar arithmetic every layer shares: the
// first instant of a local day, calendar buckets that are exact across DST
// and odd offsets, and the range bounds commands accept. It is a leaf
// (stdlib only) so that money (the report) and storage (the stores) agree
// on a day without importing one another.
package calendar

import (
	"fmt"
	"math"
	"time"
)

// Bucket units: calendar hours, days and months.
const (
	Hour  = "hour"
	Day   = "day"
	Month = "month"
)

// MinTime and MaxTime bound the instants a ledger can hold: both stores
// keep times as nanoseconds since 1970 in 64 bits, which span 1677-09-21
// to 2262-04-11.
var (
	MinTime = time.Unix(0, math.MinInt64)
	MaxTime = time.Unix(0, math.MaxInt64)
)

func storable(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// formatTime is how errors print an instant (the ledger's RFC 3339 form).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// maxBuckets bounds one aggregate query (a century of hours is ~876k).
const maxBuckets = 1_000_000

// bucket is one calendar bucket, clipped to the query range as unix
// nanoseconds [lo, hi).
type bucket struct {
	start  time.Time // the calendar bucket's first instant, in the query zone
	lo, hi int64
}

// Bucket is one calendar bucket clipped to a query range: rows whose
// interval starts in [From, To) belong to it. Start is the calendar
// bucket's first instant in the query's zone (before clipping).
type Bucket struct {
	Start, From, To time.Time
}

// Buckets splits [from, to) into the calendar hours, days or months
// (Hour, Day, Month) of loc. It is the one definition of
// a calendar bucket for every store: boundaries are computed here, not by a
// database's date functions, so DST and odd offsets are exact. A
// spring-forward day has 23 hour buckets and a fall-back day 25 (the
// repeated hour is two buckets, one per UTC offset). An hour bucket never
// spans an offset change: where the offset moves by 30 minutes inside a
// clock hour (Lord Howe), that hour is cut at the change, so a bucket may
// start at :30 local time. Days and months start at local midnight, or at
// the first instant of the date where DST skips or repeats midnight.
func Buckets(from, to time.Time, loc *time.Location, unit string) ([]Bucket, error) {
	switch unit {
	case Hour, Day, Month:
	default:
		return nil, fmt.Errorf("unknown calendar bucket %q (want %q, %q or %q)", unit, Hour, Day, Month)
	}
	if loc == nil {
		loc = time.UTC
	}
	bs, err := calendarBuckets(from, to, loc, unit)
	if err != nil {
		return nil, err
	}
	out := make([]Bucket, len(bs))
	for i, b := range bs {
		out[i] = Bucket{Start: b.start, From: time.Unix(0, b.lo).In(loc), To: time.Unix(0, b.hi).In(loc)}
	}
	return out, nil
}

// calendarBuckets is Buckets in the form the file store's
// aggregation uses (bounds in unix nanoseconds).
func calendarBuckets(from, to time.Time, loc *time.Location, unit string) ([]bucket, error) {
	if !from.Before(to) {
		return nil, fmt.Errorf("empty range [%s, %s)", formatTime(from), formatTime(to))
	}
	if !storable(from) || !storable(to) {
		return nil, fmt.Errorf("range [%s, %s) outside 1678-2262", formatTime(from), formatTime(to))
	}
	var out []bucket
	for b := floorBucket(from.In(loc), unit); b.Before(to); {
		n := nextBucket(b, unit)
		if !n.After(b) {
			return nil, fmt.Errorf("cannot compute %s buckets in %s after %s", unit, loc, formatTime(b))
		}
		if n.After(from) {
			out = append(out, bucket{start: b, lo: maxTime(b, from).UnixNano(), hi: minTime(n, to).UnixNano()})
			if len(out) > maxBuckets {
				return nil, fmt.Errorf("more than %d %s buckets in [%s, %s)", maxBuckets, unit, formatTime(from), formatTime(to))
			}
		}
		b = n
	}
	return out, nil
}

// floorBucket is the first instant of the bucket holding t (t in the zone).
func floorBucket(t time.Time, unit string) time.Time {
	switch unit {
	case Hour:
		s := t.Add(-sinceLocalHour(t))
		if zs, _ := t.ZoneBounds(); !zs.IsZero() && zs.After(s) {
			s = zs // the offset changed inside this clock hour
		}
		return s
	case Day:
		y, m, d := t.Date()
		return firstInstant(y, m, d, t.Location(), dayKey)
	default:
		y, m, _ := t.Date()
		return firstInstant(y, m, 1, t.Location(), monthKey)
	}
}

// nextBucket is the first instant of the bucket after the one starting at b.
func nextBucket(b time.Time, unit string) time.Time {
	switch unit {
	case Hour:
		n := b.Add(time.Hour - sinceLocalHour(b))
		if _, ze := b.ZoneBounds(); !ze.IsZero() && ze.Before(n) && ze.After(b) {
			n = ze
		}
		return n
	case Day:
		y, m, d := b.Date()
		return firstInstant(y, m, d+1, b.Location(), dayKey)
	default:
		y, m, _ := b.Date()
		return firstInstant(y, m+1, 1, b.Location(), monthKey)
	}
}

func sinceLocalHour(t time.Time) time.Duration {
	return time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
}

func dayKey(t time.Time) int {
	y, m, d := t.Date()
	return y*10000 + int(m)*100 + d
}

func monthKey(t time.Time) int {
	y, m, _ := t.Date()
	return y*100 + int(m)
}

// firstInstant is the first instant whose local date reaches y-m-d (day or
// month, by key). Usually that is local midnight; where midnight does not
// exist or happens twice (DST at 00:00) time.Date may pick either side, so
// the boundary is then searched for.
func firstInstant(y int, m time.Month, d int, loc *time.Location, key func(time.Time) int) time.Time {
	c := time.Date(y, m, d, 0, 0, 0, 0, loc)
	target := key(time.Date(y, m, d, 12, 0, 0, 0, time.UTC)) // normalised y-m-d
	if key(c) == target && key(c.Add(-time.Nanosecond)) < target {
		return c
	}
	lo, hi := c.Add(-48*time.Hour), c.Add(48*time.Hour)
	for hi.Sub(lo) > time.Nanosecond {
		mid := lo.Add(hi.Sub(lo) / 2)
		if key(mid) >= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// DayStart is the first instant of local date y-m-d in loc (y, m, d are
// normalised as time.Date does): local midnight, except where DST skips or
// repeats it.
func DayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	return firstInstant(y, m, d, loc, dayKey)
}
