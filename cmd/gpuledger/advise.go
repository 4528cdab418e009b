package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"math"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/advisor/adviceprom"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

const adviseUsageText = `usage: gpuledger advise (--period YYYY-MM | --from T --to T) --prices FILE
                      [--ledger DSN] [--pods FILE] [--format text|json|html|prom] [--out FILE]
                      [--headroom 0.25] [--reclaim 0.9] [--saturated 0.8]
       gpuledger advise --listen ADDR [--window 30d] [--refresh 1h] --prices FILE
                      [--ledger DSN] [--pods FILE] [--web.config.file FILE]

Recommends, per workload, reclaiming idle GPUs, right-sizing to a smaller
MIG profile or fraction, or consolidating one team's workloads under MPS,
with the GPUs before and after, the saving at the price book's rates, the
contention from replaying the observed per-minute usage on the proposed
layout, and (for pods annotated gpuledger.io/service-time) the latency the
whatif simulator predicts. Rules and thresholds: docs/advisor.md.

  --period     a calendar month in the price book's time zone
  --from/--to  any other range (as for gpuledger report)
  --prices     the price book (env GPULEDGER_PRICES)
  --ledger     ledger DSN (env GPULEDGER_LEDGER)
  --pods       pod metadata: the output of kubectl get pods -A -o json
               (owners and the service-time annotation); optional
  --format     text (default), json, html or prom (gpuledger_advice_*
               series in Prometheus text format, for a textfile collector)
  --out        output file, written only once complete; default stdout
  --headroom   capacity added to the p99 demand before sizing (default 0.25)
  --reclaim    fraction of idle replica-minutes that reclaims (default 0.9)
  --saturated  p99 usage / allocation at which a workload is kept (default 0.8)

With --listen it runs as an exporter: every --refresh it advises on the
trailing --window (whole hours up to the last one that ended) and serves
the gpuledger_advice_* series on ADDR's /metrics, with /healthz, for
Prometheus to scrape (the chart's advisor Deployment).

  --listen     address to serve /metrics and /healthz on
  --window     how far back the advice looks (Prometheus duration; default 30d)
  --refresh    how often it advises again (default 1h)
  --web.config.file  exporter-toolkit web config (TLS, basic auth)
`

type adviseFlags struct {
	reportFlags
	pods                         string
	headroom, reclaim, saturated float64
	// Exporter mode (--listen).
	listen, webConfig string
	window, refresh   time.Duration
	now               func() time.Time // the exporter's clock; nil is time.Now
}

func parseAdviseFlags(args []string) (adviseFlags, error) {
	var f adviseFlags
	fs := flag.NewFlagSet("advise", flag.ContinueOnError)
	f.periodFlags.register(fs)
	fs.StringVar(&f.format, "format", "text", "text, json, html or prom")
	fs.StringVar(&f.out, "out", "", "output file")
	fs.StringVar(&f.pods, "pods", "", "kubectl get pods -A -o json output")
	fs.Float64Var(&f.headroom, "headroom", advise.DefaultHeadroom, "headroom over p99 demand")
	fs.Float64Var(&f.reclaim, "reclaim", advise.DefaultReclaimFraction, "idle fraction that reclaims")
	fs.Float64Var(&f.saturated, "saturated", advise.DefaultSaturated, "p99 usage / allocation that keeps")
	fs.StringVar(&f.listen, "listen", "", "serve the advice on this address's /metrics")
	fs.StringVar(&f.webConfig, "web.config.file", envDefault("GPULEDGER_WEB_CONFIG", ""), "exporter-toolkit web config file")
	f.window, f.refresh = 30*24*time.Hour, time.Hour
	fs.Func("window", "trailing window with --listen (default 30d)", promDurationFlag(&f.window))
	fs.Func("refresh", "refresh period with --listen (default 1h)", promDurationFlag(&f.refresh))
	if err := parseFlags(fs, args, adviseUsageText); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("advise: unexpected argument %q", fs.Arg(0))
	}
	if f.listen != "" {
		return f, f.checkServe()
	}
	if err := f.check("advise"); err != nil {
		return f, err
	}
	if f.format != "text" && f.format != "json" && f.format != "html" && f.format != "prom" {
		return f, fmt.Errorf("advise: --format %q: want text, json, html or prom", f.format)
	}
	for name, v := range map[string]float64{"headroom": f.headroom, "reclaim": f.reclaim, "saturated": f.saturated} {
		if !(v > 0) || v > 10 || (name != "headroom" && v > 1) {
			return f, fmt.Errorf("advise: --%s %v is out of range", name, v)
		}
	}
	return f, nil
}

