package report

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// The billing policies (docs/report.md, "Billing policies") differ in
// three things only, all here; everything else (idle sharing, platform
// lines, rounding) is one path for all of them:
//
//   - what a container is charged each day (chargedOf): its allocated
//     seconds (allocation, flat), its used seconds (usage), or the blend
//     (1-w) x used + w x memory share (usage with memoryWeight w);
//   - the unit the book prices (unit): GPU-hours at a rate per hour, or,
//     under flat, slot-months at a price per slot per month, a day's
//     slot-hours counting against the hours of its own calendar month;
//   - the price (price): rates / defaultRate, or slotRates.
//
// Each GPU model's capacity (the hours its GPUs were observed) is charged
// exactly once a day: the containers' charges, plus the pool nobody was
// charged for, which goes to the platform or is shared.

// checkModel refuses a model the policy cannot price.
func (b *builder) checkModel(model string) error {
	if b.book.Policy != pricebook.PolicyFlat {
		return nil
	}
	if _, ok := b.book.SlotRateFor(model); !ok {
		return fmt.Errorf("price book %s: policy flat has no slotRates entry for GPU model %q, which the ledger has: add its price per GPU slot per month", b.book.Source, model)
	}
	return nil
}

// price is what one priced unit of a model costs.
func (b *builder) price(model string) pricebook.Rate {
	if b.book.Policy == pricebook.PolicyFlat {
		r, _ := b.book.SlotRateFor(model)
		return r
	}
	r, _ := b.book.RateFor(model)
	return r
}

// unit converts a day's GPU-micro-seconds into priced units: hours, or
// under flat, slot-months of that day's calendar month in the book's zone
// (so a slot held a whole month pays its price, be the month 28 days or a
// 743-hour DST one).
func (b *builder) unit(day time.Time) *big.Rat {
	if b.book.Policy != pricebook.PolicyFlat {
		return big.NewRat(1, microPerHour)
	}
	return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Mul(big.NewInt(monthSeconds(day, b.book.Location)), big.NewInt(microPerSecond)))
}

// monthSeconds is the length of the calendar month holding t, in loc.
func monthSeconds(t time.Time, loc *time.Location) int64 {
	y, m, _ := t.In(loc).Date()
	start := time.Date(y, m, 1, 0, 0, 0, 0, loc)
	return int64(start.AddDate(0, 1, 0).Sub(start) / time.Second)
}

// derivedRate is a flat line's price per GPU-hour: its amount over its
// hours (the slot price over the month's hours when the line lies in one
// month).
func (b *builder) derivedRate(exact, chargedHours *big.Rat, model string) pricebook.Rate {
	if chargedHours.Sign() > 0 {
		return pricebook.DerivedRate(new(big.Rat).Quo(exact, chargedHours))
	}
	mt := b.models[model]
	if mt == nil || mt.capacity <= 0 {
		return pricebook.DerivedRate(nil)
	}
	x := new(big.Rat).Mul(mt.priced, new(big.Rat).Set(b.price(model).Rat()))
	return pricebook.DerivedRate(x.Quo(x, hours(mt.capacity)))
}

// memoryShare is a container aggregate's memory as a share of its
// device: MiB-seconds / the model's memory MiB, in GPU-micro-seconds.
// Only memory-weighted books need it; a model with memory to bill and no
// known size is an error naming it.
func (b *builder) memoryShare(a ledger.Aggregate) (int64, error) {
	if !b.book.MemoryWeighted() || a.MemoryMiBSeconds == 0 {
		return 0, nil
	}
	x := a.MemoryMiBSeconds
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0, fmt.Errorf("ledger aggregate memory_mib_seconds for team %q, model %q on %s: %v is out of range",
			a.Team, a.GPUModel, a.BucketStart.Format("2006-01-02"), x)
	}
	dev, ok := b.book.MemoryMiBFor(a.GPUModel)
	if !ok {
		return 0, fmt.Errorf("price book %s: GPU model %q has memory-weighted charges (memoryWeight %s) but no memory size: add memoryMiB: {%s: <device memory in MiB>}",
			b.book.Source, a.GPUModel, exactDecimal(b.book.MemoryWeight), a.GPUModel)
	}
	secs := x / float64(dev)
	b.memSecs += secs
	if !(b.memSecs <= maxSeconds) {
		return 0, fmt.Errorf("ledger memory_mib_seconds too large for one report (%g GPU-seconds of memory share): split the period", b.memSecs)
	}
	return int64(math.Round(secs * microPerSecond)), nil
}

