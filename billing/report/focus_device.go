package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	catalogue "github.com/gpuledger/gpuledger/gpu"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/workload"
)

// The FOCUS export per device (docs/focus.md, "Row grain"): each finance
// line is split over the GPUs or MIG instances and pods it was charged
// for, read from the ledger's ByDevice day aggregates. A line's amount is
// apportioned over its rows by largest remainder of their exact shares, so
// the rows of a line add up to its amount exactly and BilledCost to the
// finance CSV's total; quantities are the line's charged GPU-hours
// apportioned the same way, so every row's cost is its quantity at the
// line's rate, to less than one minor unit.

// LoadDevices reads the per-device day aggregates of r's period from src,
// so that WriteFOCUS and WriteFOCUSJSONL write one row per line, GPU or
// MIG instance and pod. Without it they write one row per finance line.
//
// A cluster's report (Report.Cluster) reads that cluster's devices: a
// fleet's bill of several clusters is its clusters' reports (pieces),
// each split over its own devices.
func LoadDevices(ctx context.Context, src Source, r *Report) error {
	return loadDevices(ctx, src, r, r.Cluster)
}

func loadDevices(ctx context.Context, src Source, r *Report, cluster string) error {
	if r.Cluster != "" {
		cluster = r.Cluster
	}
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: r.From, To: r.To, Location: r.Book.Location, Bucket: ledger.BucketDay, ByDevice: true, Cluster: cluster})
	if err != nil {
		return fmt.Errorf("cannot read per-device ledger aggregates: %w", err)
	}
	if aggs == nil {
		aggs = []ledger.Aggregate{}
	}
	r.Devices = aggs
	for _, p := range r.pieces {
		if err := loadDevices(ctx, src, p, cluster); err != nil {
			return err
		}
	}
	return nil
}

// device is what a FOCUS row is for, finer than a line: a GPU, its slice
// (device ID) and the pod.
type device struct{ gpu, slice, pod string }

// devShare is one device's part of one line.
type devShare struct {
	dev    device
	weight *big.Rat // the line's priced units this device accounts for
	// alloc, used and energy are the device's own ledger sums (charge and
	// platform lines); idle shares take the line's, apportioned.
	alloc, used, energy int64
	own                 bool
}

// devLineKey identifies a line by its finance key and type.
type devLineKey struct {
	lineKey
	t LineType
}

// deviceSplit is each line's devices, in the order they were first seen.
type deviceSplit struct {
	shares map[devLineKey][]*devShare
	index  map[devLineKey]map[device]int
	// profiles are the MIG profiles of slices, by GPU and slice: a slice
	// lies on one instance for its life, so one profile each.
	profiles map[[2]string]string
}

func (d *deviceSplit) add(k devLineKey, dev device, w *big.Rat, q quantity, own bool) {
	if d.shares[k] == nil {
		d.index[k] = map[device]int{}
	}
	i, ok := d.index[k][dev]
	if !ok {
		i = len(d.shares[k])
		d.index[k][dev] = i
		d.shares[k] = append(d.shares[k], &devShare{dev: dev, weight: new(big.Rat), own: own})
	}
	s := d.shares[k][i]
	s.weight.Add(s.weight, w)
	if own {
		s.alloc += q.alloc
		s.used += q.used
		s.energy += q.energy
	}
}

// devKeyOf encodes a device into a lineKey's namespace, so the builder's
// own per-day rules (chargedOf, platformCharged) run on devices.
func devKeyOf(k lineKey, dev device) lineKey {
	k.namespace = k.namespace + "\x00" + dev.gpu + "\x00" + dev.slice + "\x00" + dev.pod
	return k
}

func splitDevKey(k lineKey) (lineKey, device) {
	parts := strings.SplitN(k.namespace, "\x00", 4)
	k.namespace = parts[0]
	return k, device{parts[1], parts[2], parts[3]}
}

