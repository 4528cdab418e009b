package allocation

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/support/rational"
)

// MaxEntries bounds the entries of one answer, all sets together: a
// grouping finer than that (pods by the hour over a month) is refused,
// naming the parameters to narrow.
const MaxEntries = 200_000

// maxEntries is MaxEntries, a variable so that a test can reach it.
var maxEntries = MaxEntries

// stepWorkers is how many steps' reports are built at once: as many as
// there are processors (a variable: a test builds them one at a time).
var stepWorkers = func() int { return runtime.GOMAXPROCS(0) }

// Result is the answer to a query. Every number is a decimal text
// (json.Number): money in the currency's minor unit, as the report writes
// it.
type Result struct {
	Window    Window   `json:"window"`
	Currency  string   `json:"currency"`
	Policy    string   `json:"policy"`
	Idle      string   `json:"idle"`
	Aggregate []string `json:"aggregate"`
	Filter    string   `json:"filter,omitempty"`
	Step      string   `json:"step,omitempty"`
	// Source is the ledger read that answered (SourceFor).
	Source string `json:"source"`
	// Total is the window's money, the report's total for the window.
	Total json.Number `json:"total"`
	// Sets are the entries, one set per step (one set without a step).
	Sets []Set `json:"sets"`
}

// Window is the range asked and what the ledger covers of it.
type Window struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	Timezone string `json:"timezone"`
	// DataStart and DataEnd: the start of the first ledger row and the end
	// of the last in the window (empty when it has none).
	DataStart string `json:"data_start,omitempty"`
	DataEnd   string `json:"data_end,omitempty"`
	// Partial: the data covers less than the window (it has not ended,
	// data starts late or stops early, or GPUs have gaps).
	Partial     bool   `json:"partial"`
	PartialNote string `json:"partial_note,omitempty"`
}

// Set is one step's entries (the whole window's without a step).
type Set struct {
	Start string `json:"start"`
	End   string `json:"end"`
	// Total is the step's money: the report over the step alone.
	Total   json.Number `json:"total"`
	Entries []Entry     `json:"entries"`
}

// Entry is one group: its fields' values and what it held, used and pays.
type Entry struct {
	// Name is the values of the grouping's fields joined by "/".
	Name string            `json:"name"`
	Keys map[string]string `json:"keys"`
	// HeldHours and UsedHours are its containers' allocated and used
	// GPU-hours; IdleHours the held hours they left unused (per line,
	// never negative), or, for the platform, the capacity it pays for.
	HeldHours  json.Number  `json:"held_gpu_hours"`
	UsedHours  json.Number  `json:"used_gpu_hours"`
	IdleHours  json.Number  `json:"idle_gpu_hours"`
	Efficiency *json.Number `json:"efficiency"`
	// IdleShareHours: the capacity nobody was charged for that this group
	// pays a share of (idle: shared).
	IdleShareHours json.Number `json:"idle_share_gpu_hours"`
	MemoryMiBHours json.Number `json:"memory_mib_hours"`
	EnergyKWh      json.Number `json:"energy_kwh"`
	// Charge, IdleShare, Platform and Rounding are the amounts of its
	// report lines by type; Total their sum.
	Charge    json.Number `json:"charge"`
	IdleShare json.Number `json:"idle_share"`
	Platform  json.Number `json:"platform"`
	Rounding  json.Number `json:"rounding"`
	Total     json.Number `json:"total"`

	// The exact values, for the pages and the CSV.
	Values             []string `json:"-"`
	charge, idleShare  int64
	platform, rounding int64
}

// sums are an entry's hours and kWh while its lines are added, exactly
// (rational.Sum: a month by pod adds some 70,000 lines).
type sums struct {
	held, used, idle, share rational.Sum
	mem, energy             rational.Sum
}

// Minor is the entry's total in minor units.
func (e *Entry) Minor() int64 { return e.charge + e.idleShare + e.platform + e.rounding }

// Answer is a Result with the report that priced the window.
type Answer struct {
	Result
	Query  Query
	Report *report.Report
}

