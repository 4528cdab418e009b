package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// Source is what a report reads: the embedded store and ClickHouse both
// are one.
type Source interface {
	Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error)
	Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error
}

var _ Source = ledger.Store(nil)

// Build computes the chargeback for [from, to) from src's day aggregates
// in the book's time zone, and the period's findings.
func Build(ctx context.Context, src Source, book *pricebook.Book, from, to time.Time) (*Report, error) {
	if book == nil || book.Location == nil {
		return nil, errors.New("cannot build report: no price book")
	}
	if !from.Before(to) {
		return nil, fmt.Errorf("cannot build report: period start %s is not before its end %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	from, to = from.In(book.Location), to.In(book.Location)
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: book.Location, Bucket: ledger.BucketDay})
	if err != nil {
		return nil, fmt.Errorf("cannot read ledger aggregates: %w", err)
	}
	if err := checkTotals(aggs); err != nil {
		return nil, err
	}
	b := newBuilder(book)
	for _, day := range byDay(aggs) {
		if err := b.addDay(day); err != nil {
			return nil, err
		}
	}
	r := &Report{From: from, To: to, Book: book}
	r.DataFrom, r.DataTo = coverage(aggs, from, to, book.Location)
	if err := b.finish(r); err != nil {
		return nil, err
	}
	if r.Findings, r.FindingsDropped, err = collectFindings(ctx, src, from, to); err != nil {
		return nil, err
	}
	return r, nil
}

// byDay groups aggregates by their day bucket, in time order.
func byDay(aggs []ledger.Aggregate) [][]ledger.Aggregate {
	sorted := slices.Clone(aggs)
	slices.SortStableFunc(sorted, func(a, b ledger.Aggregate) int { return a.BucketStart.Compare(b.BucketStart) })
	var out [][]ledger.Aggregate
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].BucketStart.Equal(sorted[i].BucketStart) {
			j++
		}
		out = append(out, sorted[i:j])
		i = j
	}
	return out
}

// lineKey identifies a line; platform lines have no team or namespace.
type lineKey struct{ team, namespace, model, mode string }

// share accumulates a team's idle shares exactly.
type share struct{ us, mj *big.Rat }

// modelTotals are one model's partitions over the period, in micro-units.
type modelTotals struct {
	rows                     int64
	capacity                 int64 // the policy's partition
	alloc, unalloc           int64
	used, unattributed, idle int64
}

type builder struct {
	book     *pricebook.Book
	charge   map[lineKey]*quantity
	shares   map[lineKey]*share
	platform map[lineKey]*quantity
	models   map[string]*modelTotals
}

func newBuilder(book *pricebook.Book) *builder {
	return &builder{book: book, charge: map[lineKey]*quantity{}, shares: map[lineKey]*share{},
		platform: map[lineKey]*quantity{}, models: map[string]*modelTotals{}}
}

// charged is the quantity the policy charges, in GPU-micro-seconds.
func (b *builder) charged(q quantity) int64 {
	if b.book.Policy == pricebook.PolicyUsage {
		return q.used
	}
	return q.alloc
}

// dayModel is one model's groups on one day.
type dayModel struct {
	containers map[lineKey]quantity
	platform   map[lineKey]quantity
}

// addDay adds one day's aggregates. Capacity nobody is charged for is
// shared (idle: shared) in proportion to that day's charged hours on the
// same model, so a month is exactly the sum of its days.
func (b *builder) addDay(day []ledger.Aggregate) error {
	models := map[string]*dayModel{}
	for _, a := range day {
		q, err := quantify(a)
		if err != nil {
			return err
		}
		dm := models[a.GPUModel]
		if dm == nil {
			dm = &dayModel{containers: map[lineKey]quantity{}, platform: map[lineKey]quantity{}}
			models[a.GPUModel] = dm
		}
		mt := b.model(a.GPUModel)
		mt.rows += a.Rows
		switch a.Kind {
		case attribution.KindContainer:
			k := lineKey{a.Team, a.Namespace, a.GPUModel, a.Mode}
			dm.containers[k] = plus(dm.containers[k], q)
			mt.alloc += q.alloc
			mt.used += q.used
		case attribution.KindUnallocated, attribution.KindUnattributed, attribution.KindIdle:
			k := lineKey{model: a.GPUModel, mode: a.Mode}
			dm.platform[k] = plus(dm.platform[k], q)
			mt.unalloc += q.alloc
			if a.Kind == attribution.KindIdle {
				mt.idle += q.used
			} else {
				mt.unattributed += q.used
			}
		default:
			return fmt.Errorf("ledger aggregate for model %q on %s has unknown row kind %q", a.GPUModel, a.BucketStart.Format("2006-01-02"), a.Kind)
		}
	}
	for model, dm := range models {
		b.addDayModel(model, dm)
	}
	return nil
}

