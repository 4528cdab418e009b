package sim

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// minBufferSpan and maxBufferSpan bound how much sample history the
// simulated driver keeps. NVML's real sample buffers are finite; a reader
// whose lastSeen is older than the span gets only the most recent periods,
// never the whole history. The span is twice the poll interval (a collector
// polling every pollInterval never loses a sample, even one cycle late), at
// least minBufferSpan and at most maxBufferSpan (a scenario polling less
// often than every maxBufferSpan/2 loses the older samples, as a real driver
// would).
const (
	minBufferSpan = 10 * time.Second
	maxBufferSpan = 10 * time.Minute
)

// bufferSpanFor is the sample history kept for a collector polling every poll.
func bufferSpanFor(poll time.Duration) time.Duration {
	return min(maxBufferSpan, max(minBufferSpan, 2*poll))
}

// periodRec is one completed driver sample period of one GPU.
type periodRec struct {
	k       int64
	busy    float64 // mean device busy ratio, 0..1
	samples []procSample
}

// procSample is one process's utilisation in a period.
type procSample struct {
	pid  uint32
	util uint32
}

// capPeriodsFor is how many periods fit the driver's sample buffer for a
// collector polling every poll.
func capPeriodsFor(period, poll time.Duration) int64 {
	span := bufferSpanFor(poll)
	return max(1, int64((span+period-1)/period))
}

// computePeriods computes every period completed by t that still fits the
// buffer; older ones are skipped without being integrated.
func (n *Node) computePeriods(t time.Duration) {
	done := int64(t / n.period)
	from := max(n.periodsDone, done-n.capPeriods)
	for k := from; k < done; k++ {
		a := time.Duration(k) * n.period
		b := a + n.period
		for _, g := range n.gpus {
			n.computePeriod(g, k, a, b)
		}
	}
	n.periodsDone = max(n.periodsDone, done)
}

func (n *Node) computePeriod(g *gpu, k int64, a, b time.Duration) {
	rec := &g.ring[k%n.capPeriods]
	rec.k, rec.samples = k, rec.samples[:0]
	p := float64(b - a)
	if g.isMIG() {
		rec.busy = g.migBusy(&n.scratch, slotPeriod, a, b) / p
		return
	}
	rec.busy = clamp01(g.grp.busy(&n.scratch, slotPeriod, a, b, !g.serverView) / p)
	switch {
	case g.serverView:
		if rec.busy > 0 {
			rec.samples = append(rec.samples, procSample{g.server.pid, pct(rec.busy)})
		}
	default:
		// MPS clients' fractions are not clamped per process: each one's
		// sample is its own mean activity.
		for _, pt := range n.scratch.parts {
			rec.samples = append(rec.samples, procSample{pt.p.pid, pct(pt.ns / p)})
		}
		slices.SortFunc(rec.samples, func(x, y procSample) int { return cmp.Compare(x.pid, y.pid) })
	}
}

// migBusy is a MIG GPU's busy time in [a, b): sum over instances of
// w(i) x the instance's own busy time.
func (g *gpu) migBusy(s *scratch, slot int, a, b time.Duration) float64 {
	var sum float64
	for _, m := range g.migs {
		sum += m.weight * m.grp.busy(s, slot, a, b, false)
	}
	return sum
}

// deviceBusy is the GPU's busy time in [a, b), in nanoseconds.
func (g *gpu) deviceBusy(s *scratch, slot int, a, b time.Duration) float64 {
	if g.isMIG() {
		return g.migBusy(s, slot, a, b)
	}
	return g.grp.busy(s, slot, a, b, false)
}

// accumulateEnergy integrates every GPU's busy time up to t.
func (n *Node) accumulateEnergy(t time.Duration) {
	for _, g := range n.gpus {
		if t > g.energyAt {
			g.energyBusy += g.deviceBusy(&n.scratch, slotEnergy, g.energyAt, t)
			g.energyAt = t
		}
	}
}

// energyMilliJ is the GPU's energy since the scenario start at its last
// accumulation: P = idle + (max - idle) x busy, integrated exactly.
func (g *gpu) energyMilliJ() float64 {
	return (g.idleW*float64(g.energyAt) + (g.maxW-g.idleW)*g.energyBusy) / 1e6
}

// power is the draw in watts at a mean busy ratio.
func (g *gpu) power(busy float64) float64 { return g.idleW + (g.maxW-g.idleW)*busy }

// pct is a ratio as a rounded percentage.
func pct(r float64) uint32 { return uint32(math.Round(100 * max(0, r))) }

// lastPeriod is the GPU's most recent completed period, if any.
func (n *Node) lastPeriod(g *gpu) (periodRec, bool) {
	if n.periodsDone == 0 {
		return periodRec{}, false
	}
	return g.ring[(n.periodsDone-1)%n.capPeriods], true
}

// stampMicros is the NVML timestamp (µs since the epoch) of period k's end.
func (n *Node) stampMicros(k int64) uint64 {
	return uint64(n.startMicro + int64((time.Duration(k+1)*n.period)/time.Microsecond))
}

// bufferedPeriods returns the range [from, to) of periods in the buffer.
func (n *Node) bufferedPeriods() (from, to int64) {
	return max(0, n.periodsDone-n.capPeriods), n.periodsDone
}

// roundU64 rounds a non-negative quantity to the nearest integer.
func roundU64(x float64) uint64 { return uint64(math.Round(max(0, x))) }
