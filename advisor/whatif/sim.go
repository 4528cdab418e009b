package whatif

import (
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
	next := make([]float64, p.n)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(cfg.Seed, uint64(run)<<20|uint64(i)))
		next[i] = rngs[i].ExpFloat64() / p.rate[i]
	}
	for {
		// The tenants are few: a scan beats a heap.
		i, a := -1, p.duration
		for j, t := range next {
			if t < a {
				i, a = j, t
			}
		}
		if i < 0 {
			break
		}
		e.arrive(i, a)
		next[i] = a + rngs[i].ExpFloat64()/p.rate[i]
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
	hists              map[Mode][]*hist
	waits              map[Mode][]float64
}

func newEngine(p params, modes []Mode) *engine {
	e := &engine{p: p, offered: make([]int64, p.n), migBusy: make([]float64, p.n), mpsActive: make([]float64, p.n),
		tsLast: -1, hists: map[Mode][]*hist{}, waits: map[Mode][]float64{}}
	for _, m := range modes {
		switch m {
		case MIG:
			e.mig = true
		case MPS:
			e.mps = true
		case TimeSlicing:
			e.ts = true
		default:
			continue
		}
		hs := make([]*hist, p.n)
		for i := range hs {
			hs[i] = newHist()
		}
		e.hists[m], e.waits[m] = hs, make([]float64, p.n)
	}
	return e
}

// arrive offers tenant i's request arriving at a to every mode.
func (e *engine) arrive(i int, a float64) {
	p := &e.p
	e.offered[i]++
	if e.mig {
		// Its own instance, FIFO, at the instance's speed.
		start := max(a, e.migBusy[i])
		e.migBusy[i] = start + p.migSvc[i]
		e.record(MIG, i, a, start, e.migBusy[i])
	}
	if e.mps {
		// Soft contention: the seed counts the tenants whose queues are
		// busy at the arrival, this one included.
		k, hostile := 0, false
		for j, t := range e.mpsActive {
			if t > a {
				k++
				hostile = hostile || p.hostile[j]
			}
		}
		c := p.c
		if hostile {
			c = p.ch
		}
		svc := p.svc[i] * (1 + c*float64(k))
		start := max(a, e.mpsActive[i])
		e.mpsActive[i] = start + svc
		e.record(MPS, i, a, start, e.mpsActive[i])
	}
	if e.ts {
		// One queue for the card in arrival order; a change of tenant pays
		// the switch.
		start := max(a, e.tsFree)
		if e.tsLast != -1 && e.tsLast != i {
			start += p.sw
		}
		e.tsFree, e.tsLast = start+p.svc[i], i
		e.record(TimeSlicing, i, a, start, e.tsFree)
	}
}

func (e *engine) record(m Mode, i int, a, start, end float64) {
	if end < e.p.duration {
		e.hists[m][i].add(end - a)
		e.waits[m][i] += start - a
	}
}

func (e *engine) results(tenants []Tenant, leaveOut int) []ModeResult {
	var out []ModeResult
	for _, m := range AllModes {
		hs, ok := e.hists[m]
		if !ok {
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
				t.MeanLatency, t.MeanWait = h.sum/float64(h.n), e.waits[m][i]/float64(h.n)
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
