package report

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/support/rational"
)

// Aggregates come from the store as float64 sums. Each (day, group) sum is
// fixed once to integer micro-seconds (and milli-joules): far below any
// cent, and from here on nothing is approximate, so a month is exactly the
// sum of its days.
const (
	microPerSecond = 1_000_000
	milliPerJoule  = 1_000
	microPerHour   = 3600 * microPerSecond
	milliPerKWh    = 3_600_000 * milliPerJoule
	// Bounds of a whole report's sums that keep every integer sum inside
	// int64: 9e12 GPU-seconds is 285,000 GPUs for a year.
	maxSeconds = 9e12
	maxJoules  = 9e15
)

// quantity is one group's sums in integer units.
type quantity struct {
	alloc, used int64 // GPU-micro-seconds
	energy      int64 // milli-joules
	// mem is the memory share, memory MiB-seconds / the device's MiB in
	// GPU-micro-seconds: container rows of memory-weighted books only.
	mem int64
}

func (q *quantity) add(o quantity) {
	q.alloc += o.alloc
	q.used += o.used
	q.energy += o.energy
	q.mem += o.mem
}

func (q quantity) zero() bool { return q.alloc == 0 && q.used == 0 && q.energy == 0 && q.mem == 0 }

// checkTotals refuses aggregates whose sums could overflow the integer
// sums: every partial sum is bounded by the sum of absolute values.
func checkTotals(as []ledger.Aggregate) error {
	var secs, joules float64
	for _, a := range as {
		secs += math.Abs(a.AllocatedSeconds) + math.Abs(a.UsedSeconds)
		joules += math.Abs(a.EnergyJoules)
	}
	if !(secs <= maxSeconds) || !(joules <= maxJoules) {
		return fmt.Errorf("ledger aggregates too large for one report (%g GPU-seconds, %g J): split the period", secs, joules)
	}
	return nil
}

// quantify fixes an aggregate's sums to integer units, refusing values no
// ledger can hold.
func quantify(a ledger.Aggregate) (quantity, error) {
	alloc, err := fixed(a.AllocatedSeconds, microPerSecond, maxSeconds, "allocated_gpu_seconds", a)
	if err != nil {
		return quantity{}, err
	}
	used, err := fixed(a.UsedSeconds, microPerSecond, maxSeconds, "used_gpu_seconds", a)
	if err != nil {
		return quantity{}, err
	}
	energy, err := fixed(a.EnergyJoules, milliPerJoule, maxJoules, "energy_joules", a)
	if err != nil {
		return quantity{}, err
	}
	return quantity{alloc: alloc, used: used, energy: energy}, nil
}

func fixed(x float64, unit int64, bound float64, field string, a ledger.Aggregate) (int64, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > bound {
		return 0, fmt.Errorf("ledger aggregate %s for team %q, model %q, kind %s on %s: %v is out of range",
			field, a.Team, a.GPUModel, a.Kind, a.BucketStart.Format("2006-01-02"), x)
	}
	return int64(math.Round(x * float64(unit))), nil
}

// hours turns GPU-micro-seconds into exact GPU-hours.
func hours(us int64) *big.Rat { return rational.Ratio(us, microPerHour) }

// kwh turns milli-joules into exact kWh.
func kwh(mj int64) *big.Rat { return rational.Ratio(mj, milliPerKWh) }

// decimal writes x rounded (half away from zero) to d decimals, never as
// "-0.00".
func decimal(x *big.Rat, d int) string {
	if x == nil {
		return ""
	}
	s := rational.FloatString(x, d)
	if strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0.") == "" {
		return s[1:]
	}
	return s
}

// ratio is a/b, nil when b is zero.
func ratio(a, b *big.Rat) *big.Rat {
	if b == nil || b.Sign() == 0 {
		return nil
	}
	return new(big.Rat).Quo(a, b)
}

func ratSum(xs ...*big.Rat) *big.Rat {
	s := new(big.Rat)
	for _, x := range xs {
		if x != nil {
			s.Add(s, x)
		}
	}
	return s
}