// Run answers q from st, priced by book; now says what has not happened
// yet (a window not ended is partial) and which book is in force.
func Run(ctx context.Context, st ledger.Store, book *pricebook.Book, q Query, now time.Time) (*Answer, error) {
	if book == nil || book.Location == nil {
		return nil, fmt.Errorf("cannot answer the allocation query: no price book")
	}
	dims := slices.Clone(q.Aggregate)
	for _, d := range Dims {
		if len(q.Filter[d]) > 0 && !slices.Contains(dims, d) {
			dims = append(dims, d)
		}
	}
	g := &grainSource{st: st, loc: book.Location, src: SourceFor(dims), from: q.From, to: q.To, cache: map[string]func() (*bucketed, error){},
		quotaPriced: book.Policy == pricebook.PolicyQuota}
	// A fleet of several clusters is billed cluster by cluster and added,
	// as report --cluster'less bills it (report.BuildFleet): each
	// cluster's unused capacity is shared among its own teams.
	clusters, err := report.Clusters(ctx, st, book.Location, q.From, q.To)
	if err != nil {
		return nil, err
	}
	build := func(ctx context.Context, src report.Source, from, to time.Time) (*report.Report, error) {
		if len(clusters) > 1 {
			return report.BuildFleet(ctx, fleetOf(st, src), book, from, to, now, "")
		}
		return report.BuildDated(ctx, src, book, from, to, now)
	}
	// The cluster of lines that name none: the one the window has.
	onlyCluster := attribution.DefaultCluster
	if len(clusters) == 1 {
		onlyCluster = clusters[0]
	}
	caches := []string{""}
	if len(clusters) > 1 {
		caches = clusters
	}
	steps, unit, err := stepRanges(q, book.Location)
	if err != nil {
		return nil, err
	}
	set := func(from, to time.Time, sr *report.Report, unit string) (Set, error) {
		mem, err := g.memory(ctx, unit, caches, from, to)
		if err != nil {
			return Set{}, err
		}
		s := Set{Start: from.Format(time.RFC3339), End: to.Format(time.RFC3339), Total: json.Number(sr.Money(sr.Total))}
		s.Entries = group(sr, q, g.src, mem, onlyCluster)
		return s, nil
	}
	// The steps' reports are built while the window's is: they share
	// only what g reads once.
	var series *stepSets
	if steps != nil {
		series = buildSteps(ctx, steps, func(ctx context.Context, s calendar.Bucket) (Set, error) {
			sr, err := build(ctx, view{g, unit}, s.From, s.To)
			if err != nil {
				return Set{}, fmt.Errorf("cannot build the report of %s to %s: %w", s.From.Format(time.RFC3339), s.To.Format(time.RFC3339), err)
			}
			return set(s.From, s.To, sr, unit)
		})
	}
	rep, err := build(ctx, windowSource(g), q.From, q.To)
	if err != nil {
		if series != nil {
			series.abandon()
		}
		return nil, fmt.Errorf("cannot build the window's report: %w", err)
	}
	rep.GeneratedAt = now
	a := &Answer{Query: q, Report: rep}
	r := &a.Result
	r.Window = Window{Start: q.From.Format(time.RFC3339), End: q.To.Format(time.RFC3339), Timezone: book.Timezone,
		Partial: rep.Partial(), PartialNote: rep.PartialNote()}
	if s, e := rep.DataBounds(); !s.IsZero() {
		r.Window.DataStart, r.Window.DataEnd = s.Format(time.RFC3339), e.Format(time.RFC3339)
	}
	r.Currency, r.Policy, r.Idle = book.Currency.Code, string(book.Policy), string(book.Idle)
	for _, d := range q.Aggregate {
		r.Aggregate = append(r.Aggregate, string(d))
	}
	r.Filter, r.Step, r.Source = FormatFilter(q.Filter), q.Step, string(g.src)
	r.Total = json.Number(rep.Money(rep.Total))
	if series == nil {
		s, err := set(q.From, q.To, rep, ledger.BucketDay)
		if err != nil {
			return nil, err
		}
		if len(s.Entries) > maxEntries {
			return nil, tooManyEntries()
		}
		r.Sets = []Set{s}
		return a, nil
	}
	if r.Sets, err = series.wait(); err != nil {
		return nil, err
	}
	return a, nil
}

func tooManyEntries() error {
	return &ParamError{Param: "aggregate", Msg: fmt.Sprintf("more than %d entries: group by fewer fields, filter, or use a longer step or a shorter window", maxEntries)}
}

