package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/support/rational"
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
	r := &Report{From: from, To: to, Book: book}
	r.DataFrom, r.DataTo = coverage(aggs, from, to, book.Location)
	if book.Energy.PerNode() {
		// Pricing reads the source too (node labels, carbon): one after
		// the other.
		if err := b.priceByNode(ctx, src, aggs, from, to); err != nil {
			return nil, err
		}
		if err := readRest(ctx, src, r); err != nil {
			return nil, err
		}
		if err := b.finish(r); err != nil {
			return nil, err
		}
		return r, nil
	}
	// The rest of the reads (the data's bounds, findings, coverage, quota)
	// need only the aggregates' days, and pricing needs nothing from the
	// source: the reads run while the lines are priced (a month by pod
	// prices for about a second), the source used by one goroutine at a
	// time. Errors come in the order the steps had one after the other:
	// pricing's, the reads', the lines'.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// What the reads come to is received as a function that returns
	// their error or, where they panicked, panics again here: a defect is
	// the caller's (serve recovers its computations' panics), never the
	// whole process's.
	read := make(chan func() error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				stack := string(debug.Stack())
				read <- func() error { panic(fmt.Sprintf("%v\n%s", p, stack)) }
			}
		}()
		err := readRest(rctx, src, r)
		read <- func() error { return err }
	}()
	for _, day := range byDay(aggs) {
		if err := b.addDay(day); err != nil {
			cancel()
			_ = (<-read)()
			return nil, err
		}
	}
	var ferr error
	quota := book.Policy == pricebook.PolicyQuota
	if !quota {
		ferr = b.finish(r) // reads none of what readRest sets
	}
	if err := (<-read)(); err != nil {
		return nil, err
	}
	if quota {
		ferr = b.finish(r) // quota's lines are the quota section's
	}
	if ferr != nil {
		return nil, ferr
	}
	return r, nil
}

// priceByNode adds the days of a book with per-node energy figures: the
// share fractions and the nodes' labels and carbon come with the lines.
func (b *builder) priceByNode(ctx context.Context, src Source, aggs []ledger.Aggregate, from, to time.Time) (err error) {
	b.fractions = map[dayModelKey]map[lineKey]*big.Rat{}
	if b.labels, err = nodeLabels(ctx, src, b.book, to); err != nil {
		return err
	}
	for _, day := range byDay(aggs) {
		if err := b.addDay(day); err != nil {
			return err
		}
	}
	b.carbon, err = b.nodeCarbon(ctx, src, from, to)
	return err
}

// readRest reads what the report says beside its lines into r: the
// data's first and last instants, the findings, the coverage gaps and
// the quota section. It sets only those fields.
func readRest(ctx context.Context, src Source, r *Report) (err error) {
	from, to, loc := r.From, r.To, r.Book.Location
	if r.DataStart, r.DataEnd, err = dataBounds(ctx, src, r.DataFrom, r.DataTo, from, to, loc); err != nil {
		return err
	}
	dataStart, dataEnd := r.DataBounds()
	var leaves map[string][]time.Time
	if r.Findings, r.FindingsDropped, leaves, err = collectFindings(ctx, src, from, to); err != nil {
		return err
	}
	if r.Coverage, err = buildCoverage(ctx, src, from, to, dataEnd, loc, leaves); err != nil {
		return err
	}
	r.Quota, err = buildQuota(ctx, src, r.Book, from, to, dataStart, dataEnd)
	return err
}

