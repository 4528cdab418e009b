package clickhouse

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/billing/ledger"
)

// maxBuckets bounds one Aggregate's output so that a typo (an hourly report
// over a century) fails fast instead of filling memory.
const maxBuckets = 1 << 20

// bucket is one calendar bucket clipped to the query range: rows whose
// interval starts in [from, to) are summed under label.
type bucket struct {
	label    time.Time // calendar start in the query's zone; zero with BucketNone
	from, to time.Time
}

// planBuckets cuts [from, to) into calendar buckets of loc. Boundaries are
// computed here, not in SQL, so any zone works, half-hour offsets and DST
// included.
func planBuckets(from, to time.Time, loc *time.Location, size string) ([]bucket, error) {
	if from.IsZero() || to.IsZero() {
		return nil, fmt.Errorf("aggregate query needs both From and To")
	}
	if !from.Before(to) {
		return nil, fmt.Errorf("aggregate query range is empty: From %s is not before To %s",
			from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	if loc == nil {
		loc = time.UTC
	}
	var floor, next func(time.Time) time.Time
	switch size {
	case ledger.BucketNone:
		return []bucket{{from: from, to: to}}, nil
	case ledger.BucketHour:
		floor, next = floorHour(loc), nextHour(loc)
	case ledger.BucketDay:
		floor, next = floorDay(loc), nextDay(loc)
	case ledger.BucketMonth:
		floor, next = floorMonth(loc), nextMonth(loc)
	default:
		return nil, fmt.Errorf("unknown aggregate bucket %q (want %q, %q, %q or none)", size,
			ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth)
	}
	var out []bucket
	for b := floor(from); b.Before(to); {
		n := next(b)
		if !n.After(b) {
			return nil, fmt.Errorf("cannot compute %s buckets in %s after %s", size, loc, b)
		}
		out = append(out, bucket{label: b, from: maxTime(b, from), to: minTime(n, to)})
		if len(out) > maxBuckets {
			return nil, fmt.Errorf("aggregate query asks for more than %d %s buckets", maxBuckets, size)
		}
		b = n
	}
	return out, nil
}

// Every UTC offset in use is a multiple of 15 minutes, so wall-clock hour
// boundaries fall on 15-minute instants; hour buckets are found by stepping
// through those and asking the zone, which handles half-hour zones and
// 30-minute DST shifts alike.
const quarter = 15 * time.Minute

func onHour(t time.Time, loc *time.Location) bool {
	lt := t.In(loc)
	return lt.Minute() == 0 && lt.Second() == 0 && lt.Nanosecond() == 0
}

// floorHour is the last wall-clock hour boundary of loc at or before t.
func floorHour(loc *time.Location) func(time.Time) time.Time {
	return func(t time.Time) time.Time {
		c := t.Truncate(quarter)
		for i := 0; i < 12; i++ {
			if onHour(c, loc) {
				return c.In(loc)
			}
			c = c.Add(-quarter)
		}
		// An old local-mean-time offset in seconds: plain arithmetic.
		_, off := t.In(loc).Zone()
		local := t.Unix() + int64(off)
		return time.Unix(local-mod(local, 3600)-int64(off), 0).In(loc)
	}
}

// nextHour is the first wall-clock hour boundary of loc after b.
func nextHour(loc *time.Location) func(time.Time) time.Time {
	return func(b time.Time) time.Time {
		c := b.Truncate(quarter).Add(quarter)
		for i := 0; i < 12; i++ {
			if onHour(c, loc) {
				return c.In(loc)
			}
			c = c.Add(quarter)
		}
		return b.Add(time.Hour)
	}
}

func floorDay(loc *time.Location) func(time.Time) time.Time {
	return func(t time.Time) time.Time {
		lt := t.In(loc)
		d := time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, loc)
		if d.After(t) { // midnight skipped by a DST jump lands later
			d = time.Date(lt.Year(), lt.Month(), lt.Day()-1, 0, 0, 0, 0, loc)
		}
		return d
	}
}

func nextDay(loc *time.Location) func(time.Time) time.Time {
	return func(b time.Time) time.Time {
		lb := b.In(loc)
		return time.Date(lb.Year(), lb.Month(), lb.Day()+1, 0, 0, 0, 0, loc)
	}
}

func floorMonth(loc *time.Location) func(time.Time) time.Time {
	return func(t time.Time) time.Time {
		lt := t.In(loc)
		d := time.Date(lt.Year(), lt.Month(), 1, 0, 0, 0, 0, loc)
		if d.After(t) {
			d = time.Date(lt.Year(), lt.Month()-1, 1, 0, 0, 0, 0, loc)
		}
		return d
	}
}

func nextMonth(loc *time.Location) func(time.Time) time.Time {
	return func(b time.Time) time.Time {
		lb := b.In(loc)
		return time.Date(lb.Year(), lb.Month()+1, 1, 0, 0, 0, 0, loc)
	}
}

// Segment levels: where a piece of a bucket is read from.
const (
	levelDay = iota
	levelHour
	levelRaw
)

// segment is a piece of one bucket that a single source can answer: a whole
// UTC day (daily rollup), a whole UTC hour (hourly rollup) or anything else
// (raw rows).
type segment struct {
	bucket   int
	level    int
	from, to time.Time
}

// splitBucket cuts a bucket into the largest rollup periods it contains.
func splitBucket(idx int, b bucket) []segment {
	var out []segment
	for cur := b.from; cur.Before(b.to); {
		u := cur.Unix()
		whole := cur.Nanosecond() == 0
		switch {
		case whole && mod(u, 86400) == 0 && !b.to.Before(cur.Add(24*time.Hour)):
			out = append(out, segment{idx, levelDay, cur, cur.Add(24 * time.Hour)})
			cur = cur.Add(24 * time.Hour)
		case whole && mod(u, 3600) == 0 && !b.to.Before(cur.Add(time.Hour)):
			out = append(out, segment{idx, levelHour, cur, cur.Add(time.Hour)})
			cur = cur.Add(time.Hour)
		default:
			end := minTime(b.to, time.Unix(u-mod(u, 3600)+3600, 0))
			if n := len(out); n > 0 && out[n-1].level == levelRaw && out[n-1].to.Equal(cur) {
				out[n-1].to = end
			} else {
				out = append(out, segment{idx, levelRaw, cur, end})
			}
			cur = end
		}
	}
	return out
}

// hoursOf splits a day segment into its hour segments.
func hoursOf(s segment) []segment {
	out := make([]segment, 0, 24)
	for h := s.from; h.Before(s.to); h = h.Add(time.Hour) {
		out = append(out, segment{s.bucket, levelHour, h, h.Add(time.Hour)})
	}
	return out
}
