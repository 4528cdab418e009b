package attribution

import "slices"

// memTrend is the verdict on one lower envelope.
type memTrend struct {
	growing bool
	// slope is the fitted rise in MiB per second; growth the envelope's
	// rise from its first bucket to its last, in MiB; r2 the fit's
	// coefficient of determination; swing the median spread of the
	// samples within a bucket.
	slope, growth, r2, swing float64
}

// judgeTrend decides whether a lower envelope (each bucket's lowest
// memory, oldest first, buckets bucketSec apart; spread each bucket's
// highest minus lowest sample) keeps growing. All must hold:
//
//   - it rose by at least MinGrowthMiB, and by at least
//     MinGrowthOverSwing of the median spread, from the first bucket to
//     the last;
//   - at least MinRising of its steps rise;
//   - its falls add up to at most MaxGiveBack of that growth;
//   - a least-squares line through it has a positive slope and an R² of
//     at least MinR2.
//
// A flat allocation never rises; a sawtooth shorter than a bucket has a
// flat envelope (up to the sampling drift the swing rule absorbs); a
// longer one gives back what it takes; a single late allocation rises in
// one step, loading in stages in a few.
func judgeTrend(env, spread []float64, bucketSec float64, cfg MemoryGrowthConfig, scratch []float64) memTrend {
	n := len(env)
	if n < 3 || len(spread) != n || !(bucketSec > 0) {
		return memTrend{}
	}
	t := memTrend{growth: env[n-1] - env[0], swing: median(spread, scratch)}
	var rising int
	var fell float64
	for i := 1; i < n; i++ {
		switch d := env[i] - env[i-1]; {
		case d > 0:
			rising++
		case d < 0:
			fell -= d
		}
	}
	t.slope, t.r2 = fitLine(env, bucketSec)
	t.growing = t.growth >= cfg.MinGrowthMiB && t.growth >= cfg.MinGrowthOverSwing*t.swing &&
		float64(rising) >= cfg.MinRising*float64(n-1) &&
		fell <= cfg.MaxGiveBack*t.growth &&
		t.slope > 0 && t.r2 >= cfg.MinR2
	return t
}

// median of xs, sorting a copy in scratch.
func median(xs, scratch []float64) float64 {
	s := append(scratch[:0], xs...)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// fitLine fits y = a + b x by least squares with x_i = i * dx and returns
// b and R². A flat series has no variance to explain: R² 0.
func fitLine(y []float64, dx float64) (slope, r2 float64) {
	n := float64(len(y))
	var sx, sy float64
	for i, v := range y {
		sx += float64(i) * dx
		sy += v
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for i, v := range y {
		dxi, dyi := float64(i)*dx-mx, v-my
		sxx += dxi * dxi
		sxy += dxi * dyi
		syy += dyi * dyi
	}
	if sxx == 0 || syy == 0 {
		return 0, 0
	}
	slope = sxy / sxx
	return slope, sxy * sxy / (sxx * syy)
}
