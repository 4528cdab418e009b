package clickhouse

import (
	"context"
	"testing"
	"time"
)

// The first start, last start and last end of the rows starting in a range, as the
// rows themselves give them: read in the server, never from a replaced
// version. The scenario: a 1-node, 1-GPU fleet from 10:00 to 12:00 whose
// first row starts 250 ms late, and whose last container row was first
// shipped ending at 12:07 and then replaced by a version ending at 12:00.
func TestRowBoundsAreTheDeduplicatedRows(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	ten := t0.Add(10 * time.Hour)
	rows := fleet(7, 1, 1, 120, ten)
	for i := range 5 { // the first minute's rows
		rows[i].IntervalStart = rows[i].IntervalStart.Add(250 * time.Millisecond)
	}
	last := len(rows) - 5 // the last minute's first (container) row
	stale := rows[last]
	stale.IntervalEnd = ten.Add(127 * time.Minute)
	appendAll(t, s, rows[:last], 5000)
	appendAll(t, s, append(rows[last:last:last], stale), 10)
	appendAll(t, s, rows[last:], 10) // a later version wins: ends 12:00

	first := ten.Add(250 * time.Millisecond)
	noon := ten.Add(2 * time.Hour)
	check := func(stage string) {
		t.Helper()
		for _, c := range []struct {
			from, to              time.Time
			start, lastStart, end time.Time
		}{
			{ten, ten.Add(time.Hour), first, ten.Add(59 * time.Minute), ten.Add(time.Hour)},
			{ten.Add(time.Hour), noon, ten.Add(time.Hour), ten.Add(119 * time.Minute), noon},
			{ten.Add(90 * time.Minute), noon, ten.Add(90 * time.Minute), ten.Add(119 * time.Minute), noon},           // a part of an hour
			{ten, noon.Add(time.Hour), first, ten.Add(119 * time.Minute), noon},                                      // a day's worth
			{ten, ten.Add(250 * time.Millisecond), time.Time{}, time.Time{}, time.Time{}},                            // before the first row
			{ten.Add(119*time.Minute + time.Nanosecond), noon.Add(time.Hour), time.Time{}, time.Time{}, time.Time{}}, // after the last start
			{noon, noon.Add(time.Hour), time.Time{}, time.Time{}, time.Time{}},
		} {
			start, err := s.FirstRowStart(ctx, c.from, c.to)
			if err != nil {
				t.Fatalf("%s: FirstRowStart: %v", stage, err)
			}
			lastStart, err := s.LastRowStart(ctx, c.from, c.to)
			if err != nil {
				t.Fatalf("%s: LastRowStart: %v", stage, err)
			}
			end, err := s.LastRowEnd(ctx, c.from, c.to)
			if err != nil {
				t.Fatalf("%s: LastRowEnd: %v", stage, err)
			}
			if !start.Equal(c.start) || !lastStart.Equal(c.lastStart) || !end.Equal(c.end) {
				t.Errorf("%s: [%s, %s): rows %s (last starting %s) to %s, want %s (%s) to %s", stage, c.from.Format(time.TimeOnly), c.to.Format(time.TimeOnly),
					start, lastStart, end, c.start, c.lastStart, c.end)
			}
		}
	}
	check("rollups stale")
	if err := s.RebuildRollups(ctx, ten, noon); err != nil {
		t.Fatal(err)
	}
	// The replaced version may still be stored (a merge drops it): the
	// clean rollups' count then differs from the stored one.
	check("rollups clean")
	if err := s.conn.Exec(ctx, "OPTIMIZE TABLE "+s.table(tableRows)+" FINAL"); err != nil {
		t.Fatal(err)
	}
	check("merged")
}