// splitDevices computes, day by day with the builder's rules, what each
// device adds to each line.
func splitDevices(book *pricebook.Book, aggs []ledger.Aggregate) (*deviceSplit, error) {
	d := &deviceSplit{shares: map[devLineKey][]*devShare{}, index: map[devLineKey]map[device]int{}, profiles: map[[2]string]string{}}
	b := newBuilder(book)
	for _, day := range byDay(aggs) {
		models := map[string]*dayModel{}
		for _, a := range day {
			q, err := quantify(a)
			if err != nil {
				return nil, err
			}
			dm := models[a.GPUModel]
			if dm == nil {
				dm = &dayModel{containers: map[lineKey]quantity{}, platform: map[lineKey]quantity{}}
				models[a.GPUModel] = dm
			}
			dev := device{a.GPUUUID, a.SliceID, a.Pod}
			if a.MIGProfile != "" {
				k := [2]string{a.GPUUUID, a.SliceID}
				d.profiles[k] = max(d.profiles[k], a.MIGProfile)
			}
			switch a.Kind {
			case attribution.KindContainer:
				if q.mem, err = b.memoryShare(a); err != nil {
					return nil, err
				}
				k := devKeyOf(lineKey{a.Team, a.Namespace, a.GPUModel, a.Mode}, dev)
				dm.containers[k] = plus(dm.containers[k], q)
			case attribution.KindUnallocated, attribution.KindUnattributed, attribution.KindIdle:
				k := devKeyOf(lineKey{model: a.GPUModel, mode: a.Mode}, device{gpu: a.GPUUUID, slice: a.SliceID})
				dm.platform[k] = plus(dm.platform[k], q)
			default:
				return nil, fmt.Errorf("ledger aggregate for model %q on %s has unknown row kind %q", a.GPUModel, a.BucketStart.Format("2006-01-02"), a.Kind)
			}
		}
		for _, model := range sortedKeys(models) {
			d.addDayModel(b, day[0], models[model])
		}
	}
	return d, nil
}

// addDayModel is builder.addDayModel per device: the same charged seconds,
// pool and shares, credited to devices instead of summed per line.
func (d *deviceSplit) addDayModel(b *builder, day ledger.Aggregate, dm *dayModel) {
	unit := b.unit(day.BucketStart)
	charged, scale := b.chargedOf(dm)
	weight := new(big.Rat)
	var capacity int64
	for _, k := range sortedLineKeys(dm.containers) {
		c := charged[k]
		weight.Add(weight, c)
		capacity += b.column(dm.containers[k])
		lk, dev := splitDevKey(k)
		d.add(devLineKey{lk, LineCharge}, dev, new(big.Rat).Mul(c, unit), dm.containers[k], true)
	}
	for _, q := range dm.platform {
		capacity += b.column(q)
	}
	pool := new(big.Rat).Sub(big.NewRat(capacity, 1), weight)
	if b.book.Idle != pricebook.IdleShared || weight.Sign() <= 0 {
		pc := b.platformCharged(dm, scale)
		// Under memory weighting platformCharged also returns each mode's
		// unheld memory under the mode's key (no device): spread it over
		// the mode's platform devices by their used seconds.
		for _, k := range sortedLineKeys(dm.platform) {
			lk, dev := splitDevKey(k)
			w := new(big.Rat)
			if c := pc[k]; c != nil {
				w.Set(c)
			}
			if extra := pc[lineKey{model: lk.model, mode: lk.mode}]; extra != nil {
				var modeUsed int64
				for k2, q2 := range dm.platform {
					if k2.model == lk.model && k2.mode == lk.mode {
						modeUsed += q2.used
					}
				}
				if modeUsed > 0 {
					w.Add(w, new(big.Rat).Mul(extra, big.NewRat(dm.platform[k].used, modeUsed)))
				}
			}
			d.add(devLineKey{lk, LinePlatform}, dev, w.Mul(w, unit), dm.platform[k], true)
		}
		return
	}
	// The idle pool is shared by charged seconds; each container's share is
	// credited to the devices it was charged on.
	for _, k := range sortedLineKeys(dm.containers) {
		w := charged[k]
		if w.Sign() == 0 {
			continue
		}
		lk, dev := splitDevKey(k)
		x := new(big.Rat).Mul(pool, w)
		x.Quo(x, weight).Mul(x, unit)
		d.add(devLineKey{lk, LineIdleShare}, dev, x, quantity{}, false)
	}
}

func sortedLineKeys(m map[lineKey]quantity) []lineKey {
	keys := make([]lineKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y lineKey) int {
		return strings.Compare(x.team+"\x01"+x.namespace+"\x01"+x.model+"\x01"+x.mode, y.team+"\x01"+y.namespace+"\x01"+y.model+"\x01"+y.mode)
	})
	return keys
}

// devicePart is one FOCUS row of a line: its device, amount and
// quantities.
type devicePart struct {
	dev                 device
	amount              int64
	charged             *big.Rat // GPU-hours
	alloc, used, energy *big.Rat // hours, hours, kWh
	efficiency          *big.Rat
	// energyCost and co2eGrams are the part's share of the line's
	// (setEnergyParts), when the book has an energy section.
	energyCost, co2eGrams int64
}