func runAdvise(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseAdviseFlags(args)
	if err != nil {
		return err
	}
	if f.listen != "" {
		return serveAdvice(ctx, f)
	}
	book, err := pricebook.Load(f.prices)
	if err != nil {
		return err
	}
	from, to, err := f.bounds(book.Location)
	if err != nil {
		return err
	}
	pods, st, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	began := time.Now()
	res, err := buildAdvice(ctx, st, book, from, to, pods, f.options())
	if err != nil {
		return err
	}
	w, commit, err := exportTarget(f.out, stdout)
	if err != nil {
		return err
	}
	defer commit(false)
	switch f.format {
	case "json":
		err = writeAdviceJSON(w, res)
	case "html":
		err = writeAdviceHTML(w, res)
	case "prom":
		err = writeAdviceProm(w, res)
	default:
		err = writeAdviceText(w, res)
	}
	if err != nil {
		return err
	}
	slog.Info("advice written", "period", res.rep.PeriodLabel(), "recommendations", len(res.plan.Recommendations),
		"saving", res.rep.Money(res.plan.SavingMinor), "currency", book.Currency.Code, "took", time.Since(began).Round(time.Millisecond))
	return commit(true)
}

// open reads --pods (when given) and opens --ledger.
func (f *adviseFlags) open(ctx context.Context) ([]advise.Pod, ledger.Store, error) {
	var pods []advise.Pod
	if f.pods != "" {
		var err error
		if pods, err = loadPods(f.pods); err != nil {
			return nil, nil, err
		}
	}
	st, err := ledger.Open(ctx, f.ledger, storeOpeners)
	return pods, st, err
}

// options are the advisor's thresholds from the flags.
func (f *adviseFlags) options() advise.Options {
	return advise.Options{Headroom: f.headroom, ReclaimFraction: f.reclaim, Saturated: f.saturated}
}

// advice is a plan and the chargeback it reconciles with.
type advice struct {
	plan *advise.Plan
	rep  *report.Report
	// charges is the report's charge lines added up: what teams paid for
	// the GPU-hours their containers held (allocation) or used (usage).
	charges int64
}

func buildAdvice(ctx context.Context, st ledger.Store, book *pricebook.Book, from, to time.Time, pods []advise.Pod, opt advise.Options) (*advice, error) {
	rep, err := report.Build(ctx, st, book, from, to)
	if err != nil {
		return nil, err
	}
	return adviceFor(ctx, st, book, rep, pods, opt)
}

// adviceFor advises on a built report's period (report --advice reuses
// the report it is about to write).
func adviceFor(ctx context.Context, st ledger.Store, book *pricebook.Book, rep *report.Report, pods []advise.Pod, opt advise.Options) (*advice, error) {
	a, err := advise.New(rep.From, rep.To, pods, opt)
	if err != nil {
		return nil, err
	}
	// Only container rows count, and only some of their columns:
	// ContainerRows reads a month of a 100-GPU fleet several times
	// faster than Rows.
	if err := st.ContainerRows(ctx, rep.From, rep.To, a.AddRow); err != nil {
		return nil, fmt.Errorf("cannot read ledger rows: %w", err)
	}
	if err := st.Findings(ctx, rep.From, rep.To, a.AddFinding); err != nil {
		return nil, fmt.Errorf("cannot read ledger findings: %w", err)
	}
	plan, err := a.PlanContext(ctx, book)
	if err != nil {
		return nil, err
	}
	res := &advice{plan: plan, rep: rep}
	for _, l := range rep.Lines {
		if l.Type == report.LineCharge {
			res.charges += l.Amount
		}
	}
	return res, nil
}

// loadPods reads `kubectl get pods -A -o json` (a List of Pods).
func loadPods(path string) ([]advise.Pod, error) {
	const maxPodsFile = 512 << 20
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read pods file: %w", err)
	}
	if st.Size() > maxPodsFile {
		return nil, fmt.Errorf("pods file %s: %d bytes, more than %d", path, st.Size(), maxPodsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read pods file: %w", err)
	}
	return parsePods(path, data)
}

