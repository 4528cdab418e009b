package tokencost

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/workload"
)

// Querier evaluates an instant PromQL query; *Client is one.
type Querier interface {
	Query(ctx context.Context, expr string, t time.Time) ([]Sample, error)
	String() string
}

// TokenQuery is the PromQL that counts a server's tokens in a metric over
// a range of seconds, per namespace, pod and (where labelled) model: the
// counter's increase, which Prometheus takes across restarts and does not
// extrapolate back past a counter's zero.
func TokenQuery(metric, modelLabel string, seconds int64) string {
	by := "namespace, pod"
	if modelLabel != "" {
		by += ", " + modelLabel
	}
	return "sum by (" + by + ") (increase(" + metric + "[" + strconv.FormatInt(seconds, 10) + "s]))"
}

// Bounds on a count, so a tenant's counters cannot break the section
// (docs/tokens.md, "Absurd counts"). A series outside them is dropped,
// with its pod, and noted; the rest of the section stands.
const (
	// MaxSeriesTokens is the most tokens one series (a pod's input or
	// output for one model) may count over a period: a year of 30 million
	// tokens a second, far beyond any one inference pod.
	MaxSeriesTokens = 1e15
	// MinSeriesTokens is the fewest tokens a series that counted any may
	// count: counters count whole tokens and Prometheus's increase of one
	// that rose is at least one; half a token leaves room for rounding. A
	// smaller positive count would make a cost per token absurd.
	MinSeriesTokens = 0.5
	// MaxWorkloadTokens is the most tokens a row (a workload serving one
	// model) may sum over its pods, in each direction.
	MaxWorkloadTokens = 1e18
	// MaxModelsPerPod is the most models one pod may count tokens for.
	MaxModelsPerPod = 100
	// maxNoteLabel bounds a label written into a note.
	maxNoteLabel = 200
)

type podKey struct{ namespace, pod string }

// counts are one pod's tokens for one model; hasIn and hasOut say a
// series gave them (so a second series of the same labels is a
// duplicate).
type counts struct {
	model         string
	in, out       float64
	hasIn, hasOut bool
}

// podTokens is what one pod's server counted. Models are a short list,
// not a map: most pods serve one, none more than MaxModelsPerPod, and a
// map per pod is most of a large count's memory. A dropped pod keeps its
// entry while counting (so its server still owns it) without models.
type podTokens struct {
	server  string
	models  []counts
	dropped bool
}

// model is p's counts for model, nil where it has none.
func (p *podTokens) model(model string) *counts {
	for i := range p.models {
		if p.models[i].model == model {
			return &p.models[i]
		}
	}
	return nil
}

// absurd says why v cannot be a series' token count, or "".
func absurd(v float64) string {
	switch {
	case math.IsNaN(v):
		return "the count is NaN"
	case math.IsInf(v, 0):
		return "the count is " + strconv.FormatFloat(v, 'g', 6, 64)
	case v < 0:
		return "the count " + fmtCount(v) + " is negative"
	case v > MaxSeriesTokens:
		return "the count " + fmtCount(v) + " is above the maximum of " + fmtCount(MaxSeriesTokens) + " tokens per series"
	case v > 0 && v < MinSeriesTokens:
		return "the count " + fmtCount(v) + " is positive but below " + fmtCount(MinSeriesTokens) + " token"
	}
	return ""
}

// fmtCount writes a count in a note: six significant digits at most.
func fmtCount(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func note(namespace, pod, server, metric, model, text string) report.TokenNote {
	return report.TokenNote{Namespace: printable(namespace, maxNoteLabel), Workload: printable(workload.FromPod(pod), maxNoteLabel),
		Pod: printable(pod, maxNoteLabel), Server: server, Metric: metric, Model: printable(model, maxNoteLabel), Note: text}
}

// notes keeps the first MaxTokenNotes notes in their report order and
// counts the rest, holding at most twice that many at any time.
type notes struct {
	list []report.TokenNote
	more int
}

func (n *notes) add(x ...report.TokenNote) {
	n.list = append(n.list, x...)
	if len(n.list) > 2*report.MaxTokenNotes {
		n.trim()
	}
}

func (n *notes) trim() {
	slices.SortFunc(n.list, func(a, b report.TokenNote) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Pod, b.Pod),
			cmp.Compare(a.Server, b.Server), cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Note, b.Note))
	})
	// One series returned twice says the same thing twice: once is enough.
	n.list = slices.Compact(n.list)
	if len(n.list) > report.MaxTokenNotes {
		n.more += len(n.list) - report.MaxTokenNotes
		n.list = slices.Clip(n.list[:report.MaxTokenNotes])
	}
}