// stepSets are a series' sets being built, a step at a time in step
// order by as many workers as there are processors (an hour-by-hour month
// is 744 reports, each on its own).
type stepSets struct {
	sets   []Set
	errs   []error
	done   []bool
	stop   atomic.Bool
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// panicked is the first panic of a worker with the stack where it
	// happened, raised again in the caller by wait or abandon (as
	// report.Build raises its reads'): a defect is the request's (serve
	// recovers its computations' panics), never the whole server's.
	panicked atomic.Pointer[string]
}

// buildSteps starts building each step's set with fn. Workers take the
// steps in order and stop taking new ones once a set fails or the sets
// made hold more than MaxEntries entries, so every step up to the one
// that decides the answer is built, and wait answers as building them one
// after the other would.
func buildSteps(ctx context.Context, steps []calendar.Bucket, fn func(context.Context, calendar.Bucket) (Set, error)) *stepSets {
	ss := &stepSets{sets: make([]Set, len(steps)), errs: make([]error, len(steps)), done: make([]bool, len(steps))}
	ctx, ss.cancel = context.WithCancel(ctx)
	var next, entries atomic.Int64
	for range min(stepWorkers(), len(steps)) {
		ss.wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					p := fmt.Sprintf("%v\n%s", r, debug.Stack())
					ss.panicked.CompareAndSwap(nil, &p)
					ss.stop.Store(true)
				}
			}()
			for !ss.stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(steps) {
					return
				}
				ss.sets[i], ss.errs[i] = fn(ctx, steps[i])
				ss.done[i] = true
				if ss.errs[i] != nil || entries.Add(int64(len(ss.sets[i].Entries))) > int64(maxEntries) {
					ss.stop.Store(true)
				}
			}
		})
	}
	return ss
}

// abandon stops the steps (the window's report failed) and waits for
// the workers.
func (ss *stepSets) abandon() {
	ss.stop.Store(true)
	ss.cancel()
	ss.wg.Wait()
	ss.repanic()
}

// repanic raises a worker's panic in the caller.
func (ss *stepSets) repanic() {
	if p := ss.panicked.Load(); p != nil {
		panic(*p)
	}
}

// wait is the sets in step order, or the first step's error, in order,
// or the error of too many entries where the sets up to a step hold more
// than MaxEntries.
func (ss *stepSets) wait() ([]Set, error) {
	ss.wg.Wait()
	ss.cancel()
	ss.repanic()
	n := 0
	for i := range ss.sets {
		if ss.errs[i] != nil {
			return nil, ss.errs[i]
		}
		if !ss.done[i] {
			return nil, fmt.Errorf("cannot answer the allocation query: step %d of %d was not built", i+1, len(ss.sets))
		}
		if n += len(ss.sets[i].Entries); n > maxEntries {
			return nil, tooManyEntries()
		}
	}
	return ss.sets, nil
}

// stepRanges cuts the window into its steps in loc, and names the bucket
// unit the steps' reports read (hours for hour steps, else days).
func stepRanges(q Query, loc *time.Location) ([]calendar.Bucket, string, error) {
	switch q.Step {
	case StepNone:
		return nil, ledger.BucketDay, nil
	case StepHour, StepDay, StepMonth:
		bs, err := calendar.Buckets(q.From, q.To, loc, q.Step)
		if err != nil {
			return nil, "", err
		}
		if len(bs) > MaxSteps {
			return nil, "", &ParamError{Param: "step", Msg: fmt.Sprintf("%d steps: at most %d", len(bs), MaxSteps)}
		}
		unit := ledger.BucketDay
		if q.Step == StepHour {
			unit = ledger.BucketHour
		}
		return bs, unit, nil
	}
	// Weeks start on Monday, in loc: days merged.
	days, err := calendar.Buckets(q.From, q.To, loc, calendar.Day)
	if err != nil {
		return nil, "", err
	}
	var out []calendar.Bucket
	for _, d := range days {
		if len(out) == 0 || d.Start.Weekday() == time.Monday {
			out = append(out, d)
			continue
		}
		out[len(out)-1].To = d.To
	}
	return out, ledger.BucketDay, nil
}

