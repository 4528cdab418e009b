package whatif

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// heavyConfig is close to MaxRequests in one run: 7 tenants at 100,000
// rps for 700 s, 490 million requests, about 60,000 chunks.
func heavyConfig() Config {
	ts := make([]Tenant, 7)
	for i := range ts {
		ts[i] = Tenant{Rate: 1e5, Service: time.Microsecond}
	}
	return Config{Tenants: ts, Duration: 700 * time.Second, Seed: 3}
}

// TestCancelStopsSimulate: a run cancelled after its third chunk returns
// the context's error after at most the chunks already in flight, on the
// sequential path and on the pipelined one, instead of the ~60,000 chunks
// of the whole run.
func TestCancelStopsSimulate(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		cfg := heavyConfig()
		var chunks atomic.Int64
		cfg.onChunk = func() {
			if chunks.Add(1) == 3 {
				cancel()
			}
		}
		res, err := simulate(ctx, cfg, 0, parallel)
		cancel()
		if !errors.Is(err, context.Canceled) || res != nil {
			t.Errorf("parallel %v: result %v, error %v; want context.Canceled", parallel, res != nil, err)
		}
		// The chunk that cancelled is the last one merged.
		if n := chunks.Load(); n != 3 {
			t.Errorf("parallel %v: %d chunks simulated after cancelling at the third, want 3", parallel, n)
		}
	}
}

// TestCancelStopsCompare: Compare's runs all stop, and the call returns
// the context's error, when the context ends during the first chunks.
func TestCancelStopsCompare(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := heavyConfig()
	cfg.Duration = 70 * time.Second // 49 million a run, 10 runs
	var chunks atomic.Int64
	cfg.onChunk = func() {
		if chunks.Add(1) == 5 {
			cancel()
		}
	}
	sums, err := Compare(ctx, cfg, 10, MPS)
	if !errors.Is(err, context.Canceled) || sums != nil {
		t.Fatalf("summaries %v, error %v; want context.Canceled", sums != nil, err)
	}
	// Every run that had started finishes at most the chunk it was on.
	if n, whole := chunks.Load(), int64(cfg.ExpectedRequests()*10/chunk); n > 5+int64(maxRunsInFlight()) || n >= whole {
		t.Errorf("%d chunks simulated after cancelling at the fifth (the whole work is %d)", n, whole)
	}
	// A context already done simulates nothing.
	chunks.Store(0)
	if _, err := HostileExercise(ctx, cfg, 0, 2); !errors.Is(err, context.Canceled) || chunks.Load() != 0 {
		t.Errorf("done context: error %v after %d chunks, want context.Canceled after none", err, chunks.Load())
	}
}

// maxRunsInFlight is how many runs Compare has going at once.
func maxRunsInFlight() int { return runtime.GOMAXPROCS(0) }

// TestCompareBoundsTheWork: runs times the requests of a run may not
// exceed MaxRequests, and the error says what to lower.
func TestCompareBoundsTheWork(t *testing.T) {
	cfg := heavyConfig()
	cfg.Duration = 100 * time.Second // 70 million a run: 8 runs are too many
	var chunks atomic.Int64
	cfg.onChunk = func() { chunks.Add(1) }
	_, err := Compare(t.Context(), cfg, 8, MIG)
	if err == nil || !strings.Contains(err.Error(), "8 runs") || !strings.Contains(err.Error(), "at most 5e+08") || chunks.Load() != 0 {
		t.Errorf("8 runs of 70 million requests: error %v after %d chunks, want a refusal naming the runs and the bound", err, chunks.Load())
	}
}

// TestCappedKeepsTheQueue: a one-microsecond M/D/1 queue at utilisation
// 0.5 offered for ten minutes (300 million requests) is capped to 200,000
// requests a run; the rate and service time stay, so the mean wait is
// still Pollaczek-Khinchine's rho*S/(2(1-rho)) = 0.5 µs, and the work
// done is the cap.
func TestCappedKeepsTheQueue(t *testing.T) {
	const rate, svc, rho = 5e5, time.Microsecond, 0.5
	cfg := Config{Tenants: []Tenant{{Rate: rate, Service: svc}}, Duration: 10 * time.Minute, Seed: 5,
		Layout: Layout{MIGFractions: []float64{1}}}
	capped, ok := cfg.Capped(2e5)
	if !ok || capped.ExpectedRequests() > 2e5*(1+1e-9) || capped.Tenants[0] != cfg.Tenants[0] {
		t.Fatalf("capped: %v, %v expected requests, tenant %+v", ok, capped.ExpectedRequests(), capped.Tenants[0])
	}
	if _, ok := capped.Capped(2e5); ok {
		t.Error("a config within the cap was shortened again")
	}
	const runs = 10
	sum, err := Compare(t.Context(), capped, runs, MIG)
	if err != nil {
		t.Fatal(err)
	}
	// Poisson: 2 million expected, its standard deviation 1,414.
	if n := sum[0].Requests; math.Abs(float64(n)-2e6) > 10*1414 {
		t.Errorf("simulated %d requests over %d runs, want about 2,000,000", n, runs)
	}
	want := rho * svc.Seconds() / (2 * (1 - rho))
	w := sum[0].Tenants[0].MeanWait
	se := w.SD / math.Sqrt(runs)
	if se > 0.03*want || math.Abs(w.Mean-want) > 4*se+0.01*want {
		t.Errorf("capped mean wait %.4g µs (SE %.2g), M/D/1 says %.4g µs", w.Mean*1e6, se*1e6, want*1e6)
	}
}
