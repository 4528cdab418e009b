package tokencost

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
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

type podKey struct{ namespace, pod string }

// counts are one pod's tokens for one model.
type counts struct{ in, out float64 }

// podTokens is what one pod's server counted.
type podTokens struct {
	server string
	models map[string]*counts
}

// countTokens queries q for the tokens every pod's server counted in
// [from, to): each server's counters' increase over the period, evaluated
// at to. A pod whose counters more than one server names is counted once,
// by the first server of Servers.
func countTokens(ctx context.Context, q Querier, from, to time.Time) (map[podKey]*podTokens, error) {
	if q == nil {
		return nil, errNoPrometheus
	}
	seconds := int64(to.Sub(from) / time.Second)
	if seconds <= 0 {
		return nil, fmt.Errorf("cannot count tokens: period %s to %s is shorter than a second", from, to)
	}
	out := map[podKey]*podTokens{}
	for _, s := range Servers {
		found := map[podKey]*podTokens{}
		for i, metric := range []string{s.Input, s.Output} {
			samples, err := q.Query(ctx, TokenQuery(metric, s.ModelLabel, seconds), to)
			if err != nil {
				return nil, fmt.Errorf("cannot count %s tokens: %w", s.Name, err)
			}
			for _, x := range samples {
				k := podKey{x.Labels["namespace"], x.Labels["pod"]}
				if k.namespace == "" || k.pod == "" {
					continue // not scraped from a pod: nothing to join
				}
				if _, taken := out[k]; taken {
					continue
				}
				p := found[k]
				if p == nil {
					p = &podTokens{server: s.Name, models: map[string]*counts{}}
					found[k] = p
				}
				model := ""
				if s.ModelLabel != "" {
					model = x.Labels[s.ModelLabel]
				}
				c := p.models[model]
				if c == nil {
					c = &counts{}
					p.models[model] = c
				}
				if i == 0 {
					c.in += x.Value
				} else {
					c.out += x.Value
				}
			}
		}
		for k, p := range found {
			out[k] = p
		}
	}
	return out, nil
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

// Build is the cost per token section of [from, to): Costs joined with
// Tokens by namespace and pod, grouped per namespace, workload, model and
// server. A pod serving several models has its cost split among them by
// their share of its tokens (input and output together; equally when it
// counted none).
func Build(ctx context.Context, q Querier, src report.Source, book *pricebook.Book, from, to time.Time) (*report.Tokens, error) {
	c, err := Count(ctx, q, from, to)
	if err != nil {
		return nil, err
	}
	return c.Join(ctx, src, book)
}

// Counted is what the inference servers counted over a period, read from
// one Prometheus: the first half of Build. Callers that must tell a
// Prometheus failure from a ledger failure (gpuledger serve renders a
// month without its token section when Prometheus does not answer, but
// not when the ledger does not) call Count, then Join.
type Counted struct {
	source   string
	from, to time.Time
	pods     map[podKey]*podTokens
}

// Count reads the tokens every pod's servers counted in [from, to) from q.
func Count(ctx context.Context, q Querier, from, to time.Time) (*Counted, error) {
	toks, err := countTokens(ctx, q, from, to)
	if err != nil {
		return nil, err
	}
	return &Counted{source: q.String(), from: from, to: to, pods: toks}, nil
}

// Join prices the counted period's pods from the ledger and returns the
// section Build returns for the same period.
func (c *Counted) Join(ctx context.Context, src report.Source, book *pricebook.Book) (*report.Tokens, error) {
	costs, basis, err := Costs(ctx, src, book, c.from, c.to)
	if err != nil {
		return nil, err
	}
	return join(c.source, c.to, basis, c.pods, costs)
}

type rowKey struct{ namespace, workload, model, server string }

func join(source string, at time.Time, basis string, toks map[podKey]*podTokens, costs map[podKey]*big.Rat) (*report.Tokens, error) {
	t := &report.Tokens{Prometheus: source, At: at, Basis: basis}
	rows := map[rowKey]*report.TokenRow{}
	for k, p := range toks {
		cost, ok := costs[k]
		if !ok {
			t.Unpriced++
			continue
		}
		var total float64
		for _, c := range p.models {
			total += c.in + c.out
		}
		for model, c := range p.models {
			share := big.NewRat(1, int64(len(p.models)))
			if total > 0 {
				num, den := new(big.Rat).SetFloat64(c.in+c.out), new(big.Rat).SetFloat64(total)
				if num == nil || den == nil {
					return nil, fmt.Errorf("cannot share pod %s/%s's cost: token counts %v of %v", k.namespace, k.pod, c.in+c.out, total)
				}
				share = num.Quo(num, den)
			}
			rk := rowKey{k.namespace, workload.FromPod(k.pod), model, p.server}
			r := rows[rk]
			if r == nil {
				r = &report.TokenRow{Namespace: rk.namespace, Workload: rk.workload, Model: model, Server: p.server, Cost: new(big.Rat)}
				rows[rk] = r
			}
			r.Pods++
			r.InputTokens += c.in
			r.OutputTokens += c.out
			r.Cost.Add(r.Cost, new(big.Rat).Mul(cost, share))
		}
	}
	million := big.NewRat(1_000_000, 1)
	perMillion := func(cost *big.Rat, tokens float64) *big.Rat {
		d := new(big.Rat)
		if tokens <= 0 || d.SetFloat64(tokens) == nil {
			return nil
		}
		return new(big.Rat).Quo(new(big.Rat).Mul(cost, million), d)
	}
	for _, r := range rows {
		r.PerMillionInput = perMillion(r.Cost, r.InputTokens)
		r.PerMillionOutput = perMillion(r.Cost, r.OutputTokens)
		r.PerMillion = perMillion(r.Cost, r.InputTokens+r.OutputTokens)
		t.Rows = append(t.Rows, *r)
	}
	slices.SortFunc(t.Rows, func(a, b report.TokenRow) int {
		if c := b.Cost.Cmp(a.Cost); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Workload, b.Workload),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Server, b.Server))
	})
	return t, nil
}