// byDay groups aggregates by their day bucket, in time order: parts of
// aggs itself when they are in that order already (a ledger's answers
// are: a month by pod is some 36,000 large aggregates, not copied), of a
// sorted copy otherwise.
func byDay(aggs []ledger.Aggregate) [][]ledger.Aggregate {
	sorted := aggs
	for i := 1; i < len(aggs); i++ {
		if aggs[i].BucketStart.Before(aggs[i-1].BucketStart) {
			sorted = slices.Clone(aggs)
			slices.SortStableFunc(sorted, func(a, b ledger.Aggregate) int { return a.BucketStart.Compare(b.BucketStart) })
			break
		}
	}
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

// acc is one line's sums: the ledger's columns as integers, and what the
// policy charges as exact rationals.
type acc struct {
	q quantity
	// charged is the GPU-micro-seconds the policy charges (a column, or
	// the memory-weighted blend); priced is the same in the unit the book
	// prices (hours, or slot-months under flat), day by day.
	charged, priced *big.Rat
	// memory is the memory share billed (GPU-micro-seconds after the
	// clamp), memory-weighted charge lines only.
	memory *big.Rat
	// share is a charge line key's idle share (nil without one): kept
	// with it, so that neither a day nor lines() looks it up again.
	share *share
}

func newAcc() *acc { return &acc{charged: new(big.Rat), priced: new(big.Rat), memory: new(big.Rat)} }

// share accumulates a team's idle shares exactly: charged micro-seconds,
// priced units and milli-joules.
type share struct{ us, priced, mj *big.Rat }

// modelTotals are one model's partitions over the period, in micro-units.
type modelTotals struct {
	rows                     int64
	capacity                 int64    // the policy's partition
	priced                   *big.Rat // capacity in the book's price unit
	alloc, unalloc           int64
	used, unattributed, idle int64
}

type builder struct {
	book     *pricebook.Book
	charge   map[lineKey]*acc // with their idle shares (acc.share)
	platform map[lineKey]*acc
	models   map[string]*modelTotals
	// prices are each model's price, found once before the lines are
	// priced (lines()) and only read while they are, by every part.
	prices map[string]*modelPrice
	// memSecs bounds the memory shares' sum like checkTotals the columns.
	memSecs float64
	// fractions are the idle-share fractions of each day and model the
	// pool was shared on, and carbon each line's CO2e from its nodes'
	// energy (energy.go); both only for books with per-node intensities.
	fractions map[dayModelKey]map[lineKey]*big.Rat
	carbon    map[devLineKey]*big.Rat
	// labels are the nodes' values of the book's carbon node label at
	// the period's end (nil without one), and unlabelled the nodes with
	// energy that had none recorded and no figure of their own.
	labels     map[string]string
	unlabelled map[string]bool
}

func newBuilder(book *pricebook.Book) *builder {
	return &builder{book: book, charge: map[lineKey]*acc{}, platform: map[lineKey]*acc{}, models: map[string]*modelTotals{}}
}

// column is the ledger column the policy's partition adds up, in
// GPU-micro-seconds: used under usage (memory-weighted too: its capacity
// is the used partition's), allocated under allocation and flat.
func (b *builder) column(q quantity) int64 {
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
		if err := b.checkModel(a.GPUModel); err != nil {
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
			if q.mem, err = b.memoryShare(a); err != nil {
				return err
			}
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
	for _, model := range sortedKeys(models) {
		b.addDayModel(model, day[0].BucketStart, models[model])
	}
	return nil
}

func (b *builder) addDayModel(model string, day time.Time, dm *dayModel) {
	if !b.book.MemoryWeighted() {
		b.addDayModelInts(model, day, dm)
		return
	}
	unit := b.unit(day)
	// Only flat prices a unit that changes with the day (slot-months);
	// every other policy prices hours, so a line's priced units are its
	// charged micro-seconds over an hour's, found once in lines().
	flat := b.book.Policy == pricebook.PolicyFlat
	charged, scale := b.chargedOf(dm)
	// The charged values are integers but under memory weighting: added
	// as such (rational.Sum), not reduced pair by pair.
	var weights rational.Sum
	var capacity, poolEnergy int64
	type held struct {
		k lineKey
		a *acc
		c *big.Rat
	}
	hs := make([]held, 0, len(dm.containers))
	for k, q := range dm.containers {
		c := charged[k]
		weights.Add(c)
		capacity += b.column(q)
		a := b.acc(b.charge, k)
		hs = append(hs, held{k, a, c})
		a.q.add(q)
		addTo(a.charged, c)
		if flat {
			addTo(a.priced, new(big.Rat).Mul(c, unit))
		}
		if scale != nil {
			addTo(a.memory, new(big.Rat).Mul(big.NewRat(q.mem, 1), scale))
		}
	}
	for _, q := range dm.platform {
		capacity += b.column(q)
		poolEnergy += q.energy
	}
	weight := weights.Rat()
	b.addCapacity(model, capacity, unit)
	pool := new(big.Rat).Sub(big.NewRat(capacity, 1), weight)
	if b.book.Idle != pricebook.IdleShared || weight.Sign() <= 0 {
		b.platformPays(dm, scale, unit)
		return
	}
	for _, h := range hs {
		if h.c.Sign() == 0 {
			continue
		}
		if b.fractions != nil {
			b.recordShare(day, model, h.k, new(big.Rat).Quo(h.c, weight))
		}
		b.addShare(h.a, poolShare(pool, h.c, weight), poolShare(big.NewRat(poolEnergy, 1), h.c, weight), unit)
	}
}

// addDayModelInts is addDayModel for every book but a memory-weighted
// one: what a line is charged is a ledger column, an integer, so the
// day's sums are int64 (a day of one model is at most some 10^16 GPU-µs)
// and a line's charged micro-seconds are its column itself (lines() reads
// them from its quantities), not a second sum kept beside them.
func (b *builder) addDayModelInts(model string, day time.Time, dm *dayModel) {
	unit := b.unit(day)
	flat := b.book.Policy == pricebook.PolicyFlat
	var weight, capacity, poolEnergy int64
	// Each key's sums, kept with it for the shares below: one map lookup
	// per key a day (a month by pod has some 36,000 key-days).
	type held struct {
		k lineKey
		a *acc
		c int64
	}
	hs := make([]held, 0, len(dm.containers))
	for k, q := range dm.containers {
		c := b.column(q)
		weight += c
		a := b.acc(b.charge, k)
		hs = append(hs, held{k, a, c})
		a.q.add(q)
		if flat {
			addTo(a.priced, new(big.Rat).Mul(big.NewRat(c, 1), unit))
		}
	}
	capacity = weight
	for _, q := range dm.platform {
		capacity += b.column(q)
		poolEnergy += q.energy
	}
	b.addCapacity(model, capacity, unit)
	if b.book.Idle != pricebook.IdleShared || weight <= 0 {
		b.platformPays(dm, nil, unit)
		return
	}
	pool := capacity - weight // the platform lines' column
	for _, h := range hs {
		if h.c == 0 {
			continue
		}
		if b.fractions != nil {
			b.recordShare(day, model, h.k, big.NewRat(h.c, weight))
		}
		b.addShare(h.a, intShare(pool, h.c, weight), intShare(poolEnergy, h.c, weight), unit)
	}
}

// addCapacity adds a day's capacity of a model, in micro-seconds and in
// the book's price unit.
func (b *builder) addCapacity(model string, capacity int64, unit *big.Rat) {
	mt := b.models[model]
	mt.capacity += capacity
	mt.priced.Add(mt.priced, new(big.Rat).Mul(big.NewRat(capacity, 1), unit))
}

// platformPays: nobody to share with on this model today, so the
// platform's lines carry what they charge.
func (b *builder) platformPays(dm *dayModel, scale, unit *big.Rat) {
	flat := b.book.Policy == pricebook.PolicyFlat
	for k, c := range b.platformCharged(dm, scale) {
		a := b.acc(b.platform, k)
		a.q.add(dm.platform[k])
		addTo(a.charged, c)
		if flat {
			addTo(a.priced, new(big.Rat).Mul(c, unit))
		}
	}
}

// addShare adds a day's idle share to a charge line key's sums a: us
// charged micro-seconds (x unit priced under flat) and mj milli-joules.
func (b *builder) addShare(a *acc, us, mj, unit *big.Rat) {
	s := a.share
	if s == nil {
		s = &share{us: new(big.Rat), priced: new(big.Rat), mj: new(big.Rat)}
		a.share = s
	}
	addTo(s.us, us)
	if b.book.Policy == pricebook.PolicyFlat {
		addTo(s.priced, us.Mul(us, unit)) // us is the caller's, spent
	}
	addTo(s.mj, mj)
}

// intShare is x x w / total (total > 0) of integers, exactly.
func intShare(x, w, total int64) *big.Rat { return rational.RatioOfProduct(x, w, uint64(total)) }

// poolShare is x x w / total, exactly: of integers (every book but a
// memory-weighted one) with one reduction, not two (the fraction, then
// the product); a month by pod shares out tens of thousands of these.
func poolShare(x, w, total *big.Rat) *big.Rat {
	if x.IsInt() && w.IsInt() && total.IsInt() {
		return new(big.Rat).SetFrac(new(big.Int).Mul(x.Num(), w.Num()), total.Num())
	}
	return new(big.Rat).Mul(x, new(big.Rat).Quo(w, total))
}

// addTo adds x to dst; a first term is copied, not added: Add multiplies
// and reduces even when dst is zero, and a line of one day (a pod that
// lived a day) only ever gets its first term.
func addTo(dst, x *big.Rat) {
	if dst.Sign() == 0 {
		dst.Set(x)
		return
	}
	dst.Add(dst, x)
}

func (b *builder) acc(m map[lineKey]*acc, k lineKey) *acc {
	a := m[k]
	if a == nil {
		a = newAcc()
		m[k] = a
	}
	return a
}

func plus(a, b quantity) quantity {
	a.add(b)
	return a
}

func (b *builder) model(name string) *modelTotals {
	mt := b.models[name]
	if mt == nil {
		mt = &modelTotals{priced: new(big.Rat)}
		b.models[name] = mt
	}
	return mt
}

// finish turns the sums into lines, rounds them and adds the summaries.
func (b *builder) finish(r *Report) error {
	if b.book.Policy == pricebook.PolicyQuota && r.Quota != nil && len(r.Quota.Rows) > 0 {
		// Quota is owed whether or not the ledger saw a GPU.
		return b.finishQuota(r)
	}
	if len(b.models) == 0 {
		return nil
	}
	r.Lines = b.lines()
	if err := b.round(r); err != nil {
		return err
	}
	summarise(r)
	if err := energyFigures(r, b.carbon); err != nil {
		return err
	}
	if r.Energy != nil && b.book.Energy.CarbonIntensityByNodeLabel != nil {
		r.Energy.NodeLabel = b.book.Energy.CarbonIntensityByNodeLabel.Label
		r.Energy.UnlabelledNodes = len(b.unlabelled)
	}
	return nil
}

// lines are the report's charge, idle share and platform lines, in
// compareLines' order.
func (b *builder) lines() []Line {
	// Sized once: a Line is large, and a month by pod has 70,000 of them.
	out := make([]Line, 0, 2*len(b.charge)+len(b.platform)+1)
	// The keys are sorted, not the lines: a team line key has a charge
	// line, an idle share line or both, in that order (compareLines), and
	// the platform's lines follow the teams'. Sorting 70,000 lines of a
	// month by pod moved large values and compared each key twice. A key
	// with an idle share always has charge sums (addShare), which hold it.
	team := make([]teamKey, 0, len(b.charge))
	for k, a := range b.charge {
		team = append(team, teamKey{k, a, a.share})
	}
	slices.SortFunc(team, func(x, y teamKey) int { return compareKeys(x.k, y.k) })
	b.prices = make(map[string]*modelPrice, len(b.models))
	for m := range b.models {
		p := b.price(m)
		b.prices[m] = &modelPrice{p, p.Rat()}
	}
	// The team lines of a large report are priced in as many parts as
	// there are processors (a line's numbers depend on its key alone),
	// each part writing its lines in place, its keys' lines counted first.
	parts := min(runtime.GOMAXPROCS(0), len(team)/minKeysPerPart+1)
	start := make([]int, parts+1)
	for i := range parts {
		start[i+1] = start[i]
		for _, t := range team[len(team)*i/parts : len(team)*(i+1)/parts] {
			start[i+1] += t.lines()
		}
	}
	out = out[:start[parts]]
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() { b.teamLines(out[start[i]:start[i+1]], team[len(team)*i/parts:len(team)*(i+1)/parts]) })
	}
	wg.Wait()
	keys := make([]lineKey, 0, len(b.platform))
	for k := range b.platform {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		a := b.platform[k]
		if a.q.zero() && a.charged.Sign() == 0 {
			continue
		}
		alloc, used := hours(a.q.alloc), hours(a.q.used)
		l := b.line(k, LinePlatform, alloc, used, kwh(a.q.energy), b.chargedHours(a.charged, alloc, used), b.flatPriced(a.priced))
		l.micro, l.hasMicro = a.q, true
		out = append(out, l)
	}
	return out
}

