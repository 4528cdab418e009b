package report

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// Energy cost and CO2e (docs/report.md, "Energy and carbon"). The ledger
// already splits each GPU's energy among its tenants; a line's kWh is that
// split, summed. With an energy rate in the price book a line's energy
// cost is its kWh x the rate, and with a carbon intensity its CO2e is its
// kWh x the intensity. Both are informational: they are never added to a
// line's amount, so every money figure of the report is what it is
// without them.
//
// Rounding is the report's: the period's total (all kWh x the rate) is
// rounded once, to the minor unit (CO2e: to the gram), and shared out over
// the lines by largest remainder, so the lines add up to the total exactly
// and each is its exact figure rounded down or up.

// EnergyTotals are the period's energy figures: every line's, summed.
type EnergyTotals struct {
	KWh *big.Rat // exact: the sum of every GPU's energy
	// Cost is KWh x the rate rounded once, in minor units; Co2eGrams is
	// KWh x the intensity rounded once, in grams.
	Cost, Co2eGrams int64
	// PlatformKWh, PlatformCost, PlatformCo2eGrams are the platform
	// lines' part: energy of capacity no team was charged for.
	PlatformKWh                     *big.Rat
	PlatformCost, PlatformCo2eGrams int64
	// NodeLabel is the book's carbon node label (carbonIntensityByNodeLabel;
	// "" without one), and UnlabelledNodes how many nodes with energy in
	// the period had no value of it recorded (and no figure by name): they
	// took carbonIntensity.
	NodeLabel       string
	UnlabelledNodes int
}

// co2eDecimals: CO2e is written in kg to the gram.
const co2eDecimals = 3

// HasEnergyCost reports whether the book names an energy rate.
func (r *Report) HasEnergyCost() bool { return r.Book.Energy != nil && r.Book.Energy.Rate != nil }

// HasCarbon reports whether the book names a carbon intensity.
func (r *Report) HasCarbon() bool {
	return r.Book.Energy != nil && r.Book.Energy.CarbonIntensity != nil
}

// HasEnergy reports whether the report shows energy figures at all: a book
// without an energy section writes exactly what it wrote before.
func (r *Report) HasEnergy() bool { return r.HasEnergyCost() || r.HasCarbon() }

// Kg writes grams as kilograms with three decimals.
func Kg(grams int64) string { return formatMinor(grams, co2eDecimals, false) }

// energyFigures sets each line's EnergyCost and Co2eGrams, the teams' and
// the report's totals. It runs after the money is rounded and summarised
// and touches none of it.
func energyFigures(r *Report, carbon map[devLineKey]*big.Rat) error {
	if !r.HasEnergy() {
		return nil
	}
	var idx []int
	total := &EnergyTotals{KWh: new(big.Rat), PlatformKWh: new(big.Rat)}
	for i, l := range r.Lines {
		if l.Type == LineRounding || l.EnergyKWh == nil {
			continue
		}
		idx = append(idx, i)
		total.KWh.Add(total.KWh, l.EnergyKWh)
	}
	if r.HasEnergyCost() {
		scale := minorScale(r.Book.Currency)
		per := new(big.Rat).Mul(r.Book.Energy.Rate.Rat(), scale) // minor units per kWh
		amounts, sum, err := shareOut(r.Lines, idx, per, nil)
		if err != nil {
			return fmt.Errorf("cannot work out energy cost: %w", err)
		}
		for k, i := range idx {
			r.Lines[i].EnergyCost = amounts[k]
		}
		total.Cost = sum
	}
	if r.HasCarbon() {
		var exacts []*big.Rat
		if carbon != nil {
			exacts = make([]*big.Rat, len(idx))
			for k, i := range idx {
				l := r.Lines[i]
				exacts[k] = new(big.Rat)
				if c := carbon[devLineKey{lineKey{l.Team, l.Namespace, l.GPUModel, l.SharingMode}, l.Type}]; c != nil {
					exacts[k].Quo(c, big.NewRat(milliPerKWh, 1))
				}
			}
		}
		grams, sum, err := shareOut(r.Lines, idx, r.Book.Energy.CarbonIntensity, exacts)
		if err != nil {
			return fmt.Errorf("cannot work out CO2e: %w", err)
		}
		for k, i := range idx {
			r.Lines[i].Co2eGrams = grams[k]
		}
		total.Co2eGrams = sum
	}
	teams := map[string]int{}
	for i := range r.Teams {
		teams[r.Teams[i].Team] = i
		r.Teams[i].EnergyKWh = new(big.Rat)
	}
	for _, i := range idx {
		l := r.Lines[i]
		if l.Type == LinePlatform {
			total.PlatformKWh.Add(total.PlatformKWh, l.EnergyKWh)
			total.PlatformCost += l.EnergyCost
			total.PlatformCo2eGrams += l.Co2eGrams
			continue
		}
		t := &r.Teams[teams[l.Team]]
		t.EnergyKWh.Add(t.EnergyKWh, l.EnergyKWh)
		t.EnergyCost += l.EnergyCost
		t.Co2eGrams += l.Co2eGrams
	}
	r.Energy = total
	return nil
}

