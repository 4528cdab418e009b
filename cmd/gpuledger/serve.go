package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/tokencost"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/quota/quotaservice"
	"github.com/gpuledger/gpuledger/web"
)

const serveUsageText = `usage: gpuledger serve --ledger DSN --prices FILE [--listen :8080]
                       [--months 24] [--advice-refresh 1h] [--web.config.file FILE]
                       [--max-computations N] [--drain-timeout 30s]
                       [--prometheus URL [--prometheus-timeout D]]
                       [--quota [--quota-interval 1m] [--kubeconfig FILE]]
                       [--close-after-days N] [--cluster NAME]

Serves the chargeback as a web app and an API, from the ledger and a price
book (docs/serve.md):

  /                         the months the ledger covers, with their totals,
                            per-team totals and a cost-per-team chart
  /reports/YYYY-MM          the month's report, as gpuledger report --format html
  /reports/YYYY-MM.csv      ... the finance CSV; .json; .focus.csv (FOCUS)
  /advice/YYYY-MM           the sharing advice (HTML); .json
  /metrics                  month-to-date charges per team and GPU model, the
                            advice series, the server's own health
  /healthz, /readyz         alive; ready when the ledger answers

  --cluster    the cluster the pages bill when a request names none (env
               GPULEDGER_CLUSTER; default the fleet); ?cluster=NAME on a
               page or file picks one, ?cluster= the fleet
  --ledger     ledger DSN (env GPULEDGER_LEDGER): PATH, file:PATH or
               clickhouse://user:password@host:9000/database
  --prices     the price book (env GPULEDGER_PRICES), re-read when its content
               changes
  --listen     address to serve on (env GPULEDGER_LISTEN; default :8080)
  --months     how many months back the index looks (default 24, at most 120)
  --advice-refresh  how often the month-to-date advice behind /metrics is
               recomputed (Prometheus duration; default 1h; 0 never)
  --max-computations  reports, advice and month lists computed at once
               (default one fewer than the CPUs, 1 to 4; at most 64); identical requests share one
  --drain-timeout  on SIGTERM or SIGINT, how long pages in flight may
               finish before the server stops (default 30s, 1s to 5m)
  --web.config.file  exporter-toolkit web config: TLS, basic auth
               (env GPULEDGER_WEB_CONFIG)
  --prometheus  the month's page and JSON carry report --prometheus's
               "tokens" section, each inference workload's exact GPU cost
               per million input and output tokens, its servers' token
               counters read from this Prometheus (env GPULEDGER_PROMETHEUS;
               docs/tokens.md); unreachable leaves the section out, and the
               page says why
  --prometheus-timeout  bound on each token query (default 60s)
  --quota      record the cluster's GPU quota (ResourceQuotas, and Kueue,
               Volcano and KAI queues where installed) into the ledger as
               it changes, and serve gpuledger_team_quota_gpus on /metrics
               (docs/quota.md); needs a ClickHouse ledger and read access
               to those objects (the chart's serve.quota.enabled). When the
               price book prices carbon by a node label
               (energy.carbonIntensityByNodeLabel), it also records each
               node's value of that label (docs/report.md), on the same
               interval; that needs read access to nodes
  --quota-interval  how often the quota objects are compared with the
               ledger (default 1m, 10s to 1h)
  --kubeconfig  kubeconfig for --quota (env KUBECONFIG); empty means the
               in-cluster config
  --close-after-days  close each month this many days after it ends in the
               price book's time zone (1 to 60; default 0, never): its bill
               is stored in the ledger and served as stored from then on, as
               gpuledger close does (docs/report.md); checked at start and
               hourly; a month ever reopened is left to gpuledger close
`