// partsOf splits line l over its devices: each device's exact share of
// the line's amount is l.Exact x its weight / the line's weight, and the
// amount is apportioned over the shares by largest remainder (floor each,
// then one minor unit more to the largest remainders, ties in device
// order), so the parts add up to l.Amount exactly. A line without devices
// (or whose devices weigh nothing) is one part with no device.
func partsOf(l Line, shares []*devShare, scale *big.Rat) []devicePart {
	total := new(big.Rat)
	for _, s := range shares {
		if s.weight.Sign() > 0 {
			total.Add(total, s.weight)
		}
	}
	if total.Sign() <= 0 {
		if len(shares) == 0 {
			return []devicePart{{amount: l.Amount, charged: l.Charged, alloc: l.AllocatedHours, used: l.UsedHours, energy: l.EnergyKWh, efficiency: l.Efficiency}}
		}
		// Nothing to weigh by: equal parts.
		for _, s := range shares {
			s.weight = big.NewRat(1, 1)
		}
		total = big.NewRat(int64(len(shares)), 1)
	}
	var parts []devicePart
	var ratios []*big.Rat
	for _, s := range shares {
		if s.weight.Sign() <= 0 {
			continue
		}
		ratio := new(big.Rat).Quo(s.weight, total)
		p := devicePart{dev: s.dev, charged: new(big.Rat).Mul(l.Charged, ratio)}
		if s.own {
			p.alloc, p.used, p.energy = hours(s.alloc), hours(s.used), kwh(s.energy)
			if l.Type == LineCharge && s.alloc != 0 {
				p.efficiency = ratio2(p.used, p.alloc)
			}
		} else {
			p.alloc, p.used, p.energy = mulOrNil(l.AllocatedHours, ratio), mulOrNil(l.UsedHours, ratio), mulOrNil(l.EnergyKWh, ratio)
		}
		parts = append(parts, p)
		ratios = append(ratios, ratio)
	}
	apportionParts(l, parts, ratios, scale)
	return parts
}

func ratio2(a, b *big.Rat) *big.Rat { return new(big.Rat).Quo(a, b) }

func mulOrNil(x, r *big.Rat) *big.Rat {
	if x == nil {
		return nil
	}
	return new(big.Rat).Mul(x, r)
}

// apportionParts sets each part's amount: floor(l.Exact x ratio, in
// minor units), then the
// minor units left (l.Amount - the floors) one each to the largest
// remainders. l.Amount is l.Exact rounded to a neighbouring integer, so
// what is left lies in [0, len(parts)]; were it not, the difference would
// still be spread one unit at a time, so the parts always add up.
func apportionParts(l Line, parts []devicePart, ratios []*big.Rat, scale *big.Rat) {
	exact := new(big.Rat).Mul(l.Exact, scale) // in minor units
	fracs := make([]*big.Rat, len(parts))
	var sum int64
	for i := range parts {
		x := new(big.Rat).Mul(exact, ratios[i])
		f := floorRat(x).Int64()
		parts[i].amount = f
		sum += f
		fracs[i] = x.Sub(x, big.NewRat(f, 1))
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return fracs[b].Cmp(fracs[a]) })
	for left, i := l.Amount-sum, 0; left != 0; i++ {
		j := order[i%len(order)]
		if left > 0 {
			parts[j].amount++
			left--
		} else {
			parts[order[len(order)-1-i%len(order)]].amount--
			left++
		}
	}
}

// focusResource names a device as a FOCUS resource: the MIG instance's
// UUID for a MIG slice, the GPU's UUID otherwise (a time-slicing or MPS
// replica is its GPU).
func focusResource(dev device) (id, typ string, mig bool) {
	if sid, err := attribution.ParseDeviceID(dev.slice); err == nil && sid.Kind == attribution.SliceKindMIG {
		if sid.UUID != "" {
			return sid.UUID, "MIG Instance", true
		}
		return fmt.Sprintf("%s/gi%d", dev.gpu, sid.GI), "MIG Instance", true
	}
	if dev.gpu != "" {
		return dev.gpu, "GPU", false
	}
	return dev.slice, "GPU", false
}

// focusSku names what a device part was priced as: the model, and on a
// MIG instance its profile ("A100-SXM4-80GB/mig-3g.40gb"), or "/mig" alone
// for rows stored before the ledger recorded profiles.
func focusSku(model string, mig bool, profile string) string {
	sku := catalogue.NormaliseModel(model)
	switch {
	case mig && profile != "":
		sku += "/mig-" + profile
	case mig:
		sku += "/mig"
	}
	return sku
}

