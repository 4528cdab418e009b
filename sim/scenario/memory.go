package scenario

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// maxTraceMiB bounds a memory trace's mib column: above 2^53 a float64
// no longer holds every whole number, so the value read would not be the
// value written.
const maxTraceMiB = 1 << 53

// pendingMemory is a memory interval with the path it came from, kept
// until the process's intervals have been checked as a whole.
type pendingMemory struct {
	path string
	MemorySegment
}

// memory reads a process's memory or memoryTrace (one of them) and checks
// the intervals: from before to, inside the process's life, no overlaps.
func (c *converter) memory(path string, r FileProcess, pr Process, lifeOK bool) []MemorySegment {
	var pending []pendingMemory
	switch {
	case len(r.Memory) > 0 && r.MemoryTrace != "":
		c.p.addf(field(path, "memoryTrace"), "%q given together with memory; give one of them", shortText(r.MemoryTrace))
		return nil
	case r.MemoryTrace != "":
		pending = c.traceMemory(field(path, "memoryTrace"), r.MemoryTrace)
	default:
		pending = c.inlineMemory(field(path, "memory"), r.Memory)
	}
	return c.checkMemory(pending, pr, lifeOK)
}

func (c *converter) inlineMemory(path string, raw []FileMemorySegment) []pendingMemory {
	out := make([]pendingMemory, 0, len(raw))
	for i, r := range raw {
		sp := index(path, i)
		from, okFrom := c.requiredDuration(field(sp, "from"), r.From)
		to, okTo := c.requiredDuration(field(sp, "to"), r.To)
		var mib int64
		okMiB := false
		if !r.MiB.set() {
			c.p.addf(field(sp, "mib"), "is required")
		} else {
			mib, okMiB = intField(&c.p, field(sp, "mib"), r.MiB, 0, 0, math.MaxInt64)
		}
		if okFrom && okTo && okMiB {
			out = append(out, pendingMemory{sp, MemorySegment{From: from, To: to, MiB: uint64(mib)}})
		}
	}
	return out
}

func (c *converter) traceMemory(path, name string) []pendingMemory {
	rows, err := readTraceRows(tracePath(c.dir, name), "memory trace", memoryTraceHeader)
	if err != nil {
		c.p.addf(path, "%q: %v", shortText(name), err)
		return nil
	}
	out := make([]pendingMemory, 0, len(rows))
	for _, r := range rows {
		sp := fmt.Sprintf("%s(%s line %d)", path, name, r.line)
		from, errFrom := secondsToDuration(r.v[0])
		to, errTo := secondsToDuration(r.v[1])
		mib := r.v[2]
		switch {
		case errFrom != nil:
			c.p.addf(field(sp, "from"), "%v", errFrom)
		case errTo != nil:
			c.p.addf(field(sp, "to"), "%v", errTo)
		case !(mib >= 0 && mib <= maxTraceMiB) || mib != math.Trunc(mib):
			c.p.addf(field(sp, "mib"), "%v is not a whole number of MiB in [0,2^53]", mib)
		default:
			out = append(out, pendingMemory{sp, MemorySegment{From: from, To: to, MiB: uint64(mib)}})
		}
	}
	return out
}

// checkMemory validates each interval, then sorts them and rejects
// overlaps. Unlike busy intervals, an interval of 0 MiB is kept: it
// overrides a non-zero memoryMiB.
func (c *converter) checkMemory(pending []pendingMemory, pr Process, lifeOK bool) []MemorySegment {
	bad := false
	for _, s := range pending {
		switch {
		case s.From >= s.To:
			c.p.addf(field(s.path, "from"), "%s is not before to %s", s.From, s.To)
		case lifeOK && (s.From < pr.Start || s.To > pr.End):
			c.p.addf(s.path, "[%s,%s) lies outside the process lifetime [%s,%s]", s.From, s.To, pr.Start, pr.End)
		default:
			continue
		}
		bad = true
	}
	if bad || len(pending) == 0 {
		return nil
	}
	slices.SortStableFunc(pending, func(a, b pendingMemory) int { return cmp.Compare(a.From, b.From) })
	out := make([]MemorySegment, 0, len(pending))
	var last *pendingMemory // the interval reaching furthest so far
	for i := range pending {
		s := &pending[i]
		if last != nil && s.From < last.To {
			c.p.addf(s.path, "[%s,%s) overlaps %s [%s,%s)", s.From, s.To, last.path, last.From, last.To)
		}
		if last == nil || s.To > last.To {
			last = s
		}
		out = append(out, s.MemorySegment)
	}
	return out
}

// MemoryAt is the framebuffer the process holds at offset t: the MiB of
// the interval [From, To) covering t, else MemoryMiB. It does not look at
// the process's lifetime (see AliveAt).
func (p *Process) MemoryAt(t time.Duration) uint64 {
	i, _ := slices.BinarySearchFunc(p.Memory, t, func(s MemorySegment, t time.Duration) int {
		return cmp.Compare(s.From, t)
	})
	// p.Memory[i] is the first interval starting at or after t.
	if i < len(p.Memory) && p.Memory[i].From == t {
		return p.Memory[i].MiB
	}
	if i > 0 && t < p.Memory[i-1].To {
		return p.Memory[i-1].MiB
	}
	return p.MemoryMiB
}