// memoryScale is the clamp of a day's memory shares on one model: 1, or
// capacity / their sum where the containers report more memory-seconds
// than the model's GPUs had that day (a collector fault; the ledger's
// aggregates do not say which GPU, so the clamp is per model and day).
func (b *builder) memoryScale(dm *dayModel) *big.Rat {
	var mem, capacity int64
	for _, q := range dm.containers {
		mem += q.mem
		capacity += q.used
	}
	for _, q := range dm.platform {
		capacity += q.used
	}
	if mem <= capacity || mem <= 0 {
		return big.NewRat(1, 1)
	}
	return big.NewRat(max(capacity, 0), mem)
}

// chargedOf is what each container key is charged on one day, in
// GPU-micro-seconds, and the memory clamp applied.
func (b *builder) chargedOf(dm *dayModel) (map[lineKey]*big.Rat, *big.Rat) {
	out := make(map[lineKey]*big.Rat, len(dm.containers))
	if !b.book.MemoryWeighted() {
		for k, q := range dm.containers {
			out[k] = big.NewRat(b.column(q), 1)
		}
		return out, nil
	}
	w := b.book.MemoryWeight
	rest := new(big.Rat).Sub(big.NewRat(1, 1), w)
	scale := b.memoryScale(dm)
	for k, q := range dm.containers {
		c := new(big.Rat).Mul(rest, big.NewRat(q.used, 1))
		m := new(big.Rat).Mul(big.NewRat(q.mem, 1), scale)
		out[k] = c.Add(c, m.Mul(m, w))
	}
	return out, scale
}

// platformCharged is what the platform lines of one model and day carry
// when nobody shares the pool: their column, and under memory weighting
// (1-w) x their used seconds + w x the memory nobody held, split over the
// sharing modes by each mode's unheld memory (capacity - memory shares).
// It adds up to the pool exactly.
func (b *builder) platformCharged(dm *dayModel, scale *big.Rat) map[lineKey]*big.Rat {
	out := make(map[lineKey]*big.Rat, len(dm.platform))
	if scale == nil {
		for k, q := range dm.platform {
			out[k] = big.NewRat(b.column(q), 1)
		}
		return out
	}
	w := b.book.MemoryWeight
	rest := new(big.Rat).Sub(big.NewRat(1, 1), w)
	for k, q := range dm.platform {
		out[k] = new(big.Rat).Mul(rest, big.NewRat(q.used, 1))
	}
	// Each mode's capacity and memory shares.
	type modeSum struct{ capacity, mem *big.Rat }
	modes := map[lineKey]*modeSum{}
	get := func(k lineKey) *modeSum {
		pk := lineKey{model: k.model, mode: k.mode}
		if modes[pk] == nil {
			modes[pk] = &modeSum{new(big.Rat), new(big.Rat)}
		}
		return modes[pk]
	}
	unheld := new(big.Rat)
	for k, q := range dm.containers {
		m := get(k)
		m.capacity.Add(m.capacity, big.NewRat(q.used, 1))
		held := new(big.Rat).Mul(big.NewRat(q.mem, 1), scale)
		m.mem.Add(m.mem, held)
		unheld.Add(unheld, big.NewRat(q.used, 1)).Sub(unheld, held)
	}
	for k, q := range dm.platform {
		m := get(k)
		m.capacity.Add(m.capacity, big.NewRat(q.used, 1))
		unheld.Add(unheld, big.NewRat(q.used, 1))
	}
	if unheld.Sign() <= 0 {
		return out
	}
	pos := map[lineKey]*big.Rat{}
	total := new(big.Rat)
	for k, m := range modes {
		if d := new(big.Rat).Sub(m.capacity, m.mem); d.Sign() > 0 {
			pos[k] = d
			total.Add(total, d)
		}
	}
	for k, d := range pos {
		x := new(big.Rat).Mul(unheld, d)
		x.Quo(x, total).Mul(x, w)
		if out[k] == nil {
			out[k] = new(big.Rat)
		}
		out[k].Add(out[k], x)
	}
	return out
}
