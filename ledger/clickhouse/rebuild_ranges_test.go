package clickhouse

import (
	"testing"
	"time"
)

// TestRebuildQueryRanges: every stale hour lands in exactly one query, no
// query spans more than a day or holds more than rawRangesPerQuery ranges.
func TestRebuildQueryRanges(t *testing.T) {
	h0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	hour := func(i int) time.Time { return h0.Add(time.Duration(i) * time.Hour) }
	var segs []segment
	want := map[int64]bool{}
	add := func(from, to int) { // hours [from, to)
		segs = append(segs, segment{level: levelRaw, from: hour(from), to: hour(to)})
		for i := from; i < to; i++ {
			want[hour(i).Unix()] = true
		}
	}
	add(0, 31*24)              // a stale month
	for i := 0; i < 450; i++ { // then scattered single hours
		add(31*24+1+2*i, 31*24+2+2*i)
	}
	qs := rebuildQueryRanges(mergeSegments(segs))
	got := map[int64]int{}
	for qi, q := range qs {
		var span time.Duration
		for _, sg := range q {
			span += sg.to.Sub(sg.from)
			for h := sg.from; h.Before(sg.to); h = h.Add(time.Hour) {
				got[h.Unix()]++
			}
		}
		if span > rebuildQuerySpan || len(q) > rawRangesPerQuery {
			t.Errorf("query %d spans %s in %d ranges", qi, span, len(q))
		}
	}
	for h := range want {
		if got[h] != 1 {
			t.Errorf("hour %s in %d queries, want 1", time.Unix(h, 0).UTC(), got[h])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d hours queried, want %d", len(got), len(want))
	}
	// 31 day-long queries for the month, then the 450 single hours in
	// queries of at most rawRangesPerQuery ranges (and 24 hours).
	if len(qs) < 31+450/24 {
		t.Errorf("%d queries, want the month split by day", len(qs))
	}
}
