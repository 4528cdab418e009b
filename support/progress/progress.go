// Package progress draws `gpuledger ledger export`'s progress bar on a
// terminal: how far through a time range an export is, from the time of
// the last row written (rows come in time order, so no count first).
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Bar shows how far through [from, to) an export is. It is not safe for
// concurrent use: the export calls it from one goroutine.
type Bar struct {
	w        io.Writer
	from, to time.Time
	began    time.Time
	last     time.Time
	done     int64
	drawn    time.Time
	now      func() time.Time
}

// redraw is how often Update redraws at most.
const redraw = 200 * time.Millisecond

// New is a bar for [from, to) drawn on w, its rate counted from now.
func New(w io.Writer, from, to time.Time) *Bar {
	return &Bar{w: w, from: from, to: to, began: time.Now(), now: time.Now}
}

// Observe notes a row's interval end: progress is the last one's place in
// [from, to).
func (p *Bar) Observe(end time.Time) { p.last = end }

// Update notes how many rows are done, and redraws at most every 200 ms.
func (p *Bar) Update(done int64) {
	p.done = done
	if p.now().Sub(p.drawn) < redraw {
		return
	}
	p.draw(p.fraction())
}

// fraction is how far through [from, to) the last row observed is.
func (p *Bar) fraction() float64 {
	if p.last.IsZero() {
		return 0
	}
	f := float64(p.last.Sub(p.from)) / float64(p.to.Sub(p.from))
	return min(1, max(0, f))
}

func (p *Bar) draw(f float64) {
	const width = 30
	filled := int(f * width)
	rate := float64(p.done) / max(p.now().Sub(p.began).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\rexporting [%s%s] %3.0f%%  %d rows  %.0f rows/s ",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), f*100, p.done, rate)
	p.drawn = p.now()
}

// Finish draws the final state (full when the export succeeded) and ends
// the line, before anything else is logged.
func (p *Bar) Finish(ok bool) {
	f := p.fraction()
	if ok {
		f = 1
	}
	p.draw(f)
	fmt.Fprintln(p.w)
}