func parsePods(name string, data []byte) ([]advise.Pod, error) {
	var doc struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name            string            `json:"name"`
				Namespace       string            `json:"namespace"`
				Annotations     map[string]string `json:"annotations"`
				OwnerReferences []struct {
					Kind       string `json:"kind"`
					Name       string `json:"name"`
					Controller *bool  `json:"controller"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("pods file %s: want the output of kubectl get pods -A -o json: %w", name, err)
	}
	if doc.Kind != "" && doc.Kind != "List" && doc.Kind != "PodList" {
		return nil, fmt.Errorf("pods file %s: kind %q, want a List of Pods", name, doc.Kind)
	}
	out := make([]advise.Pod, 0, len(doc.Items))
	for i, it := range doc.Items {
		m := it.Metadata
		if m.Name == "" || m.Namespace == "" {
			return nil, fmt.Errorf("pods file %s: item %d has no name or namespace", name, i)
		}
		p := advise.Pod{Namespace: m.Namespace, Name: m.Name, Annotations: m.Annotations}
		for _, o := range m.OwnerReferences {
			if o.Controller != nil && *o.Controller {
				p.Owner = o.Kind + "/" + o.Name
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// JSON: money and hours as decimal text written as numbers, as the
// report does.

type adviceJSON struct {
	Period          string           `json:"period"`
	Start           string           `json:"start"`
	End             string           `json:"end"`
	Currency        string           `json:"currency"`
	MinorUnit       int              `json:"minor_unit"`
	Saving          json.Number      `json:"saving"`
	Reconciliation  reconcileJSON    `json:"reconciliation"`
	Recommendations []recommendJSON  `json:"recommendations"`
	MIGPacking      []migPackingJSON `json:"mig_packing"`
	Problems        []string         `json:"problems"`
}

type reconcileJSON struct {
	ReportTotal   json.Number `json:"report_total"`
	ReportCharges json.Number `json:"report_charge_lines"`
	HeldHours     json.Number `json:"held_gpu_hours"`
	HeldAtRates   json.Number `json:"held_at_rates"`
	Policy        string      `json:"policy"`
}

type recommendJSON struct {
	Kind        string         `json:"kind"`
	Team        string         `json:"team"`
	Namespace   string         `json:"namespace"`
	Workloads   []string       `json:"workloads"`
	GPUModel    string         `json:"gpu_model"`
	Modes       []string       `json:"sharing_modes"`
	Replicas    int            `json:"replicas"`
	Before      string         `json:"before"`
	After       string         `json:"after"`
	BeforeGPUs  json.Number    `json:"before_gpus"`
	AfterGPUs   json.Number    `json:"after_gpus"`
	HeldHours   json.Number    `json:"held_gpu_hours"`
	AfterHours  json.Number    `json:"after_gpu_hours"`
	SavedHours  json.Number    `json:"saved_gpu_hours"`
	Rate        json.Number    `json:"rate_per_gpu_hour"`
	Saving      json.Number    `json:"saving"`
	Contention  contentionJSON `json:"contention"`
	Latency     *latencyJSON   `json:"latency"`
	LatencyNote string         `json:"latency_note"`
	Evidence    []string       `json:"evidence"`
	Incomplete  []string       `json:"incomplete"`
}

type contentionJSON struct {
	Minutes    int     `json:"minutes"`
	Of         int     `json:"of_minutes"`
	MaxExcess  float64 `json:"max_excess_gpus"`
	MeanExcess float64 `json:"mean_excess_gpus"`
}

type latencyJSON struct {
	Mode       string   `json:"mode"`
	ServiceMs  float64  `json:"service_time_ms"`
	RateRPS    float64  `json:"rate_rps_per_replica"`
	TenantsGPU int      `json:"tenants_per_gpu"`
	P50        *float64 `json:"p50_ms"`
	P99        *float64 `json:"p99_ms"`
	ServedPct  *float64 `json:"served_pct"`
}

type migPackingJSON struct {
	GPUModel  string `json:"gpu_model"`
	Instances int    `json:"instances"`
	Slices    int    `json:"slices"`
	GPUs      int    `json:"gpus"`
}

func dec(x *big.Rat, d int) json.Number { return json.Number(x.FloatString(d)) }

func floatNum(x float64, d int) json.Number {
	return json.Number(new(big.Rat).SetFloat64(x).FloatString(d))
}

func writeAdviceJSON(w io.Writer, res *advice) error {
	p, rep := res.plan, res.rep
	doc := adviceJSON{Period: rep.PeriodLabel(), Start: p.From.Format(time.RFC3339), End: p.To.Format(time.RFC3339),
		Currency: p.Currency.Code, MinorUnit: p.Currency.MinorUnit, Saving: json.Number(rep.Money(p.SavingMinor)),
		Reconciliation: reconcileJSON{ReportTotal: json.Number(rep.Money(rep.Total)), ReportCharges: json.Number(rep.Money(res.charges)),
			HeldHours: dec(p.HeldHours, 6), HeldAtRates: json.Number(rep.Money(p.ChargedMinor)), Policy: string(rep.Book.Policy)},
		Recommendations: []recommendJSON{}, MIGPacking: []migPackingJSON{}, Problems: append([]string{}, p.Problems...)}
	for _, r := range p.Recommendations {
		j := recommendJSON{Kind: string(r.Kind), Team: r.Team, Namespace: r.Namespace, Workloads: r.Workloads, GPUModel: r.Model,
			Modes: r.Modes, Replicas: r.Replicas, Before: r.Before, After: r.After, BeforeGPUs: floatNum(r.BeforeGPUs, 3),
			AfterGPUs: floatNum(r.AfterGPUs, 3), HeldHours: dec(r.HeldHours, 6), AfterHours: dec(r.AfterHours, 6),
			SavedHours: dec(r.SavedHours, 6), Rate: json.Number(r.Rate.Format(p.Currency.MinorUnit)),
			Saving:      json.Number(rep.Money(r.SavingMinor)),
			Contention:  contentionJSON{r.Contention.Minutes, r.Contention.Of, round6(r.Contention.MaxExcess), round6(r.Contention.MeanExcess)},
			LatencyNote: r.LatencyNote, Evidence: r.Evidence, Incomplete: append([]string{}, r.Incomplete...)}
		if l := r.Latency; l != nil {
			j.Latency = &latencyJSON{Mode: string(l.Mode), ServiceMs: l.ServiceTime.Seconds() * 1e3, RateRPS: round6(l.RatePerReplica),
				TenantsGPU: l.Tenants, P50: num(l.P50, 1e3), P99: num(l.P99, 1e3), ServedPct: num(l.ServedFraction, 100)}
		}
		doc.Recommendations = append(doc.Recommendations, j)
	}
	for _, m := range p.MIG {
		doc.MIGPacking = append(doc.MIGPacking, migPackingJSON{m.Model, m.Instances, m.Slices, m.GPUs})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("cannot write advice JSON: %w", err)
	}
	return nil
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func writeAdviceText(w io.Writer, res *advice) error {
	p, rep := res.plan, res.rep
	cur := p.Currency.Code
	fmt.Fprintf(w, "GPU sharing advice for %s: %d recommendation(s), saving %s %s a period\n", rep.PeriodLabel(), len(p.Recommendations), rep.Money(p.SavingMinor), cur)
	fmt.Fprintf(w, "chargeback: total %s %s, charge lines %s; workloads held %s GPU-hours, %s at the book's rates (policy %s)\n\n",
		rep.Money(rep.Total), cur, rep.Money(res.charges), p.HeldHours.FloatString(3), rep.Money(p.ChargedMinor), rep.Book.Policy)
	for i, r := range p.Recommendations {
		fmt.Fprintf(w, "%d. %s  %s  [team %s, %s]\n", i+1, strings.ToUpper(string(r.Kind)), strings.Join(r.Workloads, ", "), r.Team, r.Model)
		fmt.Fprintf(w, "   before: %s\n   after:  %s\n", r.Before, r.After)
		fmt.Fprintf(w, "   saving: %s %s (%s of %s GPU-hours at %s)\n", rep.Money(r.SavingMinor), cur, r.SavedHours.FloatString(3), r.HeldHours.FloatString(3), r.Rate.Format(p.Currency.MinorUnit))
		if r.Kind != advise.Keep {
			fmt.Fprintf(w, "   contention (replayed): %d of %d minutes over capacity", r.Contention.Minutes, r.Contention.Of)
			if r.Contention.Minutes > 0 {
				fmt.Fprintf(w, ", by %.3f GPU on average, %.3f at most", r.Contention.MeanExcess, r.Contention.MaxExcess)
			}
			fmt.Fprintln(w)
		}
		if l := r.Latency; l != nil {
			fmt.Fprintf(w, "   latency (%s): p50 %s ms, p99 %s ms, served %.2f%%\n", r.LatencyNote, ms(l.P50), ms(l.P99), 100*l.ServedFraction)
		} else {
			fmt.Fprintf(w, "   latency: %s\n", r.LatencyNote)
		}
		for _, e := range r.Evidence {
			fmt.Fprintf(w, "   - %s\n", e)
		}
		for _, e := range r.Incomplete {
			fmt.Fprintf(w, "   ! incomplete: %s\n", e)
		}
		fmt.Fprintln(w)
	}
	for _, m := range p.MIG {
		fmt.Fprintf(w, "MIG instances proposed on %s: %d (%d slices), at least %d GPU(s); MIG instances of different teams may share a GPU\n", m.Model, m.Instances, m.Slices, m.GPUs)
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(w, "problem: %s\n", pr)
	}
	return nil
}

var adviceHTML = template.Must(template.New("advice").Funcs(template.FuncMap{
	"upper": func(k advise.Kind) string { return strings.ToUpper(string(k)) },
	"join":  strings.Join,
	"hours": func(x *big.Rat) string { return x.FloatString(3) },
	"ms":    ms,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>GPU sharing advice {{.Period}}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}.k{font-weight:600}.inc{color:#a40}</style>
</head><body>
<h1>GPU sharing advice, {{.Period}}</h1>
<p>Savings: <b>{{.Saving}} {{.Currency}}</b> over the period, from {{len .Recs}} recommendation(s). Chargeback total {{.Total}} {{.Currency}}; the workloads held {{.HeldHours}} GPU-hours, {{.HeldAtRates}} {{.Currency}} at the book's rates.</p>
<table><tr><th>kind</th><th>workloads</th><th>team</th><th>model</th><th>before</th><th>after</th><th>saving</th><th>contention (replayed)</th><th>latency</th><th>evidence</th></tr>
{{range .Recs}}<tr><td class="k">{{upper .R.Kind}}</td><td>{{join .R.Workloads ", "}}</td><td>{{.R.Team}}</td><td>{{.R.Model}}</td><td>{{.R.Before}}</td><td>{{.R.After}}</td><td class="n">{{.Saving}}</td>
<td>{{.R.Contention.Minutes}} of {{.R.Contention.Of}} min</td><td>{{if .R.Latency}}p50 {{ms .R.Latency.P50}} ms, p99 {{ms .R.Latency.P99}} ms ({{.R.Latency.Mode}}){{else}}{{.R.LatencyNote}}{{end}}</td>
<td>{{range .R.Evidence}}<div>{{.}}</div>{{end}}{{range .R.Incomplete}}<div class="inc">incomplete: {{.}}</div>{{end}}</td></tr>
{{end}}</table>
{{range .Problems}}<p class="inc">{{.}}</p>{{end}}
</body></html>
`))

func writeAdviceHTML(w io.Writer, res *advice) error {
	p, rep := res.plan, res.rep
	type rec struct {
		R      advise.Recommendation
		Saving string
	}
	data := struct {
		Period, Saving, Currency, Total, HeldHours, HeldAtRates string
		Recs                                                    []rec
		Problems                                                []string
	}{rep.PeriodLabel(), rep.Money(p.SavingMinor), p.Currency.Code, rep.Money(rep.Total), p.HeldHours.FloatString(3), rep.Money(p.ChargedMinor), nil, p.Problems}
	for _, r := range p.Recommendations {
		data.Recs = append(data.Recs, rec{r, rep.Money(r.SavingMinor)})
	}
	if err := adviceHTML.Execute(w, data); err != nil {
		return fmt.Errorf("cannot write advice HTML: %w", err)
	}
	return nil
}

// writeAdviceProm writes the advice as Prometheus text exposition (the
// gpuledger_advice_* series; adviceprom says which).
func writeAdviceProm(w io.Writer, res *advice) error { return adviceprom.Write(w, res.plan) }