// modelPrice is a model's price, and the same as a Rat only ever read.
type modelPrice struct {
	rate pricebook.Rate
	rat  *big.Rat
}

// minKeysPerPart: a report with fewer team line keys than twice this
// prices them in one goroutine (a variable: a test prices small reports
// in parts).
var minKeysPerPart = 4096

// teamKey is a team line key with its sums: a (charge) and s (its idle
// share, nil without one).
type teamKey struct {
	k lineKey
	a *acc
	s *share
}

// hasCharge and hasShare: the key has a charge line (something held,
// used or charged), an idle share line (a share of time or energy);
// lines counts them.
func (t teamKey) hasCharge() bool { return !(t.a.q.zero() && t.a.charged.Sign() == 0) }

func (t teamKey) hasShare() bool { return t.s != nil && !(t.s.us.Sign() == 0 && t.s.mj.Sign() == 0) }

func (t teamKey) lines() int {
	n := 0
	if t.hasCharge() {
		n++
	}
	if t.hasShare() {
		n++
	}
	return n
}

// teamLines writes the charge and idle share lines of keys into dst, in
// their order (a key's charge line, then its idle share line): dst holds
// exactly as many as their lines count.
func (b *builder) teamLines(dst []Line, keys []teamKey) {
	n := 0
	for _, t := range keys {
		k := t.k
		if t.hasCharge() {
			a := t.a
			alloc, used := hours(a.q.alloc), hours(a.q.used)
			l := b.line(k, LineCharge, alloc, used, kwh(a.q.energy), b.chargedHours(a.charged, alloc, used), b.flatPriced(a.priced))
			if a.q.alloc > 0 {
				l.Efficiency = rational.Ratio(a.q.used, uint64(a.q.alloc)) // used / allocated, from the integers
			} else if a.q.alloc != 0 {
				l.Efficiency = big.NewRat(a.q.used, a.q.alloc)
			}
			if b.book.MemoryWeighted() {
				l.MemoryHours = new(big.Rat).Quo(a.memory, big.NewRat(microPerHour, 1))
			}
			l.micro, l.hasMicro = a.q, true
			dst[n] = l
			n++
		}
		if t.hasShare() {
			s := t.s
			h := rational.Mul(s.us, perMicroHour)
			alloc, used := h, new(big.Rat)
			if b.book.Policy == pricebook.PolicyUsage {
				alloc, used = used, alloc
			}
			dst[n] = b.line(k, LineIdleShare, alloc, used, rational.Mul(s.mj, perMilliKWh), h, b.flatPriced(s.priced))
			n++
		}
	}
}

