package clickhouse

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
)

// bucket is one calendar bucket clipped to the query range: rows whose
// interval starts in [From, To) are summed under Start (zero with
// BucketNone).
type bucket = calendar.Bucket

// planBuckets cuts [from, to) into the calendar buckets of loc, as the
// embedded ledger does (calendar.Buckets, which also bounds their
// number), so both stores report the same buckets for the same rows.
func planBuckets(from, to time.Time, loc *time.Location, size string) ([]bucket, error) {
	if from.IsZero() || to.IsZero() {
		return nil, fmt.Errorf("aggregate query needs both From and To")
	}
	if !from.Before(to) {
		return nil, fmt.Errorf("aggregate query range is empty: From %s is not before To %s",
			from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	if size == ledger.BucketNone {
		return []bucket{{From: from, To: to}}, nil
	}
	cal, err := calendar.Buckets(from, to, loc, size)
	if err != nil {
		return nil, fmt.Errorf("cannot plan aggregate buckets: %w", err)
	}
	return cal, nil
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
	for cur := b.From; cur.Before(b.To); {
		u := cur.Unix()
		whole := cur.Nanosecond() == 0
		switch {
		case whole && mod(u, 86400) == 0 && !b.To.Before(cur.Add(24*time.Hour)):
			out = append(out, segment{idx, levelDay, cur, cur.Add(24 * time.Hour)})
			cur = cur.Add(24 * time.Hour)
		case whole && mod(u, 3600) == 0 && !b.To.Before(cur.Add(time.Hour)):
			out = append(out, segment{idx, levelHour, cur, cur.Add(time.Hour)})
			cur = cur.Add(time.Hour)
		default:
			end := minTime(b.To, time.Unix(u-mod(u, 3600)+3600, 0))
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
