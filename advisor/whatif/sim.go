package whatif

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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
// (s, r<<20 | i). With several modes and several CPUs the mechanisms run
// on their own goroutines over the shared arrivals (results do not
// depend on it). It stops with ctx's error when ctx ends: the context is
// checked between chunks of arrivals, a few milliseconds of work apart.
func Simulate(ctx context.Context, cfg Config, run int, modes ...Mode) ([]ModeResult, error) {
	return simulate(ctx, cfg, run, runtime.GOMAXPROCS(0) > 1, modes...)
}

func simulate(ctx context.Context, cfg Config, run int, parallel bool, modes ...Mode) ([]ModeResult, error) {
	p, err := cfg.params()
	if err != nil {
		return nil, err
	}
	if len(modes) == 0 {
		modes = AllModes
	}
	e := newEngine(p, modes)
	g := newArrivals(p, cfg.Seed, run)
	if n := len(e.modes()); parallel && n > 1 {
		err = e.pipeline(ctx, g, cfg.onChunk)
	} else {
		at, who := make([]float64, 0, chunk), make([]int32, 0, chunk)
		for {
			if err = ctx.Err(); err != nil {
				break
			}
			at, who = g.fill(at[:0], who[:0])
			if len(at) == 0 {
				break
			}
			e.count(who)
			for _, m := range e.modes() {
				e.run(m, at, who)
			}
			if cfg.onChunk != nil {
				cfg.onChunk()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return e.results(cfg.Tenants, cfg.leaveOut-1), nil
}

// chunk is how many merged arrivals each mechanism takes at a time.
const chunk = 1 << 13

// arrivals merges the tenants' Poisson streams in time order.
type arrivals struct {
	p    *params
	rngs []*rand.Rand
	mean []float64
	// next holds each tenant's next arrival as the bits of its float64:
	// arrival times are positive, and positive floats order as their bits
	// do, so the earliest is an integer argmin. (It measured a few
	// percent cheaper than keeping the tenants sorted and putting each new
	// arrival back by a scan; a tournament tree and an arithmetic,
	// branch-free argmin measured the same as this loop.)
	next []int64
	// ahead holds each tenant's following arrivals, drawn a block at a
	// time: the draws (the PCG step and the ziggurat) then run in a tight
	// loop of their own instead of on the merge's critical path, where
	// each argmin waited for the previous draw. A tenant still consumes
	// its own stream in order, so the arrivals are the same numbers.
	ahead [][]float64
	pos   []int
}

// aheadBlock is how many arrivals a tenant draws at a time.
const aheadBlock = 256

func newArrivals(p params, seed uint64, run int) *arrivals {
	g := &arrivals{p: &p, rngs: make([]*rand.Rand, p.n), next: make([]int64, p.n), mean: make([]float64, p.n),
		ahead: make([][]float64, p.n), pos: make([]int, p.n)}
	for i := range g.rngs {
		g.rngs[i] = rand.New(rand.NewPCG(seed, uint64(run)<<20|uint64(i)))
		g.mean[i] = 1 / p.rate[i]
		first := g.rngs[i].ExpFloat64() * g.mean[i]
		g.next[i] = int64(math.Float64bits(first))
		g.ahead[i] = make([]float64, aheadBlock)
		g.draw(i, first)
	}
	return g
}

// draw fills tenant i's block with the arrivals after last.
func (g *arrivals) draw(i int, last float64) {
	r, mean, buf := g.rngs[i], g.mean[i], g.ahead[i]
	for k := range buf {
		last += r.ExpFloat64() * mean
		buf[k] = last
	}
	g.pos[i] = 0
}

// fill appends up to chunk arrivals within the duration; none at the
// end. Ties (never seen with continuous draws) go to the lower tenant.
func (g *arrivals) fill(at []float64, who []int32) ([]float64, []int32) {
	next, end := g.next, g.p.duration
	for len(at) < chunk {
		i, b := 0, next[0]
		for j := 1; j < len(next); j++ {
			if v := next[j]; v < b {
				i, b = j, v
			}
		}
		a := math.Float64frombits(uint64(b))
		if !(a < end) {
			break
		}
		at, who = append(at, a), append(who, int32(i))
		if g.pos[i] == aheadBlock {
			g.draw(i, a)
		}
		next[i] = int64(math.Float64bits(g.ahead[i][g.pos[i]]))
		g.pos[i]++
	}
	return at, who
}

// pipeline merges arrivals on this goroutine while each mechanism runs on
// its own over the same chunks, depth chunks in flight. Mechanisms share
// no state, so nothing but the chunks needs ordering. When ctx ends it
// stops merging, lets the chunks in flight drain and returns ctx's error.
func (e *engine) pipeline(ctx context.Context, g *arrivals, onChunk func()) error {
	const depth = 4
	type buf struct {
		at   []float64
		who  []int32
		left atomic.Int32
	}
	bufs := make([]buf, depth)
	free := make(chan int, depth)
	for i := range bufs {
		bufs[i].at, bufs[i].who = make([]float64, 0, chunk), make([]int32, 0, chunk)
		free <- i
	}
	modes := e.modes()
	chans := make([]chan int, len(modes))
	var wg sync.WaitGroup
	for k, m := range modes {
		ch := make(chan int, depth)
		chans[k] = ch
		wg.Go(func() {
			for slot := range ch {
				b := &bufs[slot]
				e.run(m, b.at, b.who)
				if b.left.Add(-1) == 0 {
					free <- slot
				}
			}
		})
	}
	var err error
	for {
		if err = ctx.Err(); err != nil {
			break
		}
		slot := <-free
		b := &bufs[slot]
		b.at, b.who = g.fill(b.at[:0], b.who[:0])
		if len(b.at) == 0 {
			break
		}
		e.count(b.who)
		b.left.Store(int32(len(modes)))
		for _, ch := range chans {
			ch <- slot
		}
		if onChunk != nil {
			onChunk()
		}
	}
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	return err
}

// engine holds the three mechanisms' state; arrivals must come in time
// order.
type engine struct {
	p       params
	offered []int64
	migBusy []float64 // per tenant: when its queue empties
	// mpsActive is when each MPS queue empties, as float64 bits (times
	// are non-negative, so the bits order as the times and "busy" is an
	// integer subtraction's sign). mpsSvc[h][i*(n+1)+k] is tenant i's
	// service time with k busy queues, under the normal (h = 0) or the
	// hostile (h = 1) coefficient, computed once: the arrival loop is a
	// chain through the queues' end times, and a table load is shorter
	// than a conversion, a multiply and an add.
	mpsActive []int64
	mpsSvc    [2][]float64
	tsFree    float64
	tsLast    int
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
	e := &engine{p: p, offered: make([]int64, p.n), migBusy: make([]float64, p.n), mpsActive: make([]int64, p.n),
		tsLast: -1}
	for h, c := range []float64{p.c, p.ch} {
		t := make([]float64, p.n*(p.n+1))
		for i := range p.n {
			for k := 0; k <= p.n; k++ {
				t[i*(p.n+1)+k] = p.svc[i] * (1 + c*float64(k))
			}
		}
		e.mpsSvc[h] = t
	}
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
	return e
}

// count adds a chunk's arrivals to the offered counts.
func (e *engine) count(who []int32) {
	for _, i := range who {
		e.offered[i]++
	}
}

// modes lists the mechanisms this engine runs, as indexes in AllModes.
func (e *engine) modes() []int {
	var out []int
	for k := range AllModes {
		if e.hists[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// run offers a chunk of arrivals (time order; who[k] the tenant of
// at[k]) to mechanism m.
func (e *engine) run(m int, at []float64, who []int32) {
	switch m {
	case iMIG:
		e.migChunk(at, who)
	case iMPS:
		e.mpsChunk(at, who)
	case iTS:
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

// mpsChunk: soft contention; the reference model counts the tenants whose queues
// are busy at the arrival, the arriving tenant's own included.
func (e *engine) mpsChunk(at []float64, who []int32) {
	p, active, hs, waits := &e.p, e.mpsActive, e.hists[iMPS], e.waits[iMPS]
	stride := p.n + 1
	for k, a := range at {
		i := int(who[k])
		ab := int64(math.Float64bits(a))
		// Branch-free: whether a queue is busy is a coin toss the CPU
		// cannot predict. The sign of ab-t is negative exactly when the
		// queue empties after a.
		var n, hostile uint64
		if p.anyHost {
			for j, t := range active {
				busy := uint64(ab-t) >> 63
				n += busy
				hostile |= busy & p.hostileBit[j]
			}
		} else {
			for _, t := range active {
				n += uint64(ab-t) >> 63
			}
		}
		start := math.Float64frombits(uint64(max(ab, active[i])))
		end := start + e.mpsSvc[hostile&1][i*stride+int(n)]
		active[i] = int64(math.Float64bits(end))
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