// perMicroHour and perMilliKWh turn micro-seconds into hours and
// milli-joules into kWh by a multiplication; shared by the parts that
// price lines, and only ever read.
var perMicroHour, perMilliKWh = big.NewRat(1, microPerHour), big.NewRat(1, milliPerKWh)

// compareKeys orders line keys as compareLines orders their lines.
func compareKeys(x, y lineKey) int {
	if c := strings.Compare(x.team, y.team); c != 0 {
		return c
	}
	if c := strings.Compare(x.namespace, y.namespace); c != 0 {
		return c
	}
	if c := strings.Compare(x.model, y.model); c != 0 {
		return c
	}
	return strings.Compare(x.mode, y.mode)
}

// chargedHours is the GPU-hours a charge or platform line pays for, from
// its charged micro-seconds: its allocated or used hours (the same value,
// the same pointer: a line's numbers are never changed in place) unless
// memory weighting blends them.
func (b *builder) chargedHours(chargedUs, alloc, used *big.Rat) *big.Rat {
	switch {
	case b.book.MemoryWeighted():
		return new(big.Rat).Quo(chargedUs, big.NewRat(microPerHour, 1))
	case b.book.Policy == pricebook.PolicyUsage:
		return used
	}
	return alloc
}

// flatPriced is a line's priced units as added day by day under flat
// (slot-months), nil under every other policy, which prices the charged
// hours (addDayModel).
func (b *builder) flatPriced(priced *big.Rat) *big.Rat {
	if b.book.Policy == pricebook.PolicyFlat {
		return priced
	}
	return nil
}

