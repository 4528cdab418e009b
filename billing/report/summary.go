package report

import (
	"cmp"
	"math/big"
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// summarise adds the per-team, per-mode and per-model views of the lines.
func summarise(r *Report) {
	teams := map[string]*TeamSummary{}
	namespaces := map[string]map[string]bool{}
	modes := map[string]*ModeSummary{}
	for _, l := range r.Lines {
		switch l.Type {
		case LinePlatform:
			r.Platform += l.Amount
			continue
		case LineRounding:
			continue
		}
		t := teams[l.Team]
		if t == nil {
			t = &TeamSummary{Team: l.Team, AllocatedHours: new(big.Rat), UsedHours: new(big.Rat), HeldIdleHours: new(big.Rat), BorrowedHours: new(big.Rat)}
			teams[l.Team] = t
			namespaces[l.Team] = map[string]bool{}
		}
		t.Total += l.Amount
		if l.Type == LineQuota || l.Type == LineAboveQuota {
			// Policy quota: the team's held and used hours are its quota
			// row's (finishQuota), not these lines'.
			t.Charge += l.Amount
			continue
		}
		namespaces[l.Team][l.Namespace] = true
		if l.Type == LineIdleShare {
			t.IdleShare += l.Amount
			continue
		}
		t.Charge += l.Amount
		t.AllocatedHours.Add(t.AllocatedHours, l.AllocatedHours)
		t.UsedHours.Add(t.UsedHours, l.UsedHours)
		if idle := new(big.Rat).Sub(l.AllocatedHours, l.UsedHours); idle.Sign() > 0 {
			t.HeldIdleHours.Add(t.HeldIdleHours, idle)
		}
		t.BorrowedHours.Add(t.BorrowedHours, l.Borrowed())
		m := modes[l.SharingMode]
		if m == nil {
			m = &ModeSummary{Mode: l.SharingMode, AllocatedHours: new(big.Rat), UsedHours: new(big.Rat), BorrowedHours: new(big.Rat)}
			modes[l.SharingMode] = m
		}
		m.AllocatedHours.Add(m.AllocatedHours, l.AllocatedHours)
		m.UsedHours.Add(m.UsedHours, l.UsedHours)
		m.BorrowedHours.Add(m.BorrowedHours, l.Borrowed())
		m.Charge += l.Amount
	}
	for name, t := range teams {
		t.Namespaces = sortedKeys(namespaces[name])
		t.Efficiency = ratio(t.UsedHours, t.AllocatedHours)
		r.Teams = append(r.Teams, *t)
	}
	slices.SortFunc(r.Teams, func(a, b TeamSummary) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Team, b.Team))
	})
	for _, name := range sortedKeys(modes) {
		m := modes[name]
		m.Efficiency = ratio(m.UsedHours, m.AllocatedHours)
		r.Modes = append(r.Modes, *m)
	}
}

// modelSummaries describes each model's capacity and who paid for the part
// no team was charged for.
func (b *builder) modelSummaries(r *Report, targets map[string]int64, exact map[string]*big.Rat) {
	for _, name := range sortedKeys(b.models) {
		mt := b.models[name]
		rate, known := b.book.RateFor(name)
		flat := b.book.Policy == pricebook.PolicyFlat
		if flat {
			// Every model seen has a slot price (checkModel); the rate
			// shown is what that comes to per GPU-hour.
			known, rate = true, b.derivedRate(exact[name], hours(mt.capacity), name)
		}
		ms := ModelSummary{Model: name, Known: known, Rate: rate, Rows: mt.rows,
			CapacityHours: hours(mt.capacity), AllocatedHours: hours(mt.alloc), UnallocatedHours: hours(mt.unalloc),
			UsedHours: hours(mt.used), UnattributedHours: hours(mt.unattributed), IdleHours: hours(mt.idle),
			Exact: exact[name], Amount: targets[name]}
		if flat {
			slot := b.price(name)
			ms.SlotMonths, ms.SlotRate = new(big.Rat).Set(mt.priced), &slot
		}
		payers := map[string]int64{}
		for _, l := range r.Lines {
			if l.GPUModel != name {
				continue
			}
			switch l.Type {
			case LinePlatform:
				ms.PlatformAmount += l.Amount
			case LineIdleShare:
				ms.IdleShareAmount += l.Amount
				payers[l.Team] += l.Amount
			}
		}
		for team, amt := range payers {
			ms.IdleSharedBy = append(ms.IdleSharedBy, Payer{Team: team, Amount: amt})
		}
		slices.SortFunc(ms.IdleSharedBy, func(a, b Payer) int {
			return cmp.Or(cmp.Compare(b.Amount, a.Amount), strings.Compare(a.Team, b.Team))
		})
		r.Models = append(r.Models, ms)
	}
}
