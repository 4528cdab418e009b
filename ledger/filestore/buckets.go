package filestore

import (
	"time"

	"github.com/gpuledger/gpuledger/calendar"
)

// bucket is one calendar bucket, clipped to the query range as unix
// nanoseconds [lo, hi).
type bucket struct {
	start  time.Time // the calendar bucket's first instant, in the query zone
	lo, hi int64
}

// calendarBuckets is calendar.Buckets in the form the file store's
// aggregation uses (bounds in unix nanoseconds): the calendar is defined
// once, for both stores.
func calendarBuckets(from, to time.Time, loc *time.Location, unit string) ([]bucket, error) {
	bs, err := calendar.Buckets(from, to, loc, unit)
	if err != nil {
		return nil, err
	}
	out := make([]bucket, len(bs))
	for i, b := range bs {
		out[i] = bucket{start: b.Start, lo: b.From.UnixNano(), hi: b.To.UnixNano()}
	}
	return out, nil
}