type serveFlags struct {
	periodFlags
	listen, webConfig string
	months            int
	adviceRefresh     time.Duration
	// maxComputations and drain: serve's bounds under load and at stop.
	maxComputations int
	drain           time.Duration
	// prometheus and promTimeout: the month pages' cost per token section.
	prometheus  string
	promTimeout time.Duration
	// quota, quotaInterval and kubeconfig: serve --quota.
	// ledgerFile is the embedded ledger's file, whose identity serve
	// follows ("" for ClickHouse).
	ledgerFile    string
	quota         bool
	quotaInterval time.Duration
	kubeconfig    string
	// cluster: the pages' default view ("" the fleet).
	cluster string
	// closeAfterDays: serve closes months this long after their end.
	closeAfterDays int
}

func parseServeFlags(args []string) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	// Only the ledger and the book: serve serves every month the ledger
	// covers, so it takes no period (a URL names the month).
	fs.StringVar(&f.prices, "prices", envDefault("GPULEDGER_PRICES", ""), "price book (env GPULEDGER_PRICES)")
	fs.StringVar(&f.ledger, "ledger", envDefault("GPULEDGER_LEDGER", ""), "ledger DSN (env GPULEDGER_LEDGER)")
	fs.StringVar(&f.listen, "listen", envDefault("GPULEDGER_LISTEN", ":8080"), "address to serve on")
	fs.IntVar(&f.months, "months", web.DefaultMonths, "months back the index looks")
	fs.IntVar(&f.maxComputations, "max-computations", web.DefaultMaxComputations, "reports computed at once")
	fs.DurationVar(&f.drain, "drain-timeout", defaultDrain, "how long pages in flight may finish at stop")
	fs.StringVar(&f.webConfig, "web.config.file", envDefault("GPULEDGER_WEB_CONFIG", ""), "exporter-toolkit web config file")
	f.adviceRefresh = time.Hour
	fs.Func("advice-refresh", "advice refresh period (default 1h)", promDurationFlag(&f.adviceRefresh))
	fs.StringVar(&f.prometheus, "prometheus", envDefault("GPULEDGER_PROMETHEUS", ""), "Prometheus URL for the cost per token section (env GPULEDGER_PROMETHEUS)")
	fs.DurationVar(&f.promTimeout, "prometheus-timeout", tokencost.DefaultTimeout, "bound on each token query")
	fs.BoolVar(&f.quota, "quota", false, "record the cluster's GPU quota into the ledger")
	fs.DurationVar(&f.quotaInterval, "quota-interval", time.Minute, "how often quota objects are compared with the ledger")
	fs.StringVar(&f.kubeconfig, "kubeconfig", envDefault("KUBECONFIG", ""), "kubeconfig for --quota; empty means in-cluster config")
	fs.IntVar(&f.closeAfterDays, "close-after-days", 0, "close each month this many days after it ends (0: never)")
	fs.StringVar(&f.cluster, "cluster", envDefault("GPULEDGER_CLUSTER", ""), "the cluster the pages bill when a request names none (env GPULEDGER_CLUSTER); default the fleet")
	if err := parseFlags(fs, args, serveUsageText); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	case f.prices == "":
		return f, errors.New("serve needs --prices FILE (or GPULEDGER_PRICES)")
	case f.ledger == "":
		return f, errors.New("serve needs --ledger DSN or GPULEDGER_LEDGER")
	case f.listen == "":
		return f, errors.New("serve needs --listen ADDR")
	case f.months < 1 || f.months > web.MaxMonths:
		return f, fmt.Errorf("serve: --months %d: want 1 to %d", f.months, web.MaxMonths)
	case f.maxComputations < 1 || f.maxComputations > web.MaxMaxComputations:
		return f, fmt.Errorf("serve: --max-computations %d: want 1 to %d", f.maxComputations, web.MaxMaxComputations)
	case f.drain < time.Second || f.drain > maxDrain:
		return f, fmt.Errorf("serve: --drain-timeout %s: want 1s to %s", f.drain, maxDrain)
	case f.adviceRefresh != 0 && f.adviceRefresh < time.Minute:
		return f, fmt.Errorf("serve: --advice-refresh %s: want 0 (never) or at least 1m", f.adviceRefresh)
	case f.promTimeout <= 0 || f.promTimeout > 10*time.Minute:
		return f, fmt.Errorf("serve: --prometheus-timeout %s: want more than 0 and at most 10m", f.promTimeout)
	case f.closeAfterDays < 0 || f.closeAfterDays > maxCloseAfterDays:
		return f, fmt.Errorf("serve: --close-after-days %d: want 0 (never) to %d", f.closeAfterDays, maxCloseAfterDays)
	case f.quotaInterval < quota.MinRecordInterval || f.quotaInterval > quota.MaxRecordInterval:
		return f, fmt.Errorf("serve: --quota-interval %s: want %s to %s", f.quotaInterval, quota.MinRecordInterval, quota.MaxRecordInterval)
	}
	if f.cluster != "" {
		if err := ledger.CheckClusterName(f.cluster); err != nil {
			return f, fmt.Errorf("serve: --cluster: %w", err)
		}
	}
	if f.prometheus != "" {
		if _, err := tokencost.NewClient(f.prometheus, f.promTimeout); err != nil {
			// The URL may carry credentials: never echoed.
			return f, fmt.Errorf("serve --prometheus: %s", web.RedactURLs(err.Error()))
		}
	}
	d, err := ledger.ParseDSN(f.ledger)
	if err != nil {
		return f, err
	}
	if f.quota && d.Scheme != ledger.SchemeClickHouse {
		return f, errQuotaNeedsClickHouse
	}
	return f, nil
}

