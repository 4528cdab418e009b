package report

import (
	"math/big"
	"math/rand"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// A built report's lines are in compareLines' order, no two tied, under
// every policy and idle rule, on random ledgers with several teams,
// namespaces and models; and each charge and platform line's integers
// (Line.Micro) are its hours and kWh.
func TestBuiltLinesAreInOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	lines := 0
	for it := 0; it < 24; it++ {
		policy, idle := allPolicies[it%4], []string{"platform", "shared"}[it/4%2]
		step := 15 * time.Minute
		base := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
		gpus, tenants := randomFleet(rng, base, base.Add(2*24*time.Hour), step)
		randomMemory(rng, gpus, tenants)
		b := randomBook(t, rng, policy, idle)
		src := &memSource{rows: ledgerRows(gpus, tenants, step)}
		r := mustBuild(t, src, b, base, base.Add(48*time.Hour))
		// The same lines priced in parts, one a key (two processors at
		// most here): a large report's way, under -race in make race.
		keep := minKeysPerPart
		minKeysPerPart = 1
		parted := mustBuild(t, src, b, base, base.Add(48*time.Hour))
		minKeysPerPart = keep
		if len(parted.Lines) != len(r.Lines) {
			t.Fatalf("iteration %d: %d lines priced in parts, %d in one", it, len(parted.Lines), len(r.Lines))
		}
		for i := range r.Lines {
			x, y := &r.Lines[i], &parted.Lines[i]
			if compareLines(*x, *y) != 0 || x.Amount != y.Amount || x.Exact.Cmp(y.Exact) != 0 {
				t.Fatalf("iteration %d: line %d priced in parts is %s %s %s %d, in one %s %s %s %d", it, i, y.Team, y.Namespace, y.Type, y.Amount,
					x.Team, x.Namespace, x.Type, x.Amount)
			}
		}
		for i := range r.Lines {
			l := &r.Lines[i]
			if i > 0 && compareLines(r.Lines[i-1], *l) >= 0 {
				t.Fatalf("iteration %d (%s, idle %s): line %d (%s %s %s %s) is not after line %d (%s %s %s %s)", it, policy, idle,
					i, l.Team, l.Namespace, l.GPUModel, l.Type, i-1, r.Lines[i-1].Team, r.Lines[i-1].Namespace, r.Lines[i-1].GPUModel, r.Lines[i-1].Type)
			}
			alloc, used, mj, ok := l.Micro()
			if ok != (l.Type == LineCharge || l.Type == LinePlatform) {
				t.Fatalf("iteration %d: a %s line has integers: %v", it, l.Type, ok)
			}
			if ok && (big.NewRat(alloc, MicroPerHour).Cmp(l.AllocatedHours) != 0 || big.NewRat(used, MicroPerHour).Cmp(l.UsedHours) != 0 ||
				big.NewRat(mj, MilliPerKWh).Cmp(l.EnergyKWh) != 0) {
				t.Fatalf("iteration %d: %s line of %s: integers %d, %d, %d against %s h, %s h, %s kWh", it, l.Type, l.Team, alloc, used, mj,
					l.AllocatedHours, l.UsedHours, l.EnergyKWh)
			}
		}
		lines += len(r.Lines)
	}
	if lines < 200 {
		t.Fatalf("only %d lines in 24 reports", lines)
	}
}

// byDay hands back parts of aggregates already in time order, without a
// copy, and sorts a copy of any others, leaving them as they were.
func TestByDayGroupsInTimeOrder(t *testing.T) {
	d1, d2 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	in := []ledger.Aggregate{{BucketStart: d1, Team: "a"}, {BucketStart: d1, Team: "b"}, {BucketStart: d2, Team: "c"}}
	days := byDay(in)
	if len(days) != 2 || len(days[0]) != 2 || len(days[1]) != 1 || days[0][1].Team != "b" || days[1][0].Team != "c" {
		t.Fatalf("in order: got %v", days)
	}
	if &days[0][0] != &in[0] || &days[1][0] != &in[2] {
		t.Error("aggregates in time order were copied")
	}
	out := []ledger.Aggregate{{BucketStart: d2, Team: "c"}, {BucketStart: d1, Team: "a"}, {BucketStart: d1, Team: "b"}}
	days = byDay(out)
	if len(days) != 2 || days[0][0].Team != "a" || days[0][1].Team != "b" || days[1][0].Team != "c" {
		t.Fatalf("out of order: got %v", days)
	}
	if out[0].Team != "c" || out[1].Team != "a" {
		t.Errorf("byDay reordered its input: %v", out)
	}
}
