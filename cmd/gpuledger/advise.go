package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advicereport"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
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
	fs.StringVar(&f.format, "format", string(advicereport.FormatText), "text, json, html or prom")
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
	if _, err := advicereport.ParseFormat(f.format); err != nil {
		return f, fmt.Errorf("advise: --format %q: want %s", f.format, advicereport.FormatNames())
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
	res.Report.GeneratedAt = now()
	if err := advicereport.Write(w, res, advicereport.Format(f.format)); err != nil {
		return err
	}
	slog.Info("advice written", "period", res.Report.PeriodLabel(), "recommendations", len(res.Plan.Recommendations),
		"saving", res.Report.Money(res.Plan.SavingMinor), "currency", book.Currency.Code, "took", time.Since(began).Round(time.Millisecond))
	return commit(true)
}

// open reads --pods (when given) and opens --ledger.
func (f *adviseFlags) open(ctx context.Context) ([]advise.Pod, ledger.Store, error) {
	var pods []advise.Pod
	if f.pods != "" {
		var err error
		if pods, err = advicereport.LoadPods(f.pods); err != nil {
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

// buildAdvice builds the chargeback of [from, to) and advises on it.
func buildAdvice(ctx context.Context, st ledger.Store, book *pricebook.Book, from, to time.Time, pods []advise.Pod, opt advise.Options) (*advicereport.Advice, error) {
	return advicereport.Build(ctx, st, book, from, to, pods, opt)
}