// memory is the containers' MiB-seconds per (cluster, team, namespace,
// model, mode) line key of [from, to), from the aggregates the report
// read at unit of each of clusters ("" alone: the whole ledger, whose
// lines name no cluster).
func (g *grainSource) memory(ctx context.Context, unit string, clusters []string, from, to time.Time) (map[[5]string]float64, error) {
	out := map[[5]string]float64{}
	for _, c := range clusters {
		b, err := g.load(ctx, unit, c)
		if err != nil {
			return nil, err
		}
		// The buckets are in time order: a step's are found, not
		// searched for among the window's (744 steps of hours each
		// looked at all 744).
		lo, _ := slices.BinarySearchFunc(b.buckets, from, func(k calendar.Bucket, t time.Time) int { return k.From.Compare(t) })
		for i := lo; i < len(b.buckets) && !b.buckets[i].To.After(to); i++ {
			aggs := b.bucket(i)
			for j := range aggs {
				if a := &aggs[j]; a.Kind == attribution.KindContainer {
					out[[5]string{c, a.Team, a.Namespace, a.GPUModel, a.Mode}] += a.MemoryMiBSeconds
				}
			}
		}
	}
	return out, nil
}

// lineKeys are a report line's values of every field, in Dims' order.
type lineKeys [9]string

// dimIndex is d's place in Dims (and in lineKeys).
func dimIndex(d Dim) int { return slices.Index(Dims, d) }

// keysOf are a report line's values of every field; a line of a report
// that names no cluster is of onlyCluster. The platform and rounding
// lines keep their cluster: each cluster's bill has its own.
func keysOf(rep *report.Report, l *report.Line, src Source, onlyCluster string) lineKeys {
	cluster := cmp.Or(rep.LineCluster(*l), onlyCluster)
	switch l.Type {
	case report.LineRounding:
		return lineKeys{Rounding, Rounding, Rounding, Rounding, Rounding, Rounding, Rounding, Rounding, cluster}
	case report.LinePlatform:
		return lineKeys{Platform, Platform, Platform, Platform, Platform, Platform, l.GPUModel, l.SharingMode, cluster}
	}
	ns, x := l.Namespace, [4]string{}
	if src != SourceRollups {
		ns, x = decode(l.Namespace)
	}
	return lineKeys{l.Team, ns, x[0], x[1], x[2], x[3], l.GPUModel, l.SharingMode, cluster}
}

func (q Query) keep(keys *lineKeys) bool {
	for d, vs := range q.Filter {
		if !slices.Contains(vs, keys[dimIndex(d)]) {
			return false
		}
	}
	return true
}

