package scenario

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// pendingSegment is a busy interval with the path it came from, kept until
// the process's segments have been checked as a whole.
type pendingSegment struct {
	path string
	Segment
}

func (c *converter) process(path string, r FileProcess, life span) Process {
	pr := Process{Device: r.Device, Comm: c.text(field(path, "comm"), r.Comm, MaxNameLen, "a process name")}
	if !r.PID.set() {
		c.p.addf(field(path, "pid"), "is required")
	} else if pid, ok := intField(&c.p, field(path, "pid"), r.PID, 0, 1, math.MaxUint32); ok {
		pr.PID = uint32(pid)
	}
	if r.Device == "" {
		c.p.addf(field(path, "device"), "is required")
	}
	mem, _ := intField(&c.p, field(path, "memoryMiB"), r.MemoryMiB, 0, 0, math.MaxInt64)
	pr.MemoryMiB = uint64(mem)
	lifeOK := c.lifetime(path, r, life, &pr)

	var pending []pendingSegment
	switch {
	case len(r.Busy) > 0 && r.BusyTrace != "":
		c.p.addf(field(path, "busyTrace"), "%q given together with busy; give one of them", shortText(r.BusyTrace))
		return pr
	case r.BusyTrace != "":
		pending = c.traceSegments(field(path, "busyTrace"), r.BusyTrace)
	default:
		pending = c.inlineSegments(field(path, "busy"), r.Busy)
	}
	pr.Busy = c.checkSegments(pending, pr, lifeOK)
	pr.Memory = c.memory(path, r, pr, lifeOK)
	return pr
}

// lifetime fills pr.Start and pr.End and reports whether they are usable
// for checking the busy segments against.
func (c *converter) lifetime(path string, r FileProcess, life span, pr *Process) bool {
	var okStart, okEnd bool
	pr.Start, okStart = durationField(&c.p, field(path, "start"), r.Start, life.defStart)
	pr.End, okEnd = durationField(&c.p, field(path, "end"), r.End, life.defEnd)
	if !okStart || !okEnd {
		return false
	}
	switch {
	case pr.Start < life.start:
		c.p.addf(field(path, "start"), "%s is before %s %s", pr.Start, life.startName, life.start)
	case pr.End > life.end:
		c.p.addf(field(path, "end"), "%s is after %s %s", pr.End, life.endName, life.end)
	case pr.Start >= pr.End:
		c.p.addf(field(path, "start"), "%s is not before the process's end %s", pr.Start, pr.End)
	default:
		return true
	}
	return false
}

func (c *converter) inlineSegments(path string, raw []FileSegment) []pendingSegment {
	out := make([]pendingSegment, 0, len(raw))
	for i, r := range raw {
		sp := index(path, i)
		from, okFrom := c.requiredDuration(field(sp, "from"), r.From)
		to, okTo := c.requiredDuration(field(sp, "to"), r.To)
		ok := okFrom && okTo
		var frac float64
		if r.Fraction == nil {
			c.p.addf(field(sp, "fraction"), "is required")
			ok = false
		} else {
			frac = *r.Fraction
		}
		if ok {
			out = append(out, pendingSegment{sp, Segment{From: from, To: to, Fraction: frac}})
		}
	}
	return out
}

func (c *converter) requiredDuration(path string, v Value) (time.Duration, bool) {
	if !v.set() {
		c.p.addf(path, "is required")
		return 0, false
	}
	return durationField(&c.p, path, v, 0)
}

func (c *converter) traceSegments(path, name string) []pendingSegment {
	rows, err := readTrace(tracePath(c.dir, name))
	if err != nil {
		c.p.addf(path, "%q: %v", shortText(name), err)
		return nil
	}
	out := make([]pendingSegment, 0, len(rows))
	for _, r := range rows {
		sp := fmt.Sprintf("%s(%s line %d)", path, name, r.line)
		from, errFrom := secondsToDuration(r.from)
		to, errTo := secondsToDuration(r.to)
		switch {
		case errFrom != nil:
			c.p.addf(field(sp, "from"), "%v", errFrom)
		case errTo != nil:
			c.p.addf(field(sp, "to"), "%v", errTo)
		default:
			out = append(out, pendingSegment{sp, Segment{From: from, To: to, Fraction: r.frac}})
		}
	}
	return out
}

// checkSegments validates each segment, then sorts them and rejects overlaps.
// Segments with fraction 0 are dropped: they say the same as no segment.
// Segments must lie inside the process lifetime (the examples never extend
// past it, so this is an error rather than something to clip).
func (c *converter) checkSegments(pending []pendingSegment, pr Process, lifeOK bool) []Segment {
	bad := false
	for _, s := range pending {
		switch {
		case !(s.Fraction >= 0 && s.Fraction <= 1):
			c.p.addf(field(s.path, "fraction"), "%v is outside [0,1]", s.Fraction)
		case s.From >= s.To:
			c.p.addf(field(s.path, "from"), "%s is not before to %s", s.From, s.To)
		case lifeOK && (s.From < pr.Start || s.To > pr.End):
			c.p.addf(s.path, "[%s,%s) lies outside the process lifetime [%s,%s]", s.From, s.To, pr.Start, pr.End)
		default:
			continue
		}
		bad = true
	}
	if bad {
		return nil
	}
	slices.SortStableFunc(pending, func(a, b pendingSegment) int {
		return cmp.Compare(a.From, b.From)
	})
	out := make([]Segment, 0, len(pending))
	var last *pendingSegment // the segment reaching furthest so far
	for i := range pending {
		s := &pending[i]
		if last != nil && s.From < last.To {
			c.p.addf(s.path, "[%s,%s) overlaps %s [%s,%s)", s.From, s.To, last.path, last.From, last.To)
		}
		if last == nil || s.To > last.To {
			last = s
		}
		if s.Fraction > 0 {
			out = append(out, s.Segment)
		}
	}
	return out
}
