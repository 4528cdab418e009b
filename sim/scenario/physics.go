package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// fractionTolerance absorbs float noise in traces whose fractions add up to
// exactly 1 on paper.
const fractionTolerance = 1e-9

// maxListed caps the processes one physics error lists.
const maxListed = 8

// checkPhysics enforces that time-sliced contexts never keep a device more
// than fully busy: on exclusive, timeslicing and hami GPUs the fractions of
// all processes sum to at most 1 at every instant, and per instance on MIG
// GPUs. MPS runs kernels concurrently, so its sum is unrestricted.
func checkPhysics(p *problems, s *Scenario, devices map[string]deviceRef, procs []procRef) {
	byDevice := make(map[string][]procRef)
	var order []string
	for _, pr := range procs {
		if _, seen := byDevice[pr.p.Device]; !seen {
			order = append(order, pr.p.Device)
		}
		byDevice[pr.p.Device] = append(byDevice[pr.p.Device], pr)
	}
	for _, dev := range order {
		ref := devices[dev]
		gpu := s.GPUs[ref.gpu]
		if gpu.Mode == ModeMPS {
			continue
		}
		group := byDevice[dev]
		t, sum, over := firstOverload(group)
		if !over {
			continue
		}
		p.addf(ref.path(), "busy fractions on %s sum to %.6g at %s (%s), above 1 for mode %s",
			dev, sum, t, contributors(group, t), gpu.Mode)
	}
}

type edge struct {
	t     time.Duration
	delta float64
}

// firstOverload sweeps the segment boundaries of one device in time order
// with a running sum: O(n log n) in the number of segments. Segments are
// half-open, so all edges at one instant are applied before checking.
func firstOverload(procs []procRef) (at time.Duration, sum float64, over bool) {
	var edges []edge
	for _, pr := range procs {
		for _, seg := range pr.p.Busy {
			edges = append(edges, edge{seg.From, seg.Fraction}, edge{seg.To, -seg.Fraction})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.t, b.t) })
	active := 0
	for i := 0; i < len(edges); {
		t := edges[i].t
		for ; i < len(edges) && edges[i].t == t; i++ {
			sum += edges[i].delta
			if edges[i].delta > 0 {
				active++
			} else {
				active--
			}
		}
		if active == 0 {
			sum = 0 // drop accumulated rounding whenever the device goes idle
		}
		if sum > 1+fractionTolerance {
			// The running sum may have drifted; recompute before blaming.
			exact := sumAt(procs, t)
			if exact > 1+fractionTolerance {
				return t, exact, true
			}
			sum = exact
		}
	}
	return 0, 0, false
}

// sumAt adds the fractions of the segments covering t.
func sumAt(procs []procRef, t time.Duration) float64 {
	var sum float64
	for _, pr := range procs {
		if f, ok := fractionAt(pr.p.Busy, t); ok {
			sum += f
		}
	}
	return sum
}

// fractionAt finds the segment covering t in sorted segments.
func fractionAt(segs []Segment, t time.Duration) (float64, bool) {
	i, _ := slices.BinarySearchFunc(segs, t, func(s Segment, t time.Duration) int {
		return cmp.Compare(s.From, t)
	})
	// segs[i-1] is the last segment starting at or before t, if it starts before
	// t; an exact match at i starts at t.
	if i < len(segs) && segs[i].From == t {
		return segs[i].Fraction, true
	}
	if i > 0 && t < segs[i-1].To {
		return segs[i-1].Fraction, true
	}
	return 0, false
}

func contributors(procs []procRef, t time.Duration) string {
	var parts []string
	n := 0
	for _, pr := range procs {
		f, ok := fractionAt(pr.p.Busy, t)
		if !ok {
			continue
		}
		n++
		if n <= maxListed {
			parts = append(parts, fmt.Sprintf("%s pid %d: %g", pr.path, pr.p.PID, f))
		}
	}
	if n > maxListed {
		parts = append(parts, fmt.Sprintf("and %d more", n-maxListed))
	}
	return strings.Join(parts, ", ")
}
