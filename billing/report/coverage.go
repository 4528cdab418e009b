package report

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
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
	last = calendar.DayStart(y, m, d+1, loc)
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
// by day), the period had not ended when the report was generated
// (GeneratedAt), or GPUs it saw have coverage gaps (gaps.go). A partial
// month is month to date or missing data, not the month's bill.
func (r *Report) Partial() bool {
	if r.Empty() {
		return false
	}
	return r.short() || !r.Coverage.Empty()
}

// short reports whether the data's days, or the time the report was
// generated, end before the period or start after it.
func (r *Report) short() bool {
	return r.DataFrom.After(r.From) || r.DataTo.Before(r.To) || (!r.GeneratedAt.IsZero() && r.GeneratedAt.Before(r.To))
}

// PartialNote says which part of the period the data covers and, where
// GPUs have gaps, what is missing (GapNote), for a partial report's title,
// JSON and warning; "" when the report is whole.
func (r *Report) PartialNote() string {
	if !r.Partial() {
		return ""
	}
	start, end := r.DataBounds()
	note := "partial: ledger data " + dayOrInstant(start) + " to " + dayOrInstant(end)
	if r.short() {
		note += " only"
	}
	if g := r.GapNote(); g != "" {
		note += "; " + g
	}
	return note
}

// DataBounds is what the report's data covers: from the start of the
// period's first ledger row to the end of its last (DataStart, DataEnd;
// the day bounds where the source could not say), and no later than
// GeneratedAt. Zero for an empty period.
func (r *Report) DataBounds() (start, end time.Time) {
	start, end = r.DataStart, r.DataEnd
	if start.IsZero() {
		start, end = r.DataFrom, r.DataTo
	}
	if !r.GeneratedAt.IsZero() && !end.IsZero() && r.GeneratedAt.Before(end) {
		end = r.GeneratedAt.In(r.Book.Location)
	}
	return start, end
}

// dayOrInstant writes a local midnight as its date, else to the minute.
func dayOrInstant(t time.Time) string {
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02 15:04 MST")
}

// rowBounder is a source that finds the extremes of its rows itself:
// ClickHouse, in the server, and one cluster's view of it
// (ledger.OneCluster over a ledger.ClusterRowBounder). At 10,000 GPUs an edge hour is ~700,000 rows,
// and streaming two of them here took 2.3 s of a 2.7 s monthly report.
type rowBounder interface {
	// FirstRowStart, LastRowStart and LastRowEnd are the start of the
	// earliest, the start of the latest and the end of the latest
	// deduplicated row whose interval starts in [from, to), as Rows would
	// stream them; zero when there is none.
	FirstRowStart(ctx context.Context, from, to time.Time) (time.Time, error)
	LastRowStart(ctx context.Context, from, to time.Time) (time.Time, error)
	LastRowEnd(ctx context.Context, from, to time.Time) (time.Time, error)
}

