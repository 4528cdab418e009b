package whatif

import "math"

// The latency histogram is log-linear: one row per binary exponent, each
// row cut into 2^subBits equal buckets by the top bits of the mantissa.
// A bucket's width is at most 2^-subBits of its lower edge, so a quantile
// read from it is within 0.2% of the sample (the bucket midpoint is
// returned). The resolution is a trade with speed: the buckets a run
// touches must stay in cache for a month to simulate in seconds. Latencies from 2^minExp to 2^maxExp seconds (1 µs to 194
// days) fit; anything outside is clamped into the end rows and counted.
const (
	subBits = 8
	subN    = 1 << subBits
	minExp  = -20
	maxExp  = 24
	nBucket = (maxExp - minExp) * subN
)

// hist counts latencies in seconds.
type hist struct {
	counts  []uint32 // a run has at most maxRequests < 2^32 requests
	n       uint64
	sum     float64 // of the latencies, exactly as simulated
	clamped uint64
}

func newHist() *hist { return &hist{counts: make([]uint32, nBucket)} }

// add records a latency x > 0 seconds. A positive float's bits shifted
// right by 52-subBits are its biased exponent and top mantissa bits, so
// the bucket is one shift and one subtraction; anything out of range
// (too small, too large, not positive) takes the rare clamping path.
func (h *hist) add(x float64) {
	h.n++
	h.sum += x
	i := int(math.Float64bits(x)>>(52-subBits)) - (1023+minExp)<<subBits
	if uint(i) >= nBucket {
		i = h.clamp(x)
	}
	h.counts[i]++
}

// clamp is the bucket of a latency outside the histogram's range.
func (h *hist) clamp(x float64) int {
	h.clamped++
	if x > 1 {
		return nBucket - 1
	}
	return 0
}

// merge adds o's counts to h.
func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.clamped += o.clamped
}

// value is the midpoint of bucket i.
func bucketValue(i int) float64 {
	e := i/subN + minExp
	m := i % subN
	return math.Ldexp(1+(float64(m)+0.5)/subN, e)
}

// quantile is the q-quantile (0 <= q <= 1) with numpy's default (linear)
// interpolation between the order statistics at ranks floor and ceil of
// q(n-1), each read as its bucket's midpoint. NaN when empty.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	pos := q * float64(h.n-1)
	lo := uint64(math.Floor(pos))
	hi := min(lo+1, h.n-1)
	vlo, vhi := h.rank(lo), h.rank(hi)
	return vlo + (vhi-vlo)*(pos-float64(lo))
}

// rank is the value of the order statistic of rank r (0-based).
func (h *hist) rank(r uint64) float64 {
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen > r {
			return bucketValue(i)
		}
	}
	return bucketValue(nBucket - 1)
}
