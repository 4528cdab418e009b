package clickhouse

import (
	"fmt"
	"math"
	"time"
)

// Times are stored as a DateTime second plus a UInt32 of nanoseconds. These
// helpers write exact comparisons against such a pair as SQL, with literal
// unix seconds typed as UTC: toDateTime(N, 'UTC') is the same instant on
// every server whatever its time zone, including when a Distributed table
// forwards the condition to shards (the analyzer of 24.x and later may
// render a zoneless constant as local time text, which is ambiguous in the
// repeated hour of a DST change: ClickHouse issue 117835).

// clampSec maps t to DateTime's range; out-of-range bounds become the
// range's ends, which every stored time is inside.
func clampSec(t time.Time) (int64, uint32) {
	u := t.Unix()
	switch {
	case u < 0:
		return 0, 0
	case u > math.MaxUint32:
		return math.MaxUint32, 0
	}
	return u, uint32(t.Nanosecond())
}

// dt is a DateTime literal for unix second sec, clamped to DateTime's range
// as clampSec does: 18.16 wraps out-of-range values and current releases
// leave them undefined, and callers pass whole-day roundings of query
// bounds that may fall outside it.
func dt(sec int64) string {
	sec = max(0, min(sec, math.MaxUint32))
	return fmt.Sprintf("toDateTime(%d, 'UTC')", sec)
}

// timeGE is "(col, nsCol) >= t".
func timeGE(col, nsCol string, t time.Time) string {
	sec, ns := clampSec(t)
	if ns == 0 {
		return fmt.Sprintf("%s >= %s", col, dt(sec))
	}
	return fmt.Sprintf("(%s > %s OR (%s = %s AND %s >= %d))", col, dt(sec), col, dt(sec), nsCol, ns)
}

// timeLT is "(col, nsCol) < t".
func timeLT(col, nsCol string, t time.Time) string {
	sec, ns := clampSec(t)
	if ns == 0 {
		return fmt.Sprintf("%s < %s", col, dt(sec))
	}
	return fmt.Sprintf("(%s < %s OR (%s = %s AND %s < %d))", col, dt(sec), col, dt(sec), nsCol, ns)
}

// timeGT is "(col, nsCol) > t".
func timeGT(col, nsCol string, t time.Time) string {
	sec, ns := clampSec(t)
	return fmt.Sprintf("(%s > %s OR (%s = %s AND %s > %d))", col, dt(sec), col, dt(sec), nsCol, ns)
}

// rawRange is "interval_start in [from, to)" for the raw table, plus the
// range of its leading key column toStartOfHour(interval_start) that this
// implies. ClickHouse 18.16 does not derive a key range for
// toStartOfHour(x) from conditions on x: without the hint, one hour read
// FINAL scanned every row of its month (52 million rows, 26 s, in
// BenchmarkMonthlyReportClickHouse), with it only that hour's granules.
func rawRange(from, to time.Time) string {
	return "(" + timeGE("interval_start", "interval_start_ns", from) + " AND " +
		timeLT("interval_start", "interval_start_ns", to) + " AND " + hourKeyRange(from, to) + ")"
}

// hourKeyRange bounds toStartOfHour(interval_start) for interval_start in
// [from, to). An hour start is in (t - 1h, t] whatever the zone the
// function uses, so the bounds hold without assuming it is UTC.
func hourKeyRange(from, to time.Time) string {
	const key = "toStartOfHour(interval_start)"
	fs, _ := clampSec(from)
	ts, tns := clampSec(to)
	op := "<"
	if tns > 0 {
		op = "<=" // a row in the second of to, before its nanoseconds
	}
	cond := fmt.Sprintf("%s %s %s", key, op, dt(ts))
	if fs >= 3600 {
		cond = fmt.Sprintf("%s > %s AND %s", key, dt(fs-3600), cond)
	}
	return cond
}

// openBounds turns the zero times of an open-ended range into DateTime's
// ends.
func openBounds(from, to time.Time) (time.Time, time.Time) {
	if from.IsZero() {
		from = time.Unix(0, 0)
	}
	if to.IsZero() {
		to = time.Unix(math.MaxUint32, 0)
	}
	return from, to
}

func joinTime(sec time.Time, ns uint32) time.Time {
	return time.Unix(sec.Unix(), int64(ns)).UTC()
}

// floorUnix and ceilUnix round t to a multiple of step seconds.
func floorUnix(t time.Time, step int64) int64 {
	u := t.Unix()
	return u - mod(u, step)
}

func ceilUnix(t time.Time, step int64) int64 {
	f := floorUnix(t, step)
	if f == t.Unix() && t.Nanosecond() == 0 {
		return f
	}
	return f + step
}
