package whatif

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// TenantResult is one tenant's requests under one mode. Times are seconds.
type TenantResult struct {
	Name    string
	Hostile bool
	// Offered is the requests that arrived within the duration; Served
	// those that also completed within it.
	Offered, Served int64
	// P50 and P99 are latency percentiles of the served requests (NaN
	// when none was served).
	P50, P99 float64
	// MeanLatency and MeanWait are means over the served requests; the
	// wait is from arrival to the start of service (for time-slicing the
	// switch cost is part of the wait).
	MeanLatency, MeanWait float64
}

// ModeResult is one mode's result: all tenants pooled, then each.
type ModeResult struct {
	Mode            Mode
	Offered, Served int64
	P50, P99        float64 // NaN when nothing was served
	MeanLatency     float64
	// WellBehavedP50 and WellBehavedP99 pool the tenants not marked
	// hostile (equal to P50 and P99 when none is).
	WellBehavedP50, WellBehavedP99 float64
	Tenants                        []TenantResult
}

// ServedFraction is Served/Offered (1 when nothing was offered).
func (r ModeResult) ServedFraction() float64 {
	if r.Offered == 0 {
		return 1
	}
	return float64(r.Served) / float64(r.Offered)
}

// Simulate runs the modes (all three when none is given) over the same
// arrivals: run r of seed s draws tenant i's arrivals from PCG stream
// (s, r<<20 | i).
func Simulate(cfg Config, run int, modes ...Mode) ([]ModeResult, error) {
	p, err := cfg.params()
	if err != nil {
		return nil, err
	}
	if len(modes) == 0 {
		modes = AllModes
	}
	e := newEngine(p, modes)
	rngs := make([]*rand.Rand, p.n)
	next, mean := make([]float64, p.n), make([]float64, p.n)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(cfg.Seed, uint64(run)<<20|uint64(i)))
		mean[i] = 1 / p.rate[i]
		next[i] = rngs[i].ExpFloat64() * mean[i]
	}
	// Arrivals are merged into chunks, then each mode runs over a chunk
	// in its own tight loop: three times faster than offering every
	// arrival to the three modes in turn. The merge keeps the tenants
	// sorted by next arrival: the one served next is first, and its new
	// arrival is put back by a scan that mispredicts once, where an
	// argmin over the tenants mispredicts at every new minimum.
	order := make([]int, p.n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(next[x], next[y]) })
	const chunk = 1 << 13
	at, who := make([]float64, 0, chunk), make([]int32, 0, chunk)
	for done := false; !done; {
		at, who = at[:0], who[:0]
		for len(at) < chunk {
			i := order[0]
			a := next[i]
			if !(a < p.duration) {
				done = true
				break
			}
			at, who = append(at, a), append(who, int32(i))
			t := a + rngs[i].ExpFloat64()*mean[i]
			next[i] = t
			j := 1
			for ; j < len(order) && next[order[j]] < t; j++ {
				order[j-1] = order[j]
			}
			order[j-1] = i
		}
		e.arrive(at, who)
	}
	return e.results(cfg.Tenants, cfg.leaveOut-1), nil
}

// engine holds the three mechanisms' state; arrivals must come in time
// order.
type engine struct {
	p                  params
	mig, mps, ts       bool
	offered            []int64
	migBusy, mpsActive []float64 // per tenant: when its queue empties
	tsFree             float64
	tsLast             int
	// Per mode (index in AllModes), per tenant; nil for modes not run.
	hists [3][]*hist
	waits [3][]float64
}

// Indexes in AllModes.
const (
	iMIG = iota
	iMPS
	iTS
)

func newEngine(p params, modes []Mode) *engine {
	e := &engine{p: p, offered: make([]int64, p.n), migBusy: make([]float64, p.n), mpsActive: make([]float64, p.n),
		tsLast: -1}
	for _, m := range modes {
		k := slices.Index(AllModes, m)
		if k < 0 || e.hists[k] != nil {
			continue
		}
		hs := make([]*hist, p.n)
		for i := range hs {
			hs[i] = newHist()
		}
		e.hists[k], e.waits[k] = hs, make([]float64, p.n)
	}
	e.mig, e.mps, e.ts = e.hists[iMIG] != nil, e.hists[iMPS] != nil, e.hists[iTS] != nil
	return e
}

