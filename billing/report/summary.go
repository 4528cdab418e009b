package report

import (
	"cmp"
	"math/big"
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/support/rational"
)

// summarise adds the per-team, per-mode and per-model views of the lines.
func summarise(r *Report) {
	// The hours are added with rational.Sum: a month by pod has tens of
	// thousands of lines a team, and Rat.Add reduces every pair.
	type hoursSum struct{ alloc, used, heldIdle, borrowed rational.Sum }
	teams := map[string]*TeamSummary{}
	teamHours := map[string]*hoursSum{}
	namespaces := map[string]map[string]bool{}
	modes := map[string]*ModeSummary{}
	modeHours := map[string]*hoursSum{}
	for i := range r.Lines {
		l := &r.Lines[i]
		switch l.Type {
		case LinePlatform:
			r.Platform += l.Amount
			continue
		case LineRounding:
			continue
		}
		t := teams[l.Team]
		if t == nil {
			t = &TeamSummary{Team: l.Team}
			teams[l.Team] = t
			teamHours[l.Team] = &hoursSum{}
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
		th := teamHours[l.Team]
		m := modes[l.SharingMode]
		if m == nil {
			m = &ModeSummary{Mode: l.SharingMode}
			modes[l.SharingMode] = m
			modeHours[l.SharingMode] = &hoursSum{}
		}
		mh := modeHours[l.SharingMode]
		m.Charge += l.Amount
		// used - allocated: held idle where negative, borrowed (Borrowed)
		// where positive. A built line's integers are added as they are,
		// without reducing each line's hours (rational.Sum.AddFrac).
		if alloc, used, _, ok := l.Micro(); ok && alloc >= 0 && used >= 0 {
			for _, h := range []*hoursSum{th, mh} {
				h.alloc.AddFrac(alloc, microPerHour)
				h.used.AddFrac(used, microPerHour)
			}
			switch {
			case used < alloc:
				th.heldIdle.AddFrac(alloc-used, microPerHour)
			case used > alloc:
				th.borrowed.AddFrac(used-alloc, microPerHour)
				mh.borrowed.AddFrac(used-alloc, microPerHour)
			}
			continue
		}
		th.alloc.Add(l.AllocatedHours)
		th.used.Add(l.UsedHours)
		diff := new(big.Rat).Sub(l.UsedHours, l.AllocatedHours)
		var borrowed *big.Rat
		switch diff.Sign() {
		case -1:
			th.heldIdle.Add(new(big.Rat).Neg(diff))
		case 1:
			borrowed = diff
		}
		th.borrowed.Add(borrowed)
		mh.alloc.Add(l.AllocatedHours)
		mh.used.Add(l.UsedHours)
		mh.borrowed.Add(borrowed)
	}
	for name, t := range teams {
		th := teamHours[name]
		t.AllocatedHours, t.UsedHours, t.HeldIdleHours, t.BorrowedHours = th.alloc.Rat(), th.used.Rat(), th.heldIdle.Rat(), th.borrowed.Rat()
		t.Namespaces = sortedKeys(namespaces[name])
		t.Efficiency = ratio(t.UsedHours, t.AllocatedHours)
		r.Teams = append(r.Teams, *t)
	}
	slices.SortFunc(r.Teams, func(a, b TeamSummary) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Team, b.Team))
	})
	for _, name := range sortedKeys(modes) {
		m, mh := modes[name], modeHours[name]
		m.AllocatedHours, m.UsedHours, m.BorrowedHours = mh.alloc.Rat(), mh.used.Rat(), mh.borrowed.Rat()
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
