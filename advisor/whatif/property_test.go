package whatif

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHistQuantiles: on random samples spanning many decades, the
// histogram's quantiles are within its resolution (2^-8 relative) of the
// exact numpy-style percentile.
func TestHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 1 + rng.IntN(3000)
		xs := make([]float64, n)
		h := newHist()
		for i := range xs {
			xs[i] = math.Exp((rng.Float64()*2 - 1) * math.Log(1e5)) // 10 µs to 1e5 s
			h.add(xs[i])
		}
		for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
			got, want := h.quantile(q), percentile(xs, q)
			if math.Abs(got-want) > want/256 {
				t.Fatalf("trial %d n %d q %v: %v, exact %v", trial, n, q, got, want)
			}
		}
	}
	if !math.IsNaN(newHist().quantile(0.5)) {
		t.Error("empty histogram: want NaN")
	}
}

func randomConfig(rng *rand.Rand) Config {
	n := 1 + rng.IntN(8)
	ts := make([]Tenant, n)
	for i := range ts {
		ts[i] = Tenant{Rate: 0.5 + rng.Float64()*30, Service: time.Duration(100+rng.IntN(40_000)) * time.Microsecond}
		if rng.IntN(5) == 0 {
			ts[i] = Hostile(ts[i])
		}
	}
	return Config{Tenants: ts, Duration: time.Duration(10+rng.IntN(120)) * time.Second, Seed: rng.Uint64(),
		Layout: Layout{MPSContention: rng.Float64() * 0.5, Switch: time.Duration(rng.IntN(2000)) * time.Microsecond}}
}

// TestProperties: on random tenants and layouts, every mode serves at most
// what was offered, the same offered count; p50 <= p99; no request is
// faster than its service time on its share of the card (MIG: S/f; MPS
// and time-slicing: S); and a seed replays.
func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 60 {
		cfg := randomConfig(rng)
		p, err := cfg.params()
		if err != nil {
			t.Fatal(err)
		}
		res, err := Simulate(t.Context(), cfg, trial)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Simulate(t.Context(), cfg, trial)
		if !sameResults(res, again) {
			t.Fatalf("trial %d: same seed, different results", trial)
		}
		for _, m := range res {
			if m.Offered != res[0].Offered || m.Served > m.Offered {
				t.Fatalf("trial %d %s: offered %d (MIG %d) served %d", trial, m.Mode, m.Offered, res[0].Offered, m.Served)
			}
			for i, tr := range m.Tenants {
				if tr.Served == 0 {
					continue
				}
				floor := map[Mode]float64{MIG: p.migSvc[i], MPS: p.svc[i], TimeSlicing: p.svc[i]}[m.Mode]
				if tr.P50 > tr.P99*(1+1e-12) || tr.MeanLatency < floor*(1-1e-9) || tr.P50 < floor*(1-2e-3) {
					t.Fatalf("trial %d %s tenant %d: p50 %v p99 %v mean %v, service floor %v", trial, m.Mode, i, tr.P50, tr.P99, tr.MeanLatency, floor)
				}
			}
		}
	}
}

func sameResults(a, b []ModeResult) bool {
	return slices.EqualFunc(a, b, func(x, y ModeResult) bool {
		return x.Served == y.Served && x.Offered == y.Offered && x.P99 == y.P99 && x.P50 == y.P50
	})
}

// TestMIGIsolationProperty: under MIG a tenant's results depend on its own
// arrivals and slice only; changing every other tenant leaves them as
// they were.
func TestMIGIsolationProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 30 {
		cfg := randomConfig(rng)
		n := len(cfg.Tenants)
		fr := make([]float64, n)
		for i := range fr {
			fr[i] = 1 / float64(n)
		}
		cfg.Layout.MIGFractions = fr
		other := cfg
		other.Tenants = slices.Clone(cfg.Tenants)
		for i := 1; i < n; i++ {
			other.Tenants[i].Rate *= 3
			other.Tenants[i].Hostile = !other.Tenants[i].Hostile
		}
		a, _ := Simulate(t.Context(), cfg, 0, MIG)
		b, _ := Simulate(t.Context(), other, 0, MIG)
		if x, y := a[0].Tenants[0], b[0].Tenants[0]; x != y && !(x.Served == 0 && y.Served == 0) {
			t.Fatalf("trial %d: tenant 0 %+v, with other neighbours %+v", trial, x, y)
		}
	}
}

// TestBadInput: every bad input is a clear error, never a panic or a
// silent result.
func TestBadInput(t *testing.T) {
	ok := Tenant{Rate: 1, Service: time.Millisecond}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Duration: time.Second}, "no tenants"},
		{Config{Tenants: []Tenant{ok}}, "duration"},
		{Config{Tenants: []Tenant{{Rate: 0, Service: time.Millisecond}}, Duration: time.Second}, "arrival rate"},
		{Config{Tenants: []Tenant{{Rate: math.NaN(), Service: time.Millisecond}}, Duration: time.Second}, "arrival rate"},
		{Config{Tenants: []Tenant{{Rate: math.Inf(1), Service: time.Millisecond}}, Duration: time.Second}, "arrival rate"},
		{Config{Tenants: []Tenant{{Rate: 1}}, Duration: time.Second}, "service time"},
		{Config{Tenants: []Tenant{ok}, Duration: time.Second, Layout: Layout{MIGFractions: []float64{0.5, 0.5}}}, "MIG fractions for"},
		{Config{Tenants: []Tenant{ok, ok}, Duration: time.Second, Layout: Layout{MIGFractions: []float64{0.6, 0.6}}}, "more than the card"},
		{Config{Tenants: []Tenant{ok}, Duration: time.Second, Layout: Layout{MIGFractions: []float64{0}}}, "not in (0, 1]"},
		{Config{Tenants: []Tenant{ok}, Duration: time.Second, Layout: Layout{MPSContention: -1}}, "contention"},
		{Config{Tenants: []Tenant{ok}, Duration: time.Second, Layout: Layout{Switch: -2}}, "negative"},
		{Config{Tenants: []Tenant{{Rate: 1e6, Service: time.Millisecond}}, Duration: 24 * time.Hour}, "expected requests"},
	}
	for _, c := range cases {
		_, err := Simulate(t.Context(), c.cfg, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c.cfg, err, c.want)
		}
	}
	if _, err := Compare(t.Context(), Config{Tenants: []Tenant{ok}, Duration: time.Second}, 0); err == nil {
		t.Error("0 runs accepted")
	}
	if _, err := HostileExercise(t.Context(), Config{Tenants: []Tenant{ok}, Duration: time.Second}, 1, 1); err == nil {
		t.Error("hostile tenant out of range accepted")
	}
	if _, err := ParseMode("MIG"); err == nil {
		t.Error("mode MIG (capitals) accepted")
	}
}

// TestPipelineMatchesSequential: the mechanisms on their own goroutines
// give exactly the sequential results, also over many chunks.
func TestPipelineMatchesSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 10 {
		cfg := randomConfig(rng)
		cfg.Duration = time.Duration(200+rng.IntN(2000)) * time.Second
		a, err := simulate(t.Context(), cfg, trial, true)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := simulate(t.Context(), cfg, trial, false)
		for k := range a {
			if a[k].Offered != b[k].Offered || a[k].Served != b[k].Served || a[k].P99 != b[k].P99 || a[k].MeanLatency != b[k].MeanLatency {
				t.Fatalf("trial %d %s: pipelined %+v, sequential %+v", trial, a[k].Mode, a[k], b[k])
			}
		}
	}
}