// tokenStreamer is a Querier that hands a token query's series over as
// it decodes them (*Client), so an answer is never held whole.
type tokenStreamer interface {
	eachToken(ctx context.Context, expr string, t time.Time, modelLabel string, fn func(namespace, pod, model string, v float64)) error
}

// tally is a count in progress: the pods counted so far and the notes,
// shared by a server's input and output queries as they decode.
type tally struct {
	mu    sync.Mutex
	pods  map[podKey]*podTokens
	notes notes
}

// add counts one series of server s's metric (input when in). A pod
// another server counted first is not counted again; a pod with an
// absurd series, or with more than MaxModelsPerPod models, is dropped
// whole (its cost could not be split among its models) and noted. A
// series returned twice under the same namespace, pod and model counts
// once; where its values differ the larger counts and a note says so.
func (t *tally) add(s Server, metric string, in bool, namespace, pod, model string, v float64) {
	if namespace == "" || pod == "" {
		return // not scraped from a pod: nothing to join
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := podKey{namespace, pod}
	p := t.pods[k]
	if p != nil && p.server != s.Name {
		return
	}
	if p == nil {
		// A pod and its first model in one allocation: most pods serve one.
		a := &struct {
			p   podTokens
			one [1]counts
		}{}
		p = &a.p
		p.server, p.models = s.Name, a.one[:0:1]
		t.pods[k] = p
	}
	why := absurd(v)
	c := p.model(model)
	if why == "" && c == nil && len(p.models) == MaxModelsPerPod {
		why = "the pod counts tokens for more than " + strconv.Itoa(MaxModelsPerPod) + " models"
	}
	if why != "" {
		t.notes.add(note(namespace, pod, s.Name, metric, model, why+"; the pod is left out"))
		p.dropped, p.models = true, nil
		return
	}
	if p.dropped {
		return
	}
	if c == nil {
		p.models = append(p.models, counts{model: model})
		c = &p.models[len(p.models)-1]
	}
	have, old := &c.hasOut, &c.out
	if in {
		have, old = &c.hasIn, &c.in
	}
	if *have && *old != v {
		t.notes.add(note(namespace, pod, s.Name, metric, model,
			"returned twice with different counts ("+fmtCount(*old)+" and "+fmtCount(v)+"); counted once, as "+fmtCount(max(*old, v))))
		v = max(*old, v)
	}
	*have, *old = true, v
}

// query runs server s's query of metric and adds its series to t.
func (t *tally) query(ctx context.Context, q Querier, s Server, metric string, in bool, seconds int64, at time.Time) error {
	expr := TokenQuery(metric, s.ModelLabel, seconds)
	add := func(namespace, pod, model string, v float64) { t.add(s, metric, in, namespace, pod, model, v) }
	if st, ok := q.(tokenStreamer); ok {
		return st.eachToken(ctx, expr, at, s.ModelLabel, add)
	}
	samples, err := q.Query(ctx, expr, at)
	if err != nil {
		return err
	}
	if len(samples) > MaxSeries {
		return fmt.Errorf("more than %d series answer %s", MaxSeries, expr)
	}
	for _, x := range samples {
		model := ""
		if s.ModelLabel != "" {
			model = x.Labels[s.ModelLabel]
		}
		add(x.Labels["namespace"], x.Labels["pod"], model, x.Value)
	}
	return nil
}

// countTokens queries q for the tokens every pod's server counted in
// [from, to): each server's counters' increase over the period, evaluated
// at to, a server's input and output queries at once (MaxConcurrentQueries)
// and the servers one after the other. A pod whose counters more than one
// server names is counted once, by the first server of Servers. Pods
// dropped for their counts are not returned; the notes say which.
func countTokens(ctx context.Context, q Querier, from, to time.Time) (map[podKey]*podTokens, *notes, error) {
	if q == nil {
		return nil, nil, errNoPrometheus
	}
	seconds := int64(to.Sub(from) / time.Second)
	if seconds <= 0 {
		return nil, nil, fmt.Errorf("cannot count tokens: period %s to %s is shorter than a second", from, to)
	}
	t := &tally{pods: map[podKey]*podTokens{}}
	for _, s := range Servers {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(MaxConcurrentQueries)
		for i, metric := range []string{s.Input, s.Output} {
			g.Go(func() error {
				if err := t.query(gctx, q, s, metric, i == 0, seconds, to); err != nil {
					return fmt.Errorf("cannot count %s tokens: %w", s.Name, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
	}
	for k, p := range t.pods {
		if p.dropped {
			delete(t.pods, k)
		}
	}
	return t.pods, &t.notes, nil
}

// Costs returns each pod's exact cost over [from, to) from the ledger's
// container rows: its GPU-hours (allocated, or used under the usage
// policy) at the book's rate for each GPU model, and the basis used.
func Costs(ctx context.Context, src report.Source, book *pricebook.Book, from, to time.Time) (map[podKey]*big.Rat, string, error) {
	basis := "allocated"
	if book.Policy == pricebook.PolicyUsage {
		basis = "used"
	}
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: book.Location, Bucket: ledger.BucketDay, ByDevice: true})
	if err != nil {
		return nil, basis, fmt.Errorf("cannot read the ledger's per-pod aggregates: %w", err)
	}
	out := map[podKey]*big.Rat{}
	hour := big.NewRat(3600, 1)
	for _, a := range aggs {
		if a.Kind != attribution.KindContainer || a.Pod == "" {
			continue
		}
		secs := a.AllocatedSeconds
		if basis == "used" {
			secs = a.UsedSeconds
		}
		s := new(big.Rat)
		if s.SetFloat64(secs) == nil {
			return nil, basis, fmt.Errorf("cannot price pod %s/%s: %v GPU-seconds", a.Namespace, a.Pod, secs)
		}
		rate, _ := book.RateFor(a.GPUModel)
		s.Mul(s, rate.Rat()).Quo(s, hour)
		k := podKey{a.Namespace, a.Pod}
		if out[k] == nil {
			out[k] = new(big.Rat)
		}
		out[k].Add(out[k], s)
	}
	return out, basis, nil
}

// Build is the cost per token section of [from, to), the one join both
// front ends use (report --prometheus, and serve, which caches what it
// returns): the tokens every pod's servers counted, read from q, joined
// with the pods' cost from src by namespace and pod, grouped per
// namespace, workload, model and server. A pod serving several models has
// its cost split among them by their share of its tokens (input and output
// together; equally when it counted none).
//
// All of q's queries run within q's Timeout together where q has one
// (*Client), DefaultTimeout otherwise; src is read only once they are
// done, so a caller may open the ledger lazily. Only Prometheus failing
// (not answering in time, refusing, answering garbage or beyond MaxSeries
// or MaxResponseBytes) is a *PrometheusError; a tenant's absurd counts are
// dropped and noted. Any other error is the pricing's (the ledger's).
func Build(ctx context.Context, q Querier, src report.Source, book *pricebook.Book, from, to time.Time) (*report.Tokens, error) {
	c, err := count(ctx, q, from, to)
	if err != nil {
		return nil, &PrometheusError{Err: err}
	}
	costs, basis, err := Costs(ctx, src, book, c.from, c.to)
	if err != nil {
		return nil, err
	}
	return join(c.source, c.to, basis, c.pods, c.notes, costs)
}

// PrometheusError is Build's error when Prometheus did not answer its
// token queries, so that a caller can tell it from the ledger failing
// (gpuledger serve renders a month without its token section when
// Prometheus does not answer, but not when the ledger does not). Its text
// is the failure's own.
type PrometheusError struct{ Err error }

func (e *PrometheusError) Error() string { return e.Err.Error() }
func (e *PrometheusError) Unwrap() error { return e.Err }

// counted is what the inference servers counted over a period, read from
// one Prometheus: the first half of Build.
type counted struct {
	source   string
	from, to time.Time
	pods     map[podKey]*podTokens
	notes    *notes
}

// count reads the tokens every pod's servers counted in [from, to) from q,
// all of its queries within q's Timeout together where q has one
// (*Client), DefaultTimeout otherwise.
func count(ctx context.Context, q Querier, from, to time.Time) (*counted, error) {
	if q == nil {
		return nil, errNoPrometheus
	}
	total := DefaultTimeout
	if t, ok := q.(interface{ Timeout() time.Duration }); ok && t.Timeout() > 0 {
		total = t.Timeout()
	}
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	toks, ns, err := countTokens(ctx, q, from, to)
	if err != nil {
		return nil, err
	}
	return &counted{source: q.String(), from: from, to: to, pods: toks, notes: ns}, nil
}

type rowKey struct{ namespace, workload, model, server string }

// rowSum is a row's tokens and cost, summed exactly.
type rowSum struct {
	row     *report.TokenRow
	in, out *big.Rat
}

// join groups the pods' tokens and costs into rows. Every count is
// within [MinSeriesTokens, MaxSeriesTokens] or zero (countTokens dropped
// the rest), and sums and shares are exact rationals, so nothing here
// overflows or fails on a tenant's numbers; a row whose sum passes
// MaxWorkloadTokens is left out and noted.
func join(source string, at time.Time, basis string, toks map[podKey]*podTokens, ns *notes, costs map[podKey]*big.Rat) (*report.Tokens, error) {
	if ns == nil {
		ns = &notes{}
	}
	t := &report.Tokens{Prometheus: source, At: at, Basis: basis}
	rows := map[rowKey]*rowSum{}
	rat := func(v float64) *big.Rat { return new(big.Rat).SetFloat64(v) } // finite: checked below
	for k, p := range toks {
		cost, ok := costs[k]
		if !ok {
			t.Unpriced++
			continue
		}
		// countTokens let no absurd count through; checked again here, so
		// that no caller's counts can make a rational nil.
		if why := podAbsurd(p); why != "" {
			ns.add(note(k.namespace, k.pod, p.server, "", "", why+"; the pod is left out"))
			continue
		}
		total := new(big.Rat)
		for _, c := range p.models {
			total.Add(total, rat(c.in)).Add(total, rat(c.out))
		}
		for _, c := range p.models {
			model := c.model
			share := big.NewRat(1, int64(len(p.models)))
			if total.Sign() > 0 {
				share = new(big.Rat).Add(rat(c.in), rat(c.out))
				share.Quo(share, total)
			}
			rk := rowKey{k.namespace, workload.FromPod(k.pod), model, p.server}
			r := rows[rk]
			if r == nil {
				r = &rowSum{row: &report.TokenRow{Namespace: rk.namespace, Workload: rk.workload, Model: model, Server: p.server, Cost: new(big.Rat)},
					in: new(big.Rat), out: new(big.Rat)}
				rows[rk] = r
			}
			r.row.Pods++
			r.in.Add(r.in, rat(c.in))
			r.out.Add(r.out, rat(c.out))
			r.row.Cost.Add(r.row.Cost, new(big.Rat).Mul(cost, share))
		}
	}
	million := big.NewRat(1_000_000, 1)
	perMillion := func(cost, tokens *big.Rat) *big.Rat {
		if tokens.Sign() <= 0 {
			return nil
		}
		return new(big.Rat).Quo(new(big.Rat).Mul(cost, million), tokens)
	}
	limit := rat(MaxWorkloadTokens)
	for rk, r := range rows {
		var over []string
		for _, d := range []struct {
			metric string
			sum    *big.Rat
		}{{serverNamed(rk.server).Input, r.in}, {serverNamed(rk.server).Output, r.out}} {
			if d.sum.Cmp(limit) > 0 {
				f, _ := d.sum.Float64()
				ns.add(report.TokenNote{Namespace: printable(rk.namespace, maxNoteLabel), Workload: printable(rk.workload, maxNoteLabel),
					Server: rk.server, Metric: d.metric, Model: printable(rk.model, maxNoteLabel),
					Note: "the workload's " + strconv.Itoa(r.row.Pods) + " pods sum " + fmtCount(f) + " tokens, above the maximum of " +
						fmtCount(MaxWorkloadTokens) + " per workload; the workload is left out"})
				over = append(over, d.metric)
			}
		}
		if over != nil {
			continue
		}
		r.row.InputTokens, _ = r.in.Float64()
		r.row.OutputTokens, _ = r.out.Float64()
		r.row.PerMillionInput = perMillion(r.row.Cost, r.in)
		r.row.PerMillionOutput = perMillion(r.row.Cost, r.out)
		r.row.PerMillion = perMillion(r.row.Cost, new(big.Rat).Add(r.in, r.out))
		t.Rows = append(t.Rows, *r.row)
	}
	slices.SortFunc(t.Rows, func(a, b report.TokenRow) int {
		if c := b.Cost.Cmp(a.Cost); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Workload, b.Workload),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Server, b.Server))
	})
	ns.trim()
	t.Notes, t.NotesMore = ns.list, ns.more
	return t, nil
}

// podAbsurd says why one of p's counts cannot be a count, or "".
func podAbsurd(p *podTokens) string {
	for _, c := range p.models {
		if why := cmp.Or(absurd(c.in), absurd(c.out)); why != "" {
			return why
		}
	}
	return ""
}

// serverNamed is the server of Servers called name.
func serverNamed(name string) Server {
	for _, s := range Servers {
		if s.Name == name {
			return s
		}
	}
	return Server{Name: name}
}
