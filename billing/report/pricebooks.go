package report

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// Price books over time (docs/report.md, "Price books over time"). A
// ledger that records price books prices each hour at the book in force
// then: the latest recorded book whose effective instant is at or before
// the hour's start; hours before the first recorded book take the first.
// A period spanning a change is split at the effective instants, each
// part built by Build with its own book, and the parts' lines put side by
// side, each naming its book. Rounding: each part is rounded as a report
// of its own (largest remainder per model, one rounding line); the
// combined file's rounding line is the sum of the parts', so its lines
// add up to its total, which is the sum of the parts' totals.

// PricedBy is a price book that priced part of a report's period.
type PricedBy struct {
	SHA256, Source string
	// EffectiveFrom is the instant recorded in the ledger; for the
	// command line's book when it is not recorded, the instant it is
	// taken to apply from (UnrecordedFrom).
	EffectiveFrom time.Time
	Recorded      bool
	// Example is the book's example field (pricebook.Book.Example).
	Example bool
	// From and To bound the part of the period this book priced.
	From, To time.Time
}

// Short is the book's SHA-256's first 12 hex digits.
func (p *PricedBy) Short() string { return ledger.ShortSHA(p.SHA256) }

// dated is a book of the schedule, in force order; body is parsed into
// book only when the book prices part of the period.
type dated struct {
	book *pricebook.Book
	body []byte
	by   PricedBy
}

// UnrecordedFrom is when a book the ledger does not record applies from,
// as a report prices it beside recorded ones: the next whole hour after
// now, and at least an hour after the last recorded book's effective
// instant (last; zero when none). It prices no hour already begun, so
// editing the book without recording it reprices nothing.
func UnrecordedFrom(now, last time.Time) time.Time {
	t := now.Truncate(time.Hour).Add(time.Hour)
	if !last.IsZero() && !t.After(last) {
		t = last.Add(time.Hour)
	}
	return t
}

// schedule is the books in force order: the ledger's recorded books, and
// book after them when it is not one of them. Nil when src records none:
// then book prices every hour, as before the ledger recorded books.
func schedule(ctx context.Context, src Source, book *pricebook.Book, now time.Time) ([]dated, error) {
	st, ok := src.(ledger.PriceBookStore)
	if !ok {
		return nil, nil
	}
	recs, err := st.PriceBooks(ctx)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, nil
	}
	out := make([]dated, 0, len(recs)+1)
	recorded := false
	for _, rec := range recs {
		by := PricedBy{SHA256: rec.SHA256, Source: rec.Source, EffectiveFrom: rec.EffectiveFrom, Recorded: true}
		d := dated{body: rec.Body, by: by}
		if rec.SHA256 == book.SHA256 {
			d.book, recorded = book, true
		}
		out = append(out, d)
	}
	if !recorded {
		last := out[len(out)-1].by.EffectiveFrom
		out = append(out, dated{book: book, by: PricedBy{SHA256: book.SHA256, Source: book.Source, EffectiveFrom: UnrecordedFrom(now, last)}})
	}
	return out, nil
}

// BuildDated is Build over a ledger that may record price books: each
// hour of [from, to) is priced at the book in force then, book (the
// command line's) only from its own recorded instant, or from
// UnrecordedFrom(now, ...) when the ledger does not record it. Without
// recorded books it is Build(ctx, src, book, from, to).
func BuildDated(ctx context.Context, src Source, book *pricebook.Book, from, to, now time.Time) (*Report, error) {
	if book == nil || book.Location == nil {
		return nil, fmt.Errorf("cannot build report: no price book")
	}
	sched, err := schedule(ctx, src, book, now)
	if err != nil {
		return nil, err
	}
	if sched == nil {
		return Build(ctx, src, book, from, to)
	}
	var parts []*Report
	for i, d := range sched {
		start, end := from, to
		if i > 0 && d.by.EffectiveFrom.After(start) {
			start = d.by.EffectiveFrom
		}
		if i+1 < len(sched) && sched[i+1].by.EffectiveFrom.Before(end) {
			end = sched[i+1].by.EffectiveFrom
		}
		if !start.Before(end) {
			continue // not in force in the period, or replaced at once
		}
		if d.book == nil {
			if d.book, err = pricebook.Parse(d.by.Source, d.body); err != nil {
				return nil, fmt.Errorf("cannot read the price book recorded in the ledger as %s, effective %s: %w", ledger.ShortSHA(d.by.SHA256), ledger.FormatTime(d.by.EffectiveFrom), err)
			}
		}
		if err := sameTerms(book, d); err != nil {
			return nil, err
		}
		rep, err := Build(ctx, src, d.book, start, end)
		if err != nil {
			return nil, fmt.Errorf("price book %s (effective %s): %w", ledger.ShortSHA(d.by.SHA256), ledger.FormatTime(d.by.EffectiveFrom), err)
		}
		by := d.by
		by.From, by.To, by.Example = rep.From, rep.To, d.book.Example
		rep.PriceBooks = []*PricedBy{&by}
		for i := range rep.Lines {
			if rep.Lines[i].Type != LineRounding {
				rep.Lines[i].PricedBy = &by
			}
		}
		parts = append(parts, rep)
	}
	if len(parts) == 1 {
		return parts[0], nil // one book in force over the whole period
	}
	var full []*Report
	for _, p := range parts {
		if !p.Empty() {
			full = append(full, p)
		}
	}
	if len(full) == 0 {
		return &Report{From: from.In(book.Location), To: to.In(book.Location), Book: book}, nil
	}
	// Parts with no data priced nothing and are not named.
	return combine(ctx, src, from.In(book.Location), to.In(book.Location), full)
}

