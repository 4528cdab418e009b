package groundtruth

import (
	"sort"
	"time"
)

// splitMPS attributes an MPS GPU's busy time. Per driver sample period k
// (aligned to the scenario start) the device is busy for the integral of
// min(1, S), S the sum of all fractions; that time is split among owners in
// proportion to their integral of activity in k, the finest split NVML can
// observe. The sweep visits only the breakpoints of the activity; whole
// periods inside one constant stretch are settled in bulk, so a day-long
// scenario costs no more than its number of segments.
func splitMPS(tracks []track, period time.Duration) map[string]float64 {
	type edge struct {
		at    time.Duration
		owner string
		frac  float64
		open  bool
	}
	var edges []edge
	for _, t := range tracks {
		for _, s := range t.segs {
			edges = append(edges, edge{s.From, t.owner, s.Fraction, true}, edge{s.To, t.owner, s.Fraction, false})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].at < edges[j].at })

	used := make(map[string]float64)
	acc := newPeriodAcc(used)
	// active holds each owner's open segments' fractions; the per-owner sum
	// is recomputed from them so that no rounding drift builds up.
	active := make(map[string][]float64)
	for i := 0; i < len(edges); {
		at := edges[i].at
		for ; i < len(edges) && edges[i].at == at; i++ {
			e := edges[i]
			if e.open {
				active[e.owner] = append(active[e.owner], e.frac)
			} else {
				active[e.owner] = removeOne(active[e.owner], e.frac)
			}
		}
		if i == len(edges) {
			break
		}
		sums, total := ownerSums(active)
		if total > 0 {
			acc.addStretch(at, edges[i].at, period, sums, total)
		}
	}
	acc.flush()
	return used
}

func removeOne(fs []float64, f float64) []float64 {
	for i, v := range fs {
		if v == f {
			return append(fs[:i], fs[i+1:]...)
		}
	}
	return fs
}

func ownerSums(active map[string][]float64) (map[string]float64, float64) {
	sums := make(map[string]float64, len(active))
	total := 0.0
	// Sorted so that the float sums, and so truth.json, are reproducible.
	for _, o := range sortedKeys(active) {
		fs := active[o]
		s := 0.0
		for _, f := range fs {
			s += f
		}
		if s > 0 {
			sums[o] = s
			total += s
		}
	}
	return sums, total
}

// periodAcc gathers the activity of one driver sample period at a time.
type periodAcc struct {
	used  map[string]float64
	k     int64
	area  map[string]float64
	total float64 // integral of S
	busy  float64 // integral of min(1, S)
}

func newPeriodAcc(used map[string]float64) *periodAcc {
	return &periodAcc{used: used, k: -1, area: make(map[string]float64)}
}

// addStretch adds [a, b) where every owner's activity is constant.
func (p *periodAcc) addStretch(a, b, period time.Duration, sums map[string]float64, total float64) {
	ka, kb := int64(a/period), int64((b-1)/period)
	if ka == kb {
		p.add(ka, b-a, sums, total)
		return
	}
	p.add(ka, time.Duration(ka+1)*period-a, sums, total)
	if full := kb - ka - 1; full > 0 {
		busy := min(1, total) * (time.Duration(full) * period).Seconds()
		for o, s := range sums {
			p.used[o] += busy * s / total
		}
	}
	p.add(kb, b-time.Duration(kb)*period, sums, total)
}

func (p *periodAcc) add(k int64, d time.Duration, sums map[string]float64, total float64) {
	if k != p.k {
		p.flush()
		p.k = k
	}
	sec := d.Seconds()
	for o, s := range sums {
		p.area[o] += s * sec
	}
	p.total += total * sec
	p.busy += min(1, total) * sec
}

func (p *periodAcc) flush() {
	if p.total > 0 {
		for o, a := range p.area {
			p.used[o] += p.busy * a / p.total
		}
	}
	clear(p.area)
	p.total, p.busy = 0, 0
}
