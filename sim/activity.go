package sim

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// Cursor slots. Each consumer of activity moves through time on its own and
// (almost always) forward, so each keeps its own cursor per process and its
// own active set per device: a day-long run then costs the same per
// simulated second as a minute-long one.
const (
	slotPeriod = iota // driver sample periods: NVML samples, power
	slotEnergy        // the energy counter
	slotDCGM          // DCGM watch windows
	numSlots
)

// peakSlack absorbs float noise when deciding that fractions cannot add up
// to more than 1 (0.3+0.7 may be 1.0000000000000002).
const peakSlack = 1e-9

// proc is one simulated GPU process (or the synthetic MPS server).
type proc struct {
	pid    uint32
	gpu    *gpu
	inst   *migInst // nil when it runs on the whole GPU
	memMiB uint64   // framebuffer outside mem's intervals
	// mem is framebuffer over time (sorted [from, to) intervals, each
	// overriding memMiB); memCur is the reading cursor (memory.go).
	mem    []memSegment
	memCur int
	// start and end bound its life; it is alive when start <= t <= end.
	start, end time.Duration
	segs       []segment
	// spanFrom and spanTo bound its non-idle segments; empty when it never
	// does any work.
	spanFrom, spanTo time.Duration
	cur              [numSlots]int

	comm, cgroup string
	mpsServer    bool
}

// segment is a busy interval [from, to) at a constant fraction.
type segment struct {
	from, to time.Duration
	frac     float64
}

// seek moves the slot's cursor to the first segment ending after a and
// returns it. Forward moves step (the common case: the next window starts
// where the last ended); long jumps and backward moves use binary search.
func (p *proc) seek(slot int, a time.Duration) int {
	segs := p.segs
	c := min(p.cur[slot], len(segs))
	if c > 0 && segs[c-1].to > a {
		c = sort.Search(c, func(i int) bool { return segs[i].to > a })
	}
	for steps := 0; c < len(segs) && segs[c].to <= a; steps++ {
		if steps == 8 {
			rest := segs[c:]
			c += sort.Search(len(rest), func(i int) bool { return rest[i].to > a })
			break
		}
		c++
	}
	p.cur[slot] = c
	return c
}

// integral returns the process's busy time within [a, b) in nanoseconds
// and its peak fraction there.
func (p *proc) integral(slot int, a, b time.Duration) (ns, peak float64) {
	for j := p.seek(slot, a); j < len(p.segs) && p.segs[j].from < b; j++ {
		s := p.segs[j]
		ns += s.frac * float64(min(s.to, b)-max(s.from, a))
		peak = max(peak, s.frac)
	}
	return ns, peak
}

// activeSet tracks, for one slot, the processes of a device whose busy span
// may intersect the slot's current window.
type activeSet struct {
	next  int // index into group.bySpan of the next process to admit
	procs []*proc
	lastA time.Duration
}

// window returns a superset of the processes whose busy span intersects
// [a, b). Windows whose start moves backward rebuild the set.
func (s *activeSet) window(bySpan []*proc, a, b time.Duration) []*proc {
	if a < s.lastA {
		s.next, s.procs = 0, s.procs[:0]
	}
	s.lastA = a
	for s.next < len(bySpan) && bySpan[s.next].spanFrom < b {
		s.procs = append(s.procs, bySpan[s.next])
		s.next++
	}
	keep := s.procs[:0]
	for _, p := range s.procs {
		if p.spanTo > a {
			keep = append(keep, p)
		}
	}
	clear(s.procs[len(keep):])
	s.procs = keep
	return keep
}

// group is the set of processes sharing one device: a whole GPU, or one MIG
// instance. Its busy ratio at t is min(1, S(t)), S the sum of fractions.
type group struct {
	bySpan []*proc // processes with work, sorted by spanFrom
	active [numSlots]activeSet
	alive  []*proc // alive now, sorted by PID
}

// part is one process's busy time in a window.
type part struct {
	p  *proc
	ns float64
}

// event is a step of S(t) during a sweep.
type event struct {
	at    time.Duration
	delta float64
}

// scratch holds buffers reused across integrations (under Node.mu).
type scratch struct {
	parts  []part
	events []event
}

// busy returns the group's busy time, the integral of min(1, S), within
// [a, b) in nanoseconds. When parts is true, s.parts receives every process
// with non-zero busy time in the window.
func (g *group) busy(s *scratch, slot int, a, b time.Duration, parts bool) float64 {
	s.parts = s.parts[:0]
	if b <= a {
		return 0
	}
	procs := g.active[slot].window(g.bySpan, a, b)
	var sum, peaks float64
	for _, p := range procs {
		ns, peak := p.integral(slot, a, b)
		sum += ns
		peaks += peak
		if parts && ns > 0 {
			s.parts = append(s.parts, part{p, ns})
		}
	}
	if peaks <= 1+peakSlack {
		// S never exceeds 1 here, so min(1, S) integrates to the plain sum.
		return sum
	}
	return g.sweep(s, slot, procs, a, b)
}

// sweep integrates min(1, S) exactly over [a, b) by walking the merged
// steps of every process's fraction.
func (g *group) sweep(s *scratch, slot int, procs []*proc, a, b time.Duration) float64 {
	ev := s.events[:0]
	for _, p := range procs {
		for j := p.seek(slot, a); j < len(p.segs) && p.segs[j].from < b; j++ {
			sg := p.segs[j]
			if sg.frac == 0 {
				continue
			}
			ev = append(ev, event{max(sg.from, a), sg.frac}, event{min(sg.to, b), -sg.frac})
		}
	}
	slices.SortFunc(ev, func(x, y event) int { return cmp.Compare(x.at, y.at) })
	var total, level float64
	last := a
	for _, e := range ev {
		if e.at > last {
			total += clamp01(level) * float64(e.at-last)
			last = e.at
		}
		level += e.delta
	}
	s.events = ev
	return total
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

// addAlive inserts p into the alive list, kept sorted by PID.
func (g *group) addAlive(p *proc) {
	i, _ := slices.BinarySearchFunc(g.alive, p.pid, func(q *proc, pid uint32) int {
		return cmp.Compare(q.pid, pid)
	})
	// Place after equal PIDs so a reused PID's newer process comes last.
	for i < len(g.alive) && g.alive[i].pid == p.pid {
		i++
	}
	g.alive = slices.Insert(g.alive, i, p)
}

// removeAlive drops p from the alive list.
func (g *group) removeAlive(p *proc) {
	if i := slices.Index(g.alive, p); i >= 0 {
		g.alive = slices.Delete(g.alive, i, i+1)
	}
}
