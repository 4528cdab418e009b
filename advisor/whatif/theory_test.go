package whatif

import (
	"math"
	"testing"
	"time"
)

// TestMIGInstanceIsMD1: a MIG instance is an M/D/1 queue, so its mean
// wait is rho*S/(2(1-rho)) (Pollaczek-Khinchine with a deterministic
// service S, the service time inflated by the slice). Band: the mean over
// 40 independent runs must lie within 4 standard errors of the theory,
// the standard error estimated from the runs themselves, plus 1% for the
// two finite-run biases (the queue starts empty; requests that would end
// after the duration are not counted). The standard error must itself be
// under 3% of the theory, so the band cannot be wide enough to pass
// anything.
func TestMIGInstanceIsMD1(t *testing.T) {
	cases := []struct {
		rate     float64
		service  time.Duration
		fraction float64
		duration time.Duration
	}{
		{12, 10 * time.Millisecond, 1.0 / 7, 2 * time.Hour},   // the reference model's slice: rho 0.84
		{20, 10 * time.Millisecond, 3.0 / 7, time.Hour},       // 3g: rho 0.467
		{5, 50 * time.Millisecond, 1, time.Hour},              // whole card: rho 0.25
		{30, 5 * time.Millisecond, 2.0 / 7, 90 * time.Minute}, // 2g: rho 0.525
	}
	const runs = 40
	for _, c := range cases {
		s := c.service.Seconds() / c.fraction
		rho := c.rate * s
		want := rho * s / (2 * (1 - rho))
		cfg := Config{Tenants: []Tenant{{Rate: c.rate, Service: c.service}}, Duration: c.duration, Seed: 11,
			Layout: Layout{MIGFractions: []float64{c.fraction}}}
		sum, err := Compare(t.Context(), cfg, runs, MIG)
		if err != nil {
			t.Fatal(err)
		}
		w := sum[0].Tenants[0].MeanWait
		se := w.SD / math.Sqrt(runs)
		t.Logf("rho %.3f S %.1f ms: mean wait %.3f ms (SE %.3f), M/D/1 %.3f ms", rho, s*1e3, w.Mean*1e3, se*1e3, want*1e3)
		if se > 0.03*want {
			t.Errorf("rho %.3f: standard error %.3f ms is over 3%% of %.3f ms: the test has no power", rho, se*1e3, want*1e3)
		}
		if math.Abs(w.Mean-want) > 4*se+0.01*want {
			t.Errorf("rho %.3f, S %.1f ms: simulated mean wait %.3f ms, M/D/1 says %.3f ms (band ±%.3f ms)",
				rho, s*1e3, w.Mean*1e3, want*1e3, (4*se+0.01*want)*1e3)
		}
	}
}

// seedRow is one line of the reference model's table (one 60 s run, numpy seed 7).
type seedRow struct {
	mode         Mode
	served       float64 // served / offered
	p50ms, p99ms float64
}

var seedTable = []seedRow{
	{MIG, 5039.0 / 5067, 200.92, 1029.04},
	{MPS, 5065.0 / 5067, 11.80, 30.47},
	{TimeSlicing, 5063.0 / 5067, 39.92, 208.21},
}

func seedConfig() Config {
	ts := make([]Tenant, 7)
	for i := range ts {
		ts[i] = Tenant{Rate: 12, Service: 10 * time.Millisecond}
	}
	return Config{Tenants: ts, Duration: time.Minute, Seed: 7}
}

