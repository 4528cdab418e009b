package whatif

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// maxRuns bounds Compare's repetitions.
const maxRuns = 100_000

// Stat is a mean over runs and the run-to-run standard deviation (the
// sampling error of one run). Runs where the figure is undefined (nothing
// served) are left out and counted in Missing; Mean is NaN when every run
// was.
type Stat struct {
	Mean, SD float64
	Missing  int
}

// Summary is one mode over many runs; latencies in seconds.
type Summary struct {
	Mode Mode
	Runs int
	// Requests is the requests simulated, every run together (the
	// simulation's work).
	Requests                       int64
	ServedFraction                 Stat
	P50, P99, MeanLatency          Stat
	WellBehavedP50, WellBehavedP99 Stat
	Tenants                        []TenantSummary
}

// TenantSummary is one tenant over many runs.
type TenantSummary struct {
	Name                     string
	Hostile                  bool
	ServedFraction, P50, P99 Stat
	MeanLatency, MeanWait    Stat
}

// Compare simulates runs independent runs (run r uses streams r of
// cfg.Seed) of the modes (all three when none is given) and averages
// them. Runs go in parallel; the result does not depend on scheduling.
// The runs together may expect at most MaxRequests requests. When ctx
// ends, every run stops at its next chunk and Compare returns ctx's
// error.
func Compare(ctx context.Context, cfg Config, runs int, modes ...Mode) ([]Summary, error) {
	if runs < 1 || runs > maxRuns {
		return nil, fmt.Errorf("cannot simulate: %d runs, want 1 to %d", runs, maxRuns)
	}
	if _, err := cfg.params(); err != nil {
		return nil, err
	}
	if n := cfg.ExpectedRequests() * float64(runs); n > MaxRequests {
		return nil, fmt.Errorf("cannot simulate: %d runs of %.3g expected requests each, %.3g in all, at most %.0g: fewer runs, a shorter duration or lower rates",
			runs, cfg.ExpectedRequests(), n, MaxRequests)
	}
	results := make([][]ModeResult, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	work := make(chan int)
	// Runs spread over the CPUs; with fewer runs than CPUs (one long run,
	// as a month's whatif is) each run spreads its mechanisms instead.
	cpus := runtime.GOMAXPROCS(0)
	parallelModes := runs < cpus
	for range min(runs, cpus) {
		wg.Go(func() {
			for r := range work {
				results[r], errs[r] = simulate(ctx, cfg, r, parallelModes, modes...)
			}
		})
	}
	for r := range runs {
		if ctx.Err() != nil {
			break
		}
		work <- r
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return summarise(results), nil
}

func summarise(results [][]ModeResult) []Summary {
	runs := len(results)
	out := make([]Summary, len(results[0]))
	for k := range out {
		first := results[0][k]
		s := Summary{Mode: first.Mode, Runs: runs, Tenants: make([]TenantSummary, len(first.Tenants))}
		for r := range results {
			s.Requests += results[r][k].Offered
		}
		pick := func(f func(ModeResult) float64) Stat {
			xs := make([]float64, runs)
			for r := range results {
				xs[r] = f(results[r][k])
			}
			return stat(xs)
		}
		s.ServedFraction = pick(ModeResult.ServedFraction)
		s.P50 = pick(func(m ModeResult) float64 { return m.P50 })
		s.P99 = pick(func(m ModeResult) float64 { return m.P99 })
		s.MeanLatency = pick(func(m ModeResult) float64 { return m.MeanLatency })
		s.WellBehavedP50 = pick(func(m ModeResult) float64 { return m.WellBehavedP50 })
		s.WellBehavedP99 = pick(func(m ModeResult) float64 { return m.WellBehavedP99 })
		for i, t := range first.Tenants {
			tp := func(f func(TenantResult) float64) Stat {
				return pick(func(m ModeResult) float64 { return f(m.Tenants[i]) })
			}
			s.Tenants[i] = TenantSummary{Name: t.Name, Hostile: t.Hostile,
				ServedFraction: tp(func(t TenantResult) float64 {
					if t.Offered == 0 {
						return 1
					}
					return float64(t.Served) / float64(t.Offered)
				}),
				P50:         tp(func(t TenantResult) float64 { return t.P50 }),
				P99:         tp(func(t TenantResult) float64 { return t.P99 }),
				MeanLatency: tp(func(t TenantResult) float64 { return t.MeanLatency }),
				MeanWait:    tp(func(t TenantResult) float64 { return t.MeanWait }),
			}
		}
		out[k] = s
	}
	return out
}

// stat is the mean and sample standard deviation of the defined xs.
func stat(xs []float64) Stat {
	var s Stat
	var n int
	var sum float64
	for _, x := range xs {
		if math.IsNaN(x) {
			s.Missing++
			continue
		}
		n++
		sum += x
	}
	if n == 0 {
		return Stat{Mean: math.NaN(), SD: math.NaN(), Missing: s.Missing}
	}
	s.Mean = sum / float64(n)
	if n > 1 {
		var ss float64
		for _, x := range xs {
			if !math.IsNaN(x) {
				ss += (x - s.Mean) * (x - s.Mean)
			}
		}
		s.SD = math.Sqrt(ss / float64(n-1))
	}
	return s
}

// HostileMode is one mode in the hostile-tenant exercise: the pooled p99
// of the well-behaved tenants without and with the hostile tenant
// (seconds, means over runs).
type HostileMode struct {
	Mode                  Mode
	BenignP99, HostileP99 Stat
	// Change is HostileP99 - BenignP99.
	Change float64
}

// HostileReport is the reference model's exercise: tenant Index turned hostile
// (HostileServiceFactor x its service, HostileRateFactor x its rate), the
// others unchanged (same arrivals).
type HostileReport struct {
	Index int
	Modes []HostileMode
	// Gap is the well-behaved tenants' p99 under MPS minus under MIG, both
	// with the hostile tenant, in seconds: what MPS's missing wall costs
	// them relative to MIG's guarantee (negative while MPS is still the
	// faster of the two).
	Gap float64
	// MIGUnchanged is true when every run's MIG figures for the
	// well-behaved tenants were identical with and without the hostile
	// tenant.
	MIGUnchanged bool
}

// HostileExercise runs cfg as given and with tenant index made hostile,
// runs times each, under MIG and MPS (and time-slicing, for the table).
func HostileExercise(ctx context.Context, cfg Config, index, runs int) (HostileReport, error) {
	if index < 0 || index >= len(cfg.Tenants) {
		return HostileReport{}, fmt.Errorf("cannot run the hostile exercise: tenant %d of %d", index, len(cfg.Tenants))
	}
	cfg.leaveOut = index + 1
	hcfg := cfg
	hcfg.leaveOut = 0
	hcfg.Tenants = append([]Tenant(nil), cfg.Tenants...)
	hcfg.Tenants[index] = Hostile(hcfg.Tenants[index])
	benign, err := Compare(ctx, cfg, runs)
	if err != nil {
		return HostileReport{}, err
	}
	hostile, err := Compare(ctx, hcfg, runs)
	if err != nil {
		return HostileReport{}, err
	}
	rep := HostileReport{Index: index, MIGUnchanged: true}
	byMode := map[Mode]HostileMode{}
	for k := range benign {
		b, h := benign[k], hostile[k]
		hm := HostileMode{Mode: b.Mode, BenignP99: b.WellBehavedP99, HostileP99: h.WellBehavedP99,
			Change: h.WellBehavedP99.Mean - b.WellBehavedP99.Mean}
		rep.Modes = append(rep.Modes, hm)
		byMode[b.Mode] = hm
	}
	rep.Gap = byMode[MPS].HostileP99.Mean - byMode[MIG].HostileP99.Mean
	// MIG isolation, checked run by run rather than on means (ten runs
	// are evidence enough; the means above cover the rest).
	for r := range min(runs, 10) {
		b, err := Simulate(ctx, cfg, r, MIG)
		if err != nil {
			return HostileReport{}, err
		}
		h, err := Simulate(ctx, hcfg, r, MIG)
		if err != nil {
			return HostileReport{}, err
		}
		if b[0].WellBehavedP99 != h[0].WellBehavedP99 && !(math.IsNaN(b[0].WellBehavedP99) && math.IsNaN(h[0].WellBehavedP99)) {
			rep.MIGUnchanged = false
		}
	}
	return rep, nil
}