// dataBounds refines the day coverage [first, last) to the start of the
// period's first ledger row and the end of its last, clipped to [from, to).
// The start is the earliest row start of the first day. The end is the
// latest end of the rows that start in the last day's last hour with rows.
//
// A rowBounder source finds all three in the server: the first day's
// earliest start, the last day's latest start (which names the last
// hour), each searched from the day's edge inward (search), then that
// hour's latest end. Any other source is asked for an
// hour aggregate of the first and last day (one when the data lies in one
// day), which finds the edge hours, and those two hours' rows are
// streamed. A source that does neither (not a ledger.RowReader) keeps the
// day bounds. The reads are bounded, whatever the period's length. (The
// hour aggregates of an edge day took 50-60 ms each in ClickHouse at
// 1,000 and at 10,000 GPUs, against 2-15 ms for an hour's extreme.)
func dataBounds(ctx context.Context, src Source, first, last, from, to time.Time, loc *time.Location) (start, end time.Time, err error) {
	if first.IsZero() {
		return first, last, nil
	}
	start, end = first, last
	day := func(t time.Time) (time.Time, time.Time) {
		y, m, d := t.In(loc).Date()
		return calendar.DayStart(y, m, d, loc), calendar.DayStart(y, m, d+1, loc)
	}
	fa, fb := day(first)
	la, lb := day(last.Add(-time.Nanosecond))
	fa, fb, la, lb = maxTime(fa, from), minTime(fb, to), maxTime(la, from), minTime(lb, to)
	var (
		lastRowEnd func(ctx context.Context, from, to time.Time) (time.Time, error)
		lastHour   time.Time // the last hour with rows; zero when none
	)
	if rb, ok := src.(rowBounder); ok {
		lastRowEnd = rb.LastRowEnd
		fhs, err := calendar.Buckets(fa, fb, loc, ledger.BucketHour)
		if err != nil {
			return first, last, err
		}
		s, err := search(ctx, fhs, false, rb.FirstRowStart)
		if err != nil {
			return first, last, fmt.Errorf("cannot read the ledger's first rows: %w", err)
		}
		if !s.IsZero() {
			start = maxTime(s, from).In(loc)
		}
		hs, err := calendar.Buckets(la, lb, loc, ledger.BucketHour)
		if err != nil {
			return first, last, err
		}
		ls, err := search(ctx, hs, true, rb.LastRowStart)
		if err != nil {
			return first, last, fmt.Errorf("cannot read the ledger's last rows: %w", err)
		}
		// The hour bucket that holds it, as an hour aggregate of the day
		// buckets it (calendar.Buckets: local hours, cut where an offset
		// changes).
		for _, h := range hs {
			if !ls.IsZero() && !ls.Before(h.From) && ls.Before(h.To) {
				lastHour = h.Start
				break
			}
		}
	} else {
		// The one ability a Source may lack on purpose: a reader of day
		// aggregates only (no ledger.RowReader; both stores have it) is
		// covered to the day, which is all it can say.
		rr, err := ledger.Rows(src)
		if err != nil {
			return first, last, nil
		}
		bounds := streamedBounds{rr}
		lastRowEnd = bounds.LastRowEnd
		hours := func(a, b time.Time) ([]time.Time, error) {
			aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: a, To: b, Location: loc, Bucket: ledger.BucketHour})
			if err != nil {
				return nil, fmt.Errorf("cannot read the ledger's hours from %s to %s: %w", a.Format(time.RFC3339), b.Format(time.RFC3339), err)
			}
			var out []time.Time
			for _, g := range aggs {
				if g.Rows > 0 {
					out = append(out, g.BucketStart)
				}
			}
			return out, nil
		}
		edge := func(hs []time.Time, latest bool) time.Time {
			var e time.Time
			for _, h := range hs {
				if e.IsZero() || h.After(e) == latest {
					e = h
				}
			}
			return e
		}
		hs, err := hours(fa, fb)
		if err != nil {
			return first, last, err
		}
		if h := edge(hs, false); !h.IsZero() {
			s, err := bounds.FirstRowStart(ctx, maxTime(h, from), minTime(h.Add(time.Hour), to))
			if err != nil {
				return first, last, fmt.Errorf("cannot read the ledger's first rows: %w", err)
			}
			if !s.IsZero() {
				start = maxTime(s, from).In(loc)
			}
		}
		// A period whose data lies in one day (a day's report) has one
		// edge day: its hours are read once.
		if !la.Equal(fa) || !lb.Equal(fb) {
			if hs, err = hours(la, lb); err != nil {
				return first, last, err
			}
		}
		lastHour = edge(hs, true)
	}
	if !lastHour.IsZero() {
		e, err := lastRowEnd(ctx, maxTime(lastHour, from), minTime(lastHour.Add(time.Hour), to))
		if err != nil {
			return first, last, fmt.Errorf("cannot read the ledger's last rows: %w", err)
		}
		if !e.IsZero() {
			end = minTime(e, to).In(loc)
		}
	}
	return start, end, nil
}

// search asks find (the earliest or latest row start in a range) over
// the hour buckets hs in spans of 1, 2, 4, ... buckets from the first
// hour (from the last when fromEnd), until a span has rows: the first
// span with rows holds the extreme. A span without rows costs the server
// almost nothing (the rows are sorted by hour), so the rows read are
// about those of the hours between the edge and the data, not the whole
// day's (a day's starts at 10,000 GPUs are 14 M rows, 160 ms).
func search(ctx context.Context, hs []calendar.Bucket, fromEnd bool, find func(ctx context.Context, from, to time.Time) (time.Time, error)) (time.Time, error) {
	for done, size := 0, 1; done < len(hs); size *= 2 {
		k := min(size, len(hs)-done)
		a, b := hs[done].From, hs[done+k-1].To
		if fromEnd {
			a, b = hs[len(hs)-done-k].From, hs[len(hs)-done-1].To
		}
		t, err := find(ctx, a, b)
		if err != nil || !t.IsZero() {
			return t, err
		}
		done += k
	}
	return time.Time{}, nil
}

// streamedBounds finds the bounds of a source's rows by streaming them.
type streamedBounds struct{ rr ledger.RowReader }

func (b streamedBounds) FirstRowStart(ctx context.Context, from, to time.Time) (first time.Time, err error) {
	err = b.rr.Rows(ctx, from, to, func(r attribution.Row) error {
		if first.IsZero() || r.IntervalStart.Before(first) {
			first = r.IntervalStart
		}
		return nil
	})
	return first, err
}

func (b streamedBounds) LastRowEnd(ctx context.Context, from, to time.Time) (last time.Time, err error) {
	err = b.rr.Rows(ctx, from, to, func(r attribution.Row) error {
		if r.IntervalEnd.After(last) {
			last = r.IntervalEnd
		}
		return nil
	})
	return last, err
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