// shareOut gives the lines idx integer figures (kWh x per, in the unit per
// is in) that add up to the total rounded once (half away from zero):
// each line's exact figure rounded down, then one more to the largest
// remainders, ties to the earlier line.
//
// exacts, when not nil, are the lines' exact figures already (CO2e from
// per-node intensities).
func shareOut(lines []Line, idx []int, per *big.Rat, exacts []*big.Rat) ([]int64, int64, error) {
	if exacts == nil {
		exacts = make([]*big.Rat, len(idx))
		for k, i := range idx {
			exacts[k] = new(big.Rat).Mul(lines[i].EnergyKWh, per)
		}
	}
	sum := new(big.Rat)
	for _, x := range exacts {
		sum.Add(sum, x)
	}
	target, err := roundHalfAway(sum)
	if err != nil {
		return nil, 0, err
	}
	out, err := largestRemainder(exacts, target)
	return out, target, err
}

// largestRemainder rounds exacts to integers that add up to target, which
// must be their sum rounded to a neighbouring integer: floors first, then
// one more each to the largest remainders (ties in order).
func largestRemainder(exacts []*big.Rat, target int64) ([]int64, error) {
	out := make([]int64, len(exacts))
	fracs := make([]*big.Rat, len(exacts))
	var floors int64
	for i, x := range exacts {
		f := floorRat(x)
		if !f.IsInt64() {
			return nil, fmt.Errorf("figure %s too large", x.FloatString(0))
		}
		out[i] = f.Int64()
		floors += out[i]
		fracs[i] = new(big.Rat).Sub(x, new(big.Rat).SetInt(f))
	}
	k := target - floors
	if k < 0 || k > int64(len(exacts)) {
		return nil, fmt.Errorf("cannot share out %d units over %d lines", k, len(exacts))
	}
	order := make([]int, len(exacts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return fracs[b].Cmp(fracs[a]) })
	for _, i := range order[:k] {
		out[i]++
	}
	return out, nil
}

// energyParts shares a line's energy cost and CO2e out over its FOCUS
// device rows in proportion to the rows' kWh (equal parts when they have
// none), by largest remainder, so a line's rows add up to the line.
func energyParts(l Line, kwhs []*big.Rat) (costs, grams []int64) {
	total := new(big.Rat)
	for _, e := range kwhs {
		if e != nil && e.Sign() > 0 {
			total.Add(total, e)
		}
	}
	weights := make([]*big.Rat, len(kwhs))
	for i, e := range kwhs {
		switch {
		case total.Sign() == 0:
			weights[i] = big.NewRat(1, int64(len(kwhs)))
		case e != nil && e.Sign() > 0:
			weights[i] = new(big.Rat).Quo(e, total)
		default:
			weights[i] = new(big.Rat)
		}
	}
	split := func(v int64) []int64 {
		ex := make([]*big.Rat, len(weights))
		for i, w := range weights {
			ex[i] = new(big.Rat).Mul(big.NewRat(v, 1), w)
		}
		out, err := largestRemainder(ex, v)
		if err != nil {
			// Weights sum to 1, so the floors leave 0..n units: unreachable.
			out = make([]int64, len(kwhs))
			if len(out) > 0 {
				out[0] = v
			}
		}
		return out
	}
	return split(l.EnergyCost), split(l.Co2eGrams)
}

// setEnergyParts gives a line's FOCUS device rows their energy cost and
// CO2e (energyParts).
func setEnergyParts(r *Report, l Line, parts []devicePart) {
	if !r.HasEnergy() || len(parts) == 0 {
		return
	}
	kwhs := make([]*big.Rat, len(parts))
	for i, p := range parts {
		kwhs[i] = p.energy
	}
	costs, grams := energyParts(l, kwhs)
	for i := range parts {
		parts[i].energyCost, parts[i].co2eGrams = costs[i], grams[i]
	}
}