// openServedLedger opens the ledger serve reads. It is the one place
// serve opens it, so that a read-only open is one change.
func openServedLedger(ctx context.Context, dsn string) (ledger.Store, error) {
	return ledger.Open(ctx, dsn, storeOpeners)
}

// newWebServer is the web app over dsn and a price book source; opts
// set what only some callers give (serve --prometheus).
func newWebServer(dsn string, prices func() (*pricebook.Book, string, error), months int, adviceRefresh time.Duration,
	opts ...func(*web.Config)) (*web.Server, error) {
	if adviceRefresh == 0 {
		adviceRefresh = -1
	}
	cfg := web.Config{
		Open:   func(ctx context.Context) (ledger.Store, error) { return openServedLedger(ctx, dsn) },
		Prices: prices, Now: now, Months: months, Version: version, Revision: revision, AdviceRefresh: adviceRefresh,
	}
	// An embedded ledger's file is followed by its identity: replaced,
	// it is reopened; deleted, it is unavailable.
	if d, err := ledger.ParseDSN(dsn); err == nil && d.Scheme == ledger.SchemeFile {
		cfg.LedgerFile = d.Path
	}
	for _, o := range opts {
		o(&cfg)
	}
	return web.New(cfg)
}

// withPrometheus gives the month pages their cost per token section from
// the Prometheus at url, each query bounded by timeout.
func withPrometheus(url string, timeout time.Duration) (func(*web.Config), error) {
	prom, err := tokencost.NewClient(url, timeout)
	if err != nil {
		return nil, fmt.Errorf("serve --prometheus: %s", web.RedactURLs(err.Error()))
	}
	return func(c *web.Config) { c.Prometheus, c.PrometheusTimeout = prom, timeout }, nil
}

