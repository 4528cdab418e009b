package attribution

import (
	"math"
	"math/rand/v2"
	"testing"
)

// envelopeOf samples mem once a second over (0, buckets x bucketSec] and
// keeps each bucket's lowest sample and its spread (highest minus lowest),
// the way the detector sees them but written out plainly.
func envelopeOf(mem func(t float64) float64, buckets int, bucketSec float64) (env, spread []float64) {
	env, spread = make([]float64, buckets), make([]float64, buckets)
	for i := range env {
		lo, hi := math.Inf(1), math.Inf(-1)
		for s := 1.0; s <= bucketSec; s++ {
			v := mem(float64(i)*bucketSec + s)
			lo, hi = min(lo, v), max(hi, v)
		}
		env[i], spread[i] = lo, hi-lo
	}
	return env, spread
}

// TestTrendNeverFlagsFlatStepsOrSawtooth draws many memory shapes that are
// not leaks, with the default thresholds and window (ten 3-minute buckets).
func TestTrendNeverFlagsFlatStepsOrSawtooth(t *testing.T) {
	cfg := MemoryGrowthConfig{}.withDefaults()
	const buckets, bucketSec = 10, 180.0
	window := buckets * bucketSec
	r := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func() func(float64) float64{
		"flat": func() func(float64) float64 {
			c := float64(r.IntN(80000))
			return func(float64) float64 { return c }
		},
		"one allocation": func() func(float64) float64 {
			c, d, at := float64(r.IntN(10000)), float64(256+r.IntN(60000)), r.Float64()*window
			return func(t float64) float64 {
				if t < at {
					return c
				}
				return c + d
			}
		},
		"loading in up to three stages": func() func(float64) float64 {
			stages := 1 + r.IntN(3)
			c, step, every := float64(r.IntN(1000)), float64(256+r.IntN(20000)), 30+r.Float64()*2*bucketSec
			return func(t float64) float64 { return c + step*min(float64(stages), math.Floor(t/every)) }
		},
		"sawtooth freeing what it takes": func() func(float64) float64 {
			c, amp, period := float64(r.IntN(40000)), float64(256+r.IntN(30000)), 5+r.Float64()*window/2
			return func(t float64) float64 { return c + amp*math.Mod(t, period)/period }
		},
		"square wave": func() func(float64) float64 {
			c, amp, period := float64(r.IntN(40000)), float64(256+r.IntN(30000)), 5+r.Float64()*window/2
			return func(t float64) float64 {
				if math.Mod(t, period) < period/2 {
					return c
				}
				return c + amp
			}
		},
	}
	for name, shape := range shapes {
		for i := range 2000 {
			mem := shape()
			env, spread := envelopeOf(mem, buckets, bucketSec)
			if tr := judgeTrend(env, spread, bucketSec, cfg, nil); tr.growing {
				t.Fatalf("%s #%d flagged: envelope %v, %+v", name, i, env, tr)
			}
		}
	}
}

// TestTrendFlagsLeaksWithTheirRate: a leak of at least twice the least
// growth per window, under a sawtooth that frees what it takes (period up
// to a bucket, swing up to a quarter of the leak's growth over the window:
// a leak much smaller than its own swing is not told apart from sampling
// drift, see MinGrowthOverSwing), is flagged, and the rate is the leak's
// within the sawtooth's reach.
func TestTrendFlagsLeaksWithTheirRate(t *testing.T) {
	cfg := MemoryGrowthConfig{}.withDefaults()
	const buckets, bucketSec = 10, 180.0
	window := buckets * bucketSec
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		perSec := (2 + 20*r.Float64()) * cfg.MinGrowthMiB / window
		c, amp, period := float64(r.IntN(40000)), r.Float64()*perSec*window/4, 5+r.Float64()*(bucketSec-5)
		stepEvery := 1 + float64(r.IntN(60)) // a leak seen in steps, as allocators grow
		mem := func(t float64) float64 {
			return c + perSec*stepEvery*math.Floor(t/stepEvery) + amp*math.Mod(t, period)/period
		}
		env, spread := envelopeOf(mem, buckets, bucketSec)
		tr := judgeTrend(env, spread, bucketSec, cfg, nil)
		if !tr.growing {
			t.Fatalf("leak #%d of %.3f MiB/s not flagged: envelope %v, %+v", i, perSec, env, tr)
		}
		// Each envelope point may be off by one leak step, by the leak
		// over the stretch of the bucket where the tooth's floor falls,
		// and by one second of the tooth's rise; a least-squares slope
		// moves by at most that times sum|x-mean| / sum (x-mean)^2.
		e := perSec*(stepEvery+min(period, bucketSec)) + amp/period
		var sa, s2 float64
		for k := range buckets {
			x := (float64(k) - float64(buckets-1)/2) * bucketSec
			sa, s2 = sa+math.Abs(x), s2+x*x
		}
		if slack := e * sa / s2; math.Abs(tr.slope-perSec) > slack+1e-9 {
			t.Fatalf("leak #%d: rate %.4f MiB/s, want %.4f within %.4f", i, tr.slope, perSec, slack)
		}
	}
}

func TestFitLineByHand(t *testing.T) {
	// y = 1 + 2x at x = 0, 10, 20: slope 0.2 per x unit... with dx 10:
	// points (0,1), (10,3), (20,5): slope 0.2, a perfect fit.
	if s, r2 := fitLine([]float64{1, 3, 5}, 10); math.Abs(s-0.2) > 1e-12 || math.Abs(r2-1) > 1e-12 {
		t.Errorf("fitLine = %v, %v; want 0.2, 1", s, r2)
	}
	// (0,0), (1,1), (2,0): slope 0, R² 0.
	if s, r2 := fitLine([]float64{0, 1, 0}, 1); s != 0 || r2 != 0 {
		t.Errorf("fitLine tent = %v, %v; want 0, 0", s, r2)
	}
	// (0,0), (1,0), (2,3): slope 1.5, mean 1, residuals of the fit
	// y = -0.5 + 1.5x: 0.5, -1, 0.5, SSres 1.5 of SStot 6: R² 0.75.
	if s, r2 := fitLine([]float64{0, 0, 3}, 1); math.Abs(s-1.5) > 1e-12 || math.Abs(r2-0.75) > 1e-12 {
		t.Errorf("fitLine step = %v, %v; want 1.5, 0.75", s, r2)
	}
}