func (b *builder) addDayModel(model string, dm *dayModel) {
	var weight, pool, poolEnergy int64
	for k, q := range dm.containers {
		weight += b.charged(q)
		b.add(b.charge, k, q)
	}
	for _, q := range dm.platform {
		pool += b.charged(q)
		poolEnergy += q.energy
	}
	b.models[model].capacity += weight + pool
	if b.book.Idle != pricebook.IdleShared || weight <= 0 {
		// Nobody to share with on this model today: the platform pays.
		for k, q := range dm.platform {
			b.add(b.platform, k, q)
		}
		return
	}
	for k, q := range dm.containers {
		w := b.charged(q)
		if w == 0 {
			continue
		}
		s := b.shares[k]
		if s == nil {
			s = &share{us: new(big.Rat), mj: new(big.Rat)}
			b.shares[k] = s
		}
		s.us.Add(s.us, big.NewRat(0, 1).SetFrac(mul(pool, w), big.NewInt(weight)))
		s.mj.Add(s.mj, big.NewRat(0, 1).SetFrac(mul(poolEnergy, w), big.NewInt(weight)))
	}
}

func mul(a, b int64) *big.Int { return new(big.Int).Mul(big.NewInt(a), big.NewInt(b)) }

func plus(a, b quantity) quantity {
	a.add(b)
	return a
}

func (b *builder) add(m map[lineKey]*quantity, k lineKey, q quantity) {
	if m[k] == nil {
		m[k] = &quantity{}
	}
	m[k].add(q)
}

func (b *builder) model(name string) *modelTotals {
	mt := b.models[name]
	if mt == nil {
		mt = &modelTotals{}
		b.models[name] = mt
	}
	return mt
}

// finish turns the sums into lines, rounds them and adds the summaries.
func (b *builder) finish(r *Report) error {
	if len(b.models) == 0 {
		return nil
	}
	r.Lines = b.lines()
	if err := b.round(r); err != nil {
		return err
	}
	summarise(r)
	return nil
}

func (b *builder) rate(model string) *pricebook.Rate {
	rt, _ := b.book.RateFor(model)
	return &rt
}

func (b *builder) lines() []Line {
	var out []Line
	for k, q := range b.charge {
		if q.zero() {
			continue
		}
		l := b.line(k, LineCharge, hours(q.alloc), hours(q.used), kwh(q.energy))
		if q.alloc != 0 {
			l.Efficiency = ratio(l.UsedHours, l.AllocatedHours)
		}
		out = append(out, l)
	}
	for k, s := range b.shares {
		if s.us.Sign() == 0 && s.mj.Sign() == 0 {
			continue
		}
		h := new(big.Rat).Quo(s.us, big.NewRat(microPerHour, 1))
		alloc, used := h, new(big.Rat)
		if b.book.Policy == pricebook.PolicyUsage {
			alloc, used = used, alloc
		}
		out = append(out, b.line(k, LineIdleShare, alloc, used, new(big.Rat).Quo(s.mj, big.NewRat(milliPerKWh, 1))))
	}
	for k, q := range b.platform {
		if q.zero() {
			continue
		}
		out = append(out, b.line(k, LinePlatform, hours(q.alloc), hours(q.used), kwh(q.energy)))
	}
	slices.SortFunc(out, compareLines)
	return out
}

func (b *builder) line(k lineKey, t LineType, alloc, used, energy *big.Rat) Line {
	l := Line{Team: k.team, Namespace: k.namespace, GPUModel: k.model, SharingMode: k.mode, Type: t,
		AllocatedHours: alloc, UsedHours: used, EnergyKWh: energy, Rate: b.rate(k.model)}
	l.Exact = new(big.Rat).Mul(l.ChargedHours(b.book.Policy), l.Rate.Rat())
	return l
}

var typeOrder = map[LineType]int{LineCharge: 0, LineIdleShare: 1, LinePlatform: 2, LineRounding: 3}

// compareLines orders team lines by team, then platform lines, then the
// rounding line.
func compareLines(x, y Line) int {
	section := func(l Line) int {
		switch l.Type {
		case LinePlatform:
			return 1
		case LineRounding:
			return 2
		}
		return 0
	}
	return cmp.Or(cmp.Compare(section(x), section(y)), strings.Compare(x.Team, y.Team),
		strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.GPUModel, y.GPUModel),
		strings.Compare(x.SharingMode, y.SharingMode), cmp.Compare(typeOrder[x.Type], typeOrder[y.Type]))
}