// focusDeviceRows writes each line as its device parts. The rounding line
// stays one row. A resource's rows are the allocated charges split from
// one origin charge, what the resource was charged for in the period, so
// AllocatedRatio is a row's charged GPU-hours over its resource's.
func focusDeviceRows(r *Report, header []string) ([][]string, error) {
	split, err := splitDevices(r.Book, r.Devices)
	if err != nil {
		return nil, err
	}
	type part struct {
		l   Line
		p   devicePart
		res string
	}
	var all []part
	totals := map[string]*big.Rat{}
	scale := minorScale(r.Book.Currency)
	for _, l := range r.Lines {
		if l.Type == LineRounding {
			all = append(all, part{l: l})
			continue
		}
		ps := partsOf(l, split.shares[devLineKey{lineKey{l.Team, l.Namespace, l.GPUModel, l.SharingMode}, l.Type}], scale)
		setEnergyParts(r, l, ps)
		for _, p := range ps {
			res := "gpu-pool/" + l.GPUModel
			if p.dev != (device{}) {
				res, _, _ = focusResource(p.dev)
			}
			if totals[res] == nil {
				totals[res] = new(big.Rat)
			}
			totals[res].Add(totals[res], p.charged)
			all = append(all, part{l, p, res})
		}
	}
	rows := make([][]string, 0, len(all))
	for _, x := range all {
		c, err := focusCells(r, x.l, nil)
		if err != nil {
			return nil, err
		}
		if x.l.Type != LineRounding {
			if err := focusDeviceCells(c, r, x.l, x.p, split.profiles[[2]string{x.p.dev.gpu, x.p.dev.slice}], totals[x.res]); err != nil {
				return nil, err
			}
		}
		rows = append(rows, focusOrder(c, header))
	}
	return rows, nil
}

// focusDeviceCells turns a line's cells into one device part's; profile
// is the MIG profile of the part's slice, "" when unknown or not MIG.
func focusDeviceCells(c map[string]string, r *Report, l Line, p devicePart, profile string, resTotal *big.Rat) error {
	book := r.Book
	amount := r.Money(p.amount)
	c["BilledCost"], c["EffectiveCost"], c["ListCost"], c["ContractedCost"] = amount, amount, amount, amount
	qty := decimal(p.charged, hoursDecimals)
	c["PricingQuantity"], c["ConsumedQuantity"] = qty, qty
	c["x_AllocatedGpuHours"], c["x_UsedGpuHours"] = decimal(p.alloc, hoursDecimals), decimal(p.used, hoursDecimals)
	c["x_Efficiency"], c["x_EnergyKwh"] = decimal(p.efficiency, efficiencyDecimals), decimal(p.energy, energyDecimals)
	if l.Type == LineCharge && p.used != nil && p.alloc != nil {
		c["x_BorrowedGpuHours"] = decimal(borrowed(p.used, p.alloc), hoursDecimals)
	}
	if p.dev != (device{}) {
		id, typ, mig := focusResource(p.dev)
		sku := focusSku(l.GPUModel, mig, profile)
		c["ResourceId"], c["ResourceType"] = neutralise(id), typ
		c["ResourceName"] = neutralise(l.GPUModel + " " + id)
		c["SkuId"] = neutralise(sku)
		c["SkuPriceId"] = neutralise(sku + "/" + c["BillingCurrency"] + "/" + c["ListUnitPrice"])
		if !mig {
			profile = ""
		}
		details, err := focusSkuPriceDetails(book, catalogue.NormaliseModel(l.GPUModel), profile)
		if err != nil {
			return err
		}
		c["SkuPriceDetails"] = details
		tags := map[string]any{focusTagPrefix + "gpu-model": l.GPUModel}
		if p.dev.gpu != "" {
			tags[focusTagPrefix+"gpu-uuid"] = p.dev.gpu
		}
		t, err := focusJSON(tags)
		if err != nil {
			return err
		}
		c["Tags"] = t
		c["ChargeDescription"] += " on " + id
	}
	focusEnergyCells(c, r, p.energyCost, p.co2eGrams)
	if resTotal != nil && resTotal.Sign() > 0 {
		details, err := focusJSON(map[string]any{
			"Elements": []map[string]any{{"AllocatedRatio": json.Number(decimal(new(big.Rat).Quo(p.charged, resTotal), ratioDecimals)),
				"UsageUnit": focusUnit, "UsageQuantity": json.Number(qty)}},
			"x_Policy": string(book.Policy), "x_Idle": string(book.Idle),
		})
		if err != nil {
			return err
		}
		c["AllocatedMethodDetails"] = details
	} else {
		delete(c, "AllocatedMethodDetails")
	}
	if l.Type == LinePlatform || l.Namespace == "" || p.dev.pod == "" {
		return nil
	}
	res := l.Namespace + "/" + p.dev.pod
	c["AllocatedResourceId"], c["AllocatedResourceName"] = neutralise(res), neutralise(res)
	c["x_WorkloadName"] = neutralise(workload.FromPod(p.dev.pod))
	tags := map[string]any{focusTagPrefix + "namespace": l.Namespace, focusTagPrefix + "sharing-mode": l.SharingMode,
		focusTagPrefix + "workload": workload.FromPod(p.dev.pod), focusTagPrefix + "pod": p.dev.pod}
	if l.Team != "" {
		tags[book.TeamLabel] = l.Team
	}
	at, err := focusJSON(tags)
	if err != nil {
		return err
	}
	c["AllocatedTags"] = at
	return nil
}
