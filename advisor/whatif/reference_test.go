package whatif

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

// The reference below is a line-by-line port of the reference model's
// code (lists, a sort of all arrivals, a scan of every tenant's
// deadline), kept apart from the engine so a slip in either shows.

type refResult struct {
	lat     []float64 // seconds, served requests
	offered int
}

func refMIG(streams [][]float64, svc, dur float64) refResult {
	var r refResult
	n := float64(len(streams))
	for _, s := range streams {
		r.offered += len(s)
		busy := 0.0
		for _, a := range s {
			start := math.Max(a, busy)
			busy = start + svc*n
			if busy < dur {
				r.lat = append(r.lat, (start-a)+svc*n)
			}
		}
	}
	return r
}

type ev struct {
	a float64
	i int
}

func events(streams [][]float64) []ev {
	var es []ev
	for i, s := range streams {
		for _, a := range s {
			es = append(es, ev{a, i})
		}
	}
	sort.Slice(es, func(x, y int) bool { return es[x].a < es[y].a || (es[x].a == es[y].a && es[x].i < es[y].i) })
	return es
}

func refMPS(streams [][]float64, svc, dur, c float64) refResult {
	var r refResult
	active := map[int]float64{}
	for _, e := range events(streams) {
		r.offered++
		concurrent := 0
		for _, t := range active {
			if t > e.a {
				concurrent++
			}
		}
		s := svc * (1 + c*float64(concurrent))
		start := math.Max(e.a, active[e.i])
		active[e.i] = start + s
		if active[e.i] < dur {
			r.lat = append(r.lat, (start-e.a)+s)
		}
	}
	return r
}

func refTS(streams [][]float64, svc, dur, sw float64) refResult {
	var r refResult
	free, last := 0.0, -1
	for _, e := range events(streams) {
		r.offered++
		start := math.Max(e.a, free)
		if e.i != last && last != -1 {
			start += sw
		}
		free, last = start+svc, e.i
		if free < dur {
			r.lat = append(r.lat, (start-e.a)+svc)
		}
	}
	return r
}

// percentile is numpy's default: linear between closest ranks.
func percentile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// feed runs the engine on given streams (merged in time order).
func feed(t *testing.T, cfg Config, streams [][]float64) []ModeResult {
	t.Helper()
	p, err := cfg.params()
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(p, AllModes)
	var at []float64
	var who []int32
	for _, x := range events(streams) {
		at, who = append(at, x.a), append(who, int32(x.i))
	}
	e.count(who)
	for _, m := range e.modes() {
		e.run(m, at, who)
	}
	return e.results(cfg.Tenants, -1)
}

func poisson(rng *rand.Rand, rate, dur float64) []float64 {
	var out []float64
	for t := rng.ExpFloat64() / rate; t < dur; t += rng.ExpFloat64() / rate {
		out = append(out, t)
	}
	return out
}

// TestEngineMatchesReferenceCode: on the same arrivals, the engine serves the
// same requests as the reference model's code and its percentiles agree within the
// histogram's resolution (half a bucket, 2^-9 relative: 0.2% is the band).
func TestEngineMatchesReferenceCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		n := 1 + rng.IntN(9)
		rate := 1 + rng.Float64()*20
		svc := time.Duration(1+rng.IntN(30)) * time.Millisecond
		dur := 30 + rng.Float64()*90
		streams := make([][]float64, n)
		tenants := make([]Tenant, n)
		for i := range streams {
			streams[i] = poisson(rng, rate, dur)
			tenants[i] = Tenant{Rate: rate, Service: svc}
		}
		cfg := Config{Tenants: tenants, Duration: time.Duration(dur * float64(time.Second))}
		dur = cfg.Duration.Seconds()
		got := feed(t, cfg, streams)
		refs := map[Mode]refResult{
			MIG:         refMIG(streams, svc.Seconds(), dur),
			MPS:         refMPS(streams, svc.Seconds(), dur, DefaultMPSContention),
			TimeSlicing: refTS(streams, svc.Seconds(), dur, DefaultSwitch.Seconds()),
		}
		for _, m := range got {
			ref := refs[m.Mode]
			if m.Offered != int64(ref.offered) || m.Served != int64(len(ref.lat)) {
				t.Fatalf("trial %d %s: offered/served %d/%d, reference code %d/%d", trial, m.Mode, m.Offered, m.Served, ref.offered, len(ref.lat))
			}
			if len(ref.lat) == 0 {
				continue
			}
			var sum float64
			for _, x := range ref.lat {
				sum += x
			}
			for _, c := range []struct {
				name      string
				got, want float64
				tol       float64
			}{
				{"p50", m.P50, percentile(ref.lat, 0.5), 2e-3},
				{"p99", m.P99, percentile(ref.lat, 0.99), 2e-3},
				{"mean", m.MeanLatency, sum / float64(len(ref.lat)), 1e-9},
			} {
				if math.Abs(c.got-c.want) > c.tol*c.want {
					t.Errorf("trial %d (%d tenants, %.1f rps, %s) %s %s = %.6f, reference code %.6f", trial, n, rate, svc, m.Mode, c.name, c.got, c.want)
				}
			}
		}
	}
}