// group adds up rep's lines per the query's grouping, keeping the
// filtered ones; largest total first. A charge or platform line's hours
// and energy are added as the builder's integers (Line.Micro): a month by
// pod has some 20,000 entries, and reducing each entry's big.Rat sums
// was most of the grouping's time.
func group(rep *report.Report, q Query, src Source, mem map[[5]string]float64, onlyCluster string) []Entry {
	type acc struct {
		e Entry
		sums
	}
	byName := map[string]*acc{}
	var order []*acc
	var name []byte
	for i := range rep.Lines {
		l := &rep.Lines[i]
		if l.Type == report.LineRounding && l.Amount == 0 {
			continue // no entry for a rounding of nothing
		}
		keys := keysOf(rep, l, src, onlyCluster)
		if !q.keep(&keys) {
			continue
		}
		name = name[:0]
		for i, d := range q.Aggregate {
			if i > 0 {
				name = append(name, '/')
			}
			name = append(name, keys[dimIndex(d)]...)
		}
		a := byName[string(name)]
		if a == nil {
			vals := make([]string, len(q.Aggregate))
			for i, d := range q.Aggregate {
				vals[i] = keys[dimIndex(d)]
			}
			a = &acc{e: Entry{Name: string(name), Values: vals}}
			byName[a.e.Name] = a
			order = append(order, a)
		}
		e := &a.e
		allocUS, usedUS, mj, micro := l.Micro()
		if micro {
			a.energy.AddFrac(mj, report.MilliPerKWh)
		} else {
			a.energy.Add(l.EnergyKWh)
		}
		switch l.Type {
		case report.LineCharge:
			e.charge += l.Amount
			if micro && usedUS >= 0 {
				a.held.AddFrac(allocUS, report.MicroPerHour)
				a.used.AddFrac(usedUS, report.MicroPerHour)
				if allocUS > usedUS {
					a.idle.AddFrac(allocUS-usedUS, report.MicroPerHour)
				}
			} else {
				a.held.Add(l.AllocatedHours)
				a.used.Add(l.UsedHours)
				if idle := new(big.Rat).Sub(l.AllocatedHours, l.UsedHours); idle.Sign() > 0 {
					a.idle.Add(idle)
				}
			}
			// Memory once per line key, which has a charge line a price
			// book: taken out of mem by the first.
			k := [5]string{l.Cluster, l.Team, l.Namespace, l.GPUModel, l.SharingMode}
			if m, ok := mem[k]; ok {
				delete(mem, k)
				addDecimal(&a.mem, strconv.FormatFloat(m/3600, 'f', 6, 64))
			}
		case report.LineIdleShare:
			e.idleShare += l.Amount
			a.share.Add(l.ChargedHours(rep.Book.Policy))
		case report.LinePlatform:
			e.platform += l.Amount
			a.idle.Add(l.ChargedHours(rep.Book.Policy))
		case report.LineRounding:
			e.rounding += l.Amount
		default: // quota policy: the quota and above-quota lines
			e.charge += l.Amount
		}
	}
	// Largest total first, then by name; the entries, large values, are
	// placed once in that order.
	slices.SortFunc(order, func(a, b *acc) int {
		return cmp.Or(cmp.Compare(b.e.Minor(), a.e.Minor()), strings.Compare(a.e.Name, b.e.Name))
	})
	// Each entry's numbers are written on their own; a large answer's in
	// as many parts as there are processors.
	out := make([]Entry, len(order))
	parts := min(runtime.GOMAXPROCS(0), len(order)/minEntriesPerPart+1)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := len(order)*p/parts, len(order)*(p+1)/parts
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				a := order[i]
				e := &a.e
				e.Keys = make(map[string]string, len(q.Aggregate))
				for i, d := range q.Aggregate {
					e.Keys[string(d)] = e.Values[i]
				}
				e.HeldHours, e.UsedHours, e.IdleHours = dec(&a.held, 6), dec(&a.used, 6), dec(&a.idle, 6)
				e.Efficiency = efficiency(&a.held, &a.used)
				e.IdleShareHours, e.MemoryMiBHours, e.EnergyKWh = dec(&a.share, 6), dec(&a.mem, 6), dec(&a.energy, 6)
				e.Charge, e.IdleShare = json.Number(rep.Money(e.charge)), json.Number(rep.Money(e.idleShare))
				e.Platform, e.Rounding = json.Number(rep.Money(e.platform)), json.Number(rep.Money(e.rounding))
				e.Total = json.Number(rep.Money(e.Minor()))
				out[i] = *e
			}
		})
	}
	wg.Wait()
	return out
}

// minEntriesPerPart: an answer with fewer entries than twice this writes
// their numbers in one goroutine (a variable: a test writes small answers
// in parts).
var minEntriesPerPart = 2048

// efficiency is used / held to four decimals, nil when nothing was held;
// over one denominator (the usual entry: integer micro-seconds), a
// quotient of the two numerators.
func efficiency(held, used *rational.Sum) *json.Number {
	hn, hd, ok := held.Frac()
	if ok && hn <= 0 {
		return nil
	}
	if un, ud, uok := used.Frac(); ok && uok && (un == 0 || ud == hd) {
		x := json.Number(rational.FracString(un, uint64(hn), 4))
		return &x
	}
	h := held.Rat()
	if h.Sign() <= 0 {
		return nil
	}
	x := json.Number(rational.FloatString(new(big.Rat).Quo(used.Rat(), h), 4))
	return &x
}

// addDecimal adds a decimal text with six decimals, as "%.6f" writes a
// float: as micro-units while it fits an int64.
func addDecimal(s *rational.Sum, text string) {
	if ip, fp, ok := strings.Cut(text, "."); ok && len(fp) == 6 {
		if n, err := strconv.ParseInt(ip+fp, 10, 64); err == nil && !strings.HasPrefix(ip, "-") {
			s.AddFrac(n, 1_000_000)
			return
		}
	}
	if m, ok := new(big.Rat).SetString(text); ok {
		s.Add(m)
	}
}

// dec writes x with d decimals (rounded half away from zero).
func dec(x *rational.Sum, d int) json.Number {
	return json.Number(x.FloatString(d))
}