// sameTerms refuses a book in force in a period the command line's book
// names differently: a period is billed in one currency and time zone,
// under one policy.
func sameTerms(book *pricebook.Book, d dated) error {
	field, want, got := "", "", ""
	switch b := d.book; {
	case b.Currency != book.Currency:
		field, want, got = "currency", book.Currency.Code, b.Currency.Code
	case b.Location.String() != book.Location.String():
		field, want, got = "timezone", book.Location.String(), b.Location.String()
	case b.Policy != book.Policy:
		field, want, got = "policy", string(book.Policy), string(b.Policy)
	default:
		return nil
	}
	return fmt.Errorf("cannot price the period with price book %s: the price book %s recorded in the ledger (effective %s), in force in the period, has %s %s, not %s: a period is billed in one currency and time zone, under one policy; report it with a price book of the same terms",
		book.Source, ledger.ShortSHA(d.by.SHA256), ledger.FormatTime(d.by.EffectiveFrom), field, got, want)
}

// combine puts the parts' lines side by side in one report of [from, to).
func combine(ctx context.Context, src Source, from, to time.Time, parts []*Report) (*Report, error) {
	last := parts[len(parts)-1]
	r := &Report{From: from, To: to, Book: last.Book, pieces: parts}
	var rounding int64
	ms := modelSums{models: map[string]*ModelSummary{}, payers: map[string]map[string]int64{}, mixed: map[string]bool{}}
	for _, p := range parts {
		r.PriceBooks = append(r.PriceBooks, p.PriceBooks...)
		for _, l := range p.Lines {
			if l.Type == LineRounding {
				rounding += l.Amount
				continue
			}
			r.Lines = append(r.Lines, l)
		}
		r.Total += p.Total
		for _, m := range p.Models {
			ms.add(m)
		}
		r.Energy = addEnergy(r.Energy, p.Energy)
		if r.DataFrom.IsZero() {
			r.DataFrom, r.DataStart = p.DataFrom, p.DataStart
		}
		if !p.DataTo.IsZero() {
			r.DataTo, r.DataEnd = p.DataTo, p.DataEnd
		}
	}
	// Stable: a key's lines stay in force order.
	slices.SortStableFunc(r.Lines, compareLines)
	r.Rounding = rounding
	r.Lines = append(r.Lines, Line{Type: LineRounding, Exact: new(big.Rat), Amount: rounding})
	summarise(r)
	teamEnergy(r)
	for _, name := range sortedKeys(ms.models) {
		m := ms.models[name]
		if ms.mixed[name] && m.CapacityHours.Sign() > 0 {
			m.Rate = pricebook.DerivedRate(new(big.Rat).Quo(m.Exact, m.CapacityHours))
		}
		for team, amt := range ms.payers[name] {
			m.IdleSharedBy = append(m.IdleSharedBy, Payer{team, amt})
		}
		slices.SortFunc(m.IdleSharedBy, func(a, b Payer) int {
			if a.Amount != b.Amount {
				return int(b.Amount - a.Amount)
			}
			return compareStrings(a.Team, b.Team)
		})
		r.Models = append(r.Models, *m)
	}
	var err error
	dataStart, dataEnd := r.DataBounds()
	if r.Quota, err = buildQuota(ctx, src, r.Book, from, to, dataStart, dataEnd); err != nil {
		return nil, err
	}
	if r.Findings, r.FindingsDropped, _, err = collectFindings(ctx, src, from, to); err != nil {
		return nil, err
	}
	return r, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// add adds one part's model summary: quantities and amounts add up;
// a rate that differs between parts becomes the period's mean rate
// (Exact / capacity), set once all parts are in.
// modelSums adds up the parts' model summaries; mixed marks the models
// whose rate differs between parts.
type modelSums struct {
	models map[string]*ModelSummary
	payers map[string]map[string]int64
	mixed  map[string]bool
}

func (ms modelSums) add(m ModelSummary) {
	models, payers := ms.models, ms.payers
	sum := models[m.Model]
	if sum == nil {
		c := m
		c.IdleSharedBy = nil
		for _, f := range []**big.Rat{&c.CapacityHours, &c.AllocatedHours, &c.UnallocatedHours, &c.UsedHours, &c.UnattributedHours, &c.IdleHours, &c.Exact, &c.SlotMonths} {
			if *f != nil {
				*f = new(big.Rat).Set(*f)
			}
		}
		models[m.Model] = &c
		payers[m.Model] = map[string]int64{}
	} else {
		sum.Known = sum.Known && m.Known
		sum.Rows += m.Rows
		for _, x := range []struct{ to, from *big.Rat }{{sum.CapacityHours, m.CapacityHours}, {sum.AllocatedHours, m.AllocatedHours},
			{sum.UnallocatedHours, m.UnallocatedHours}, {sum.UsedHours, m.UsedHours}, {sum.UnattributedHours, m.UnattributedHours},
			{sum.IdleHours, m.IdleHours}, {sum.Exact, m.Exact}, {sum.SlotMonths, m.SlotMonths}} {
			if x.to != nil && x.from != nil {
				x.to.Add(x.to, x.from)
			}
		}
		sum.Amount += m.Amount
		sum.PlatformAmount += m.PlatformAmount
		sum.IdleShareAmount += m.IdleShareAmount
		if !sum.Rate.Equal(m.Rate) {
			ms.mixed[m.Model] = true
		}
		if sum.SlotRate != nil && (m.SlotRate == nil || sum.SlotRate.Rat().Cmp(m.SlotRate.Rat()) != 0) {
			sum.SlotRate = nil
		}
	}
	for _, p := range m.IdleSharedBy {
		payers[m.Model][p.Team] += p.Amount
	}
}

// addEnergy adds a part's energy totals to sum.
func addEnergy(sum, e *EnergyTotals) *EnergyTotals {
	if e == nil {
		return sum
	}
	if sum == nil {
		c := *e
		c.KWh, c.PlatformKWh = ratCopy(e.KWh), ratCopy(e.PlatformKWh)
		return &c
	}
	sum.KWh, sum.PlatformKWh = ratSum(sum.KWh, e.KWh), ratSum(sum.PlatformKWh, e.PlatformKWh)
	sum.Cost += e.Cost
	sum.Co2eGrams += e.Co2eGrams
	sum.PlatformCost += e.PlatformCost
	sum.PlatformCo2eGrams += e.PlatformCo2eGrams
	sum.NodeLabel = e.NodeLabel
	sum.UnlabelledNodes = max(sum.UnlabelledNodes, e.UnlabelledNodes)
	return sum
}

func ratCopy(x *big.Rat) *big.Rat {
	if x == nil {
		return nil
	}
	return new(big.Rat).Set(x)
}

// teamEnergy adds up each team's energy figures from its lines, which
// each part worked out (energyFigures), when the book shows energy.
func teamEnergy(r *Report) {
	if !r.HasEnergy() {
		return
	}
	teams := map[string]*TeamSummary{}
	for i := range r.Teams {
		teams[r.Teams[i].Team] = &r.Teams[i]
		r.Teams[i].EnergyKWh = new(big.Rat)
	}
	for _, l := range r.Lines {
		t := teams[l.Team]
		if t == nil || l.Type == LinePlatform || l.Type == LineRounding || l.EnergyKWh == nil {
			continue
		}
		t.EnergyKWh.Add(t.EnergyKWh, l.EnergyKWh)
		t.EnergyCost += l.EnergyCost
		t.Co2eGrams += l.Co2eGrams
	}
}