// line makes a line whose amount is priced units x the book's price for
// the model: the one money path of every policy. Charged is the hours it
// pays for; priced is its slot-months under flat, nil otherwise: its
// charged hours.
func (b *builder) line(k lineKey, t LineType, alloc, used, energy, charged, priced *big.Rat) Line {
	l := Line{Team: k.team, Namespace: k.namespace, GPUModel: k.model, SharingMode: k.mode, Type: t,
		AllocatedHours: alloc, UsedHours: used, EnergyKWh: energy, Charged: charged}
	if priced == nil {
		priced = l.Charged
	}
	// Every line is made in lines(), which finds each model's price first.
	mp := b.prices[k.model]
	l.Exact = rational.Mul(priced, mp.rat)
	// A Line's Rate is never changed in place: its lines share it.
	l.Rate = &mp.rate
	if b.book.Policy == pricebook.PolicyFlat {
		l.SlotMonths = new(big.Rat).Set(priced)
		l.SlotRate = &mp.rate
		rt := b.derivedRate(l.Exact, l.Charged, k.model)
		l.Rate = &rt
	}
	return l
}

var typeOrder = map[LineType]int{LineCharge: 0, LineQuota: 0, LineAboveQuota: 1, LineIdleShare: 1, LinePlatform: 2, LineRounding: 3}

// compareLines orders team lines by team, then platform lines, then the
// rounding line.
func compareLines(x, y Line) int { return compareLinePtrs(&x, &y) }

// compareLinePtrs is compareLines without copying the lines, each field
// compared only when the ones before tie.
func compareLinePtrs(x, y *Line) int {
	section := func(l *Line) int {
		switch l.Type {
		case LinePlatform:
			return 1
		case LineRounding:
			return 2
		}
		return 0
	}
	if c := cmp.Compare(section(x), section(y)); c != 0 {
		return c
	}
	for _, f := range [...][2]string{{x.Team, y.Team}, {x.Namespace, y.Namespace}, {x.GPUModel, y.GPUModel}, {x.SharingMode, y.SharingMode}} {
		if c := strings.Compare(f[0], f[1]); c != 0 {
			return c
		}
	}
	return cmp.Compare(typeOrder[x.Type], typeOrder[y.Type])
}
