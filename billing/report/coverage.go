package report

import (
	"time"

	"github.com/gpuledger/gpuledger/billing/ledger"
)

// coverage returns the days of [from, to) that the ledger has data for:
// from the start of the first day bucket with rows to the end of the last,
// clipped to the period. Both are zero when no bucket has rows.
func coverage(aggs []ledger.Aggregate, from, to time.Time, loc *time.Location) (first, last time.Time) {
	for _, a := range aggs {
		if a.Rows == 0 {
			continue
		}
		if first.IsZero() || a.BucketStart.Before(first) {
			first = a.BucketStart
		}
		if last.IsZero() || a.BucketStart.After(last) {
			last = a.BucketStart
		}
	}
	if first.IsZero() {
		return first, last
	}
	l := last.In(loc)
	y, m, d := l.Date()
	last = ledger.DayStart(y, m, d+1, loc)
	if first.Before(from) {
		first = from
	}
	if last.After(to) {
		last = to
	}
	return first.In(loc), last.In(loc)
}

// Partial reports whether the report covers less than its period: the
// ledger's data starts after the period starts or ends before it ends (day
// by day), or the period had not ended when the report was generated
// (GeneratedAt). A partial month is month to date, not the month's bill.
func (r *Report) Partial() bool {
	if r.Empty() {
		return false
	}
	return r.DataFrom.After(r.From) || r.DataTo.Before(r.To) || (!r.GeneratedAt.IsZero() && r.GeneratedAt.Before(r.To))
}

// PartialNote says which part of the period the data covers, for a
// partial report's title, JSON and warning; "" when the report is whole.
func (r *Report) PartialNote() string {
	if !r.Partial() {
		return ""
	}
	end := r.DataTo
	if !r.GeneratedAt.IsZero() && r.GeneratedAt.Before(end) {
		end = r.GeneratedAt.In(r.Book.Location)
	}
	return "partial: ledger data " + dayOrInstant(r.DataFrom) + " to " + dayOrInstant(end) + " only"
}

// dayOrInstant writes a local midnight as its date, else to the minute.
func dayOrInstant(t time.Time) string {
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02 15:04 MST")
}