// TestReferenceTable: the reference model's figures are one 60-second run, so they are a
// single draw from the distribution our runs sample. Band: each of the
// reference's served fraction, p50 and p99 lies within 2.5 run-to-run standard
// deviations of our mean over 400 runs (a single run's sampling error;
// our mean's own error is 20 times smaller), plus 0.2% for the latency
// histogram's resolution (MPS's p50 does not vary from run to run). The bands this gives are
// printed by -v and written in docs/advisor.md.
func TestReferenceTable(t *testing.T) {
	sums, err := Compare(t.Context(), seedConfig(), 400)
	if err != nil {
		t.Fatal(err)
	}
	for k, row := range seedTable {
		s := sums[k]
		if s.Mode != row.mode {
			t.Fatalf("mode %d is %s, want %s", k, s.Mode, row.mode)
		}
		for _, c := range []struct {
			name string
			st   Stat
			want float64
			unit float64
		}{
			{"served", s.ServedFraction, row.served, 100},
			{"p50", s.P50, row.p50ms / 1e3, 1e3},
			{"p99", s.P99, row.p99ms / 1e3, 1e3},
		} {
			band := 2.5*c.st.SD + 2e-3*c.want
			t.Logf("%-11s %-6s ours %.3f ± %.3f (run SD), reference %.3f", s.Mode, c.name, c.st.Mean*c.unit, c.st.SD*c.unit, c.want*c.unit)
			if math.Abs(c.st.Mean-c.want) > band {
				t.Errorf("%s %s: ours %.3f, reference %.3f: outside ±%.3f", s.Mode, c.name, c.st.Mean*c.unit, c.want*c.unit, band*c.unit)
			}
		}
	}
	// The ordering the reference model draws its conclusion from.
	mig, mps, ts := sums[0], sums[1], sums[2]
	if !(mps.P50.Mean < ts.P50.Mean && ts.P50.Mean < mig.P50.Mean && mps.P99.Mean < ts.P99.Mean && ts.P99.Mean < mig.P99.Mean) {
		t.Errorf("want MPS < time-slicing < MIG at p50 and p99, got p50 %v/%v/%v p99 %v/%v/%v",
			mps.P50.Mean, ts.P50.Mean, mig.P50.Mean, mps.P99.Mean, ts.P99.Mean, mig.P99.Mean)
	}
	// MPS's median request finds exactly one client busy (its own queue
	// or one neighbour's): S(1 + 0.18) = 11.8 ms, the reference model's figure.
	if math.Abs(mps.P50.Mean-0.0118) > 0.0118*2e-3 {
		t.Errorf("MPS p50 %.4f ms, want 11.8 ms", mps.P50.Mean*1e3)
	}
}

// TestHostileTenant is the reference model's exercise: tenant 6 sends twice the
// requests at ten times the service. Under MIG the six others' p99 is
// unchanged, run by run; under MPS it degrades by far more than the
// run-to-run noise.
func TestHostileTenant(t *testing.T) {
	rep, err := HostileExercise(t.Context(), seedConfig(), 6, 100)
	if err != nil {
		t.Fatal(err)
	}
	by := map[Mode]HostileMode{}
	for _, m := range rep.Modes {
		by[m.Mode] = m
		t.Logf("%-11s well-behaved p99 %.2f ms -> %.2f ms (%+.2f)", m.Mode, m.BenignP99.Mean*1e3, m.HostileP99.Mean*1e3, m.Change*1e3)
	}
	t.Logf("gap MPS - MIG with the hostile tenant: %.2f ms", rep.Gap*1e3)
	if !rep.MIGUnchanged || by[MIG].Change != 0 {
		t.Errorf("MIG: well-behaved p99 moved by %v (run by run unchanged: %v)", by[MIG].Change, rep.MIGUnchanged)
	}
	mps := by[MPS]
	if noise := 3 * (mps.BenignP99.SD + mps.HostileP99.SD) / 10; !(mps.Change > noise) || mps.HostileP99.Mean < 2*mps.BenignP99.Mean {
		t.Errorf("MPS: well-behaved p99 %.2f -> %.2f ms, want a degradation well beyond noise", mps.BenignP99.Mean*1e3, mps.HostileP99.Mean*1e3)
	}
	if want := mps.HostileP99.Mean - by[MIG].HostileP99.Mean; rep.Gap != want {
		t.Errorf("gap %v, want %v", rep.Gap, want)
	}
}