func runServe(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseServeFlags(args)
	if err != nil {
		return err
	}
	// A file ledger that is not there is a wrong --ledger, not a ledger
	// still to come: serving 503 "try again shortly" forever would hide it.
	if d, err := ledger.ParseDSN(f.ledger); err == nil && d.Scheme == ledger.SchemeFile {
		if _, err := os.Stat(d.Path); err != nil {
			return fmt.Errorf("serve: cannot use the ledger file %s: %w (check --ledger; the collector or gpuledger demo writes it)", d.Path, err)
		}
	}
	// At start the book's errors name its whole path, for the operator;
	// the pages' name its base name only.
	if _, err := pricebook.Load(f.prices); err != nil {
		return err
	}
	prices := web.BookFile(f.prices)
	opts := []func(*web.Config){func(c *web.Config) { c.MaxComputations, c.RecordPrices = f.maxComputations, bookRecorder(f.ledger) }}
	if f.prometheus != "" {
		o, err := withPrometheus(f.prometheus, f.promTimeout)
		if err != nil {
			return err
		}
		opts = append(opts, o)
	}
	var qs *quotaservice.Service
	if f.quota {
		// The team label is the book's at start: the quota objects' teams
		// are read with the label the ledger's teams were.
		book, _, _ := prices()
		if qs, err = newQuotaService(f.ledger, f.kubeconfig, book.TeamLabel, carbonNodeLabel(book), f.cluster, f.quotaInterval); err != nil {
			return err
		}
		opts = append(opts, func(c *web.Config) { c.Collectors = append(c.Collectors, qs.Collectors()...) })
	}
	if f.cluster != "" {
		opts = append(opts, func(c *web.Config) { c.Cluster = f.cluster })
	}
	srv, err := newWebServer(f.ledger, prices, f.months, f.adviceRefresh, opts...)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := recordServedPrices(ctx, srv); err != nil {
		return err
	}
	if qs != nil {
		qctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); qs.Run(qctx) }()
		defer func() { cancel(); <-done }()
	}
	if f.closeAfterDays > 0 {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); runAutoClose(cctx, f.ledger, f.prices, f.closeAfterDays) }()
		defer func() { cancel(); <-done }()
	}
	return serveWebDrain(ctx, srv, f.listen, f.webConfig, f.drain, stdout)
}

// carbonNodeLabel is the node label the book prices carbon by, which
// serve --quota records; "" when it prices none. Like the team label, it
// is the book's at start.
func carbonNodeLabel(book *pricebook.Book) string {
	if book.Energy == nil || book.Energy.CarbonIntensityByNodeLabel == nil {
		return ""
	}
	return book.Energy.CarbonIntensityByNodeLabel.Label
}

// defaultDrain is how long pages in flight may finish once serve is told
// to stop: a page's own deadline (30 s), and within Kubernetes' default
// grace period when the chart adds its preStop margin; maxDrain bounds
// --drain-timeout.
const (
	defaultDrain = 30 * time.Second
	maxDrain     = 5 * time.Minute
)

// serveWeb is serveWebDrain with the default drain bound.
func serveWeb(ctx context.Context, srv *web.Server, listen, webConfig string, stdout io.Writer) error {
	return serveWebDrain(ctx, srv, listen, webConfig, defaultDrain, stdout)
}

// serveWebDrain serves the web app on listen until ctx ends, refreshing
// its advice in the background, and drains for drain: once ctx ends, the
// listener closes, the pages in flight have up to drain to finish, and
// only then does it return (and the ledger close).
func serveWebDrain(ctx context.Context, srv *web.Server, listen, webConfig string, drain time.Duration, stdout io.Writer) error {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 3 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	// Bound before it says it serves: a taken address is an error, never
	// a "Serving on" line followed by one.
	ln, err := bindWithWebConfig(listen, webConfig)
	if err != nil {
		return err
	}
	slog.Info("serving the chargeback", "listen", listen)
	fmt.Fprintf(stdout, "Serving the chargeback on %s (Ctrl-C to stop)\n", displayURL(listen))
	// The listener's own stop waits a few seconds only; serve shuts its
	// server down itself, so a slow page in flight is finished, not
	// dropped.
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	drained := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
		case <-serveCtx.Done():
			drained <- nil
			return
		}
		slog.Info("stopping: draining the pages in flight", "bound", drain)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
		defer cancel()
		err := hs.Shutdown(dctx)
		if err != nil {
			_ = hs.Close()
			err = fmt.Errorf("cannot drain the pages in flight within %s: %w", drain, err)
		}
		drained <- err
	}()
	err = serveListener(serveCtx, hs, ln, webConfig)
	if ctx.Err() == nil {
		stopServe()
	}
	derr := <-drained
	stopServe()
	if err == nil {
		err = derr
	}
	return err
}

// displayURL is a browsable URL for a listen address.
func displayURL(listen string) string {
	if len(listen) > 0 && listen[0] == ':' {
		return "http://localhost" + listen + "/"
	}
	return "http://" + listen + "/"
}