// dayModelKey is one model on one day bucket.
type dayModelKey struct {
	day   int64 // the bucket's start, Unix nanoseconds
	model string
}

// recordShare remembers that on day the model's pool was shared and k
// took fraction f of it (books with per-node intensities only).
func (b *builder) recordShare(day time.Time, model string, k lineKey, f *big.Rat) {
	if b.fractions == nil {
		return
	}
	dk := dayModelKey{day.UnixNano(), model}
	if b.fractions[dk] == nil {
		b.fractions[dk] = map[lineKey]*big.Rat{}
	}
	b.fractions[dk][k] = f
}

// nodeLabels reads each node's value of the book's carbon node label as
// recorded at the period's end: a node removed from the cluster within
// the period keeps its last value. Nil when the book names no label; empty
// when the ledger records none.
func nodeLabels(ctx context.Context, src Source, book *pricebook.Book, to time.Time) (map[string]string, error) {
	l := book.Energy.CarbonIntensityByNodeLabel
	if l == nil {
		return nil, nil
	}
	// Both stores keep node labels (ledger.NodeLabelReader): a source
	// without them is an error, never every node silently at the default
	// intensity.
	nr, err := ledger.NodeLabels(src)
	if err != nil {
		return nil, fmt.Errorf("cannot read the nodes' %s: %w", l.Label, err)
	}
	labels, err := nr.NodeLabels(ctx, l.Label, to)
	if err != nil {
		return nil, fmt.Errorf("cannot read the nodes' %s: %w", l.Label, err)
	}
	return labels, nil
}

// intensity is a node's carbon intensity: by name, else by its recorded
// label value, else the default; it notes the nodes that had no value.
// The labels are keyed by ledger.NodeKey: a node of another cluster than
// the default one is its cluster's, not a same-named node's elsewhere.
func (b *builder) intensity(cluster, node string) *big.Rat {
	e := b.book.Energy
	if b.labels == nil {
		return e.IntensityFor(node)
	}
	v, ok := b.labels[ledger.NodeKey(cluster, node)]
	if _, named := e.CarbonIntensityByNode[node]; !ok && !named {
		if b.unlabelled == nil {
			b.unlabelled = map[string]bool{}
		}
		b.unlabelled[node] = true
	}
	return e.IntensityOf(node, v, ok)
}

// nodeCarbon works out each line's CO2e when the book gives nodes their
// own carbon intensity: it reads the period's energy per day, group and
// node, prices each node's energy at its intensity, and splits it as the
// builder split the energy: a container's to its charge line, the
// capacity nobody was charged for to the day's idle shares where the
// model's pool was shared that day (by the same fractions), else to its
// platform line. The figures are in milli-joules x gCO2e/kWh.
func (b *builder) nodeCarbon(ctx context.Context, src Source, from, to time.Time) (map[devLineKey]*big.Rat, error) {
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: b.book.Location, Bucket: ledger.BucketDay, ByNode: true})
	if err != nil {
		return nil, fmt.Errorf("cannot read ledger energy per node: %w", err)
	}
	if err := checkTotals(aggs); err != nil {
		return nil, err
	}
	out := map[devLineKey]*big.Rat{}
	add := func(k devLineKey, x *big.Rat) {
		if out[k] == nil {
			out[k] = new(big.Rat)
		}
		out[k].Add(out[k], x)
	}
	for _, a := range aggs {
		mj, err := fixed(a.EnergyJoules, milliPerJoule, maxJoules, "energy_joules", a)
		if err != nil {
			return nil, err
		}
		c := new(big.Rat).Mul(big.NewRat(mj, 1), b.intensity(a.Cluster, a.Node))
		switch a.Kind {
		case attribution.KindContainer:
			add(devLineKey{lineKey{a.Team, a.Namespace, a.GPUModel, a.Mode}, LineCharge}, c)
		case attribution.KindUnallocated, attribution.KindUnattributed, attribution.KindIdle:
			if fr := b.fractions[dayModelKey{a.BucketStart.UnixNano(), a.GPUModel}]; fr != nil {
				for k, f := range fr {
					add(devLineKey{k, LineIdleShare}, new(big.Rat).Mul(c, f))
				}
				continue
			}
			add(devLineKey{lineKey{model: a.GPUModel, mode: a.Mode}, LinePlatform}, c)
		default:
			return nil, fmt.Errorf("ledger aggregate for model %q on %s has unknown row kind %q", a.GPUModel, a.BucketStart.Format("2006-01-02"), a.Kind)
		}
	}
	return out, nil
}