// arrive offers arrivals (time order; who[k] the tenant of at[k]) to
// every mode.
func (e *engine) arrive(at []float64, who []int32) {
	for _, i := range who {
		e.offered[i]++
	}
	if e.mig {
		e.migChunk(at, who)
	}
	if e.mps {
		e.mpsChunk(at, who)
	}
	if e.ts {
		e.tsChunk(at, who)
	}
}

// migChunk: each tenant on its own instance, FIFO, at the instance's
// speed.
func (e *engine) migChunk(at []float64, who []int32) {
	p, busy, hs, waits := &e.p, e.migBusy, e.hists[iMIG], e.waits[iMIG]
	for k, a := range at {
		i := who[k]
		start := max(a, busy[i])
		end := start + p.migSvc[i]
		busy[i] = end
		if end < p.duration {
			hs[i].add(end - a)
			waits[i] += start - a
		}
	}
}

// mpsChunk: soft contention; the seed counts the tenants whose queues
// are busy at the arrival, the arriving tenant's own included.
func (e *engine) mpsChunk(at []float64, who []int32) {
	p, active, hs, waits := &e.p, e.mpsActive, e.hists[iMPS], e.waits[iMPS]
	for k, a := range at {
		i := who[k]
		// Branch-free: whether a queue is busy is a coin toss the CPU
		// cannot predict. The sign bit of a-t is 1 exactly when t > a.
		var n, hostile uint64
		for j, t := range active {
			busy := math.Float64bits(a-t) >> 63
			n += busy
			hostile |= busy & p.hostileBit[j]
		}
		c := p.c
		if hostile != 0 {
			c = p.ch
		}
		start := max(a, active[i])
		end := start + p.svc[i]*(1+c*float64(n))
		active[i] = end
		if end < p.duration {
			hs[i].add(end - a)
			waits[i] += start - a
		}
	}
}

// tsChunk: one queue for the card in arrival order; a change of tenant
// pays the switch.
func (e *engine) tsChunk(at []float64, who []int32) {
	p, hs, waits := &e.p, e.hists[iTS], e.waits[iTS]
	free, last := e.tsFree, e.tsLast
	for k, a := range at {
		i := int(who[k])
		start := max(a, free)
		if last != -1 && last != i {
			start += p.sw
		}
		free, last = start+p.svc[i], i
		if free < p.duration {
			hs[i].add(free - a)
			waits[i] += start - a
		}
	}
	e.tsFree, e.tsLast = free, last
}

func (e *engine) results(tenants []Tenant, leaveOut int) []ModeResult {
	var out []ModeResult
	for k, m := range AllModes {
		hs := e.hists[k]
		if hs == nil {
			continue
		}
		all, good := newHist(), newHist()
		r := ModeResult{Mode: m, Tenants: make([]TenantResult, e.p.n)}
		for i, h := range hs {
			all.merge(h)
			if !tenants[i].Hostile && i != leaveOut {
				good.merge(h)
			}
			t := TenantResult{Name: tenants[i].Name, Hostile: tenants[i].Hostile, Offered: e.offered[i], Served: int64(h.n),
				P50: h.quantile(0.5), P99: h.quantile(0.99), MeanLatency: math.NaN(), MeanWait: math.NaN()}
			if h.n > 0 {
				t.MeanLatency, t.MeanWait = h.sum/float64(h.n), e.waits[k][i]/float64(h.n)
			}
			r.Tenants[i] = t
			r.Offered += t.Offered
		}
		r.Served, r.P50, r.P99, r.MeanLatency = int64(all.n), all.quantile(0.5), all.quantile(0.99), math.NaN()
		r.WellBehavedP50, r.WellBehavedP99 = good.quantile(0.5), good.quantile(0.99)
		if all.n > 0 {
			r.MeanLatency = all.sum / float64(all.n)
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}
