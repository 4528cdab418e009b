package web

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promcollectors "github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuledger/gpuledger/advisor/adviceprom"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
)

// scrapeTimeout bounds the month-to-date report a scrape builds.
const scrapeTimeout = 20 * time.Second

type metrics struct {
	s   *Server
	reg *prometheus.Registry
	// own is every collector reg gathers, registered as one.
	own            collectors
	requests       *prometheus.CounterVec
	ledgerFailures prometheus.Counter
	ledgerSuccess  prometheus.Gauge
	// promFailures and promSuccess: the token queries of the month's
	// pages (registered only with Config.Prometheus).
	promFailures prometheus.Counter
	promSuccess  prometheus.Gauge

	// The newest month-to-date advice series and their freshness.
	advice adviceprom.Refresher
}

// collectors is serve's own collectors as one: the registry gathers one
// collector in one goroutine, where for several it starts a goroutine
// each and yields the processor (runtime.Gosched) between them, and a
// scrape that yields waits behind every page computation ready to run
// (BENCHMARKS.md: /metrics under load). What is gathered is the same.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

var chargeDesc = prometheus.NewDesc("gpuledger_charge_month_to_date",
	"What the current calendar month's bill charges so far, per team and GPU model, in the price book's currency (the finance CSV's lines added up; team \"\" is the platform and rounding lines).",
	[]string{"team", "gpu_model", "currency", "cluster"}, nil)

var monthStartDesc = prometheus.NewDesc("gpuledger_charge_month_start_timestamp_seconds",
	"Start of the month gpuledger_charge_month_to_date is for (Unix seconds).", nil, nil)

func newMetrics(s *Server) *metrics {
	m := &metrics{s: s, reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuledger_serve_requests_total",
		Help: "HTTP requests answered by gpuledger serve, by page and status code."}, []string{"handler", "code"})
	m.ledgerFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuledger_serve_ledger_read_failures_total",
		Help: "Ledger opens and reads that failed (the next request opens the ledger again)."})
	m.ledgerSuccess = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuledger_serve_ledger_read_success_timestamp_seconds",
		Help: "When a ledger read last succeeded (Unix seconds; 0 before the first)."})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_build_info",
		Help: "The gpuledger build serving the bill (always 1)."}, []string{"version", "revision"})
	build.WithLabelValues(orUnknown(s.cfg.Version), orUnknown(s.cfg.Revision)).Set(1)
	own := collectors{m.requests, m.ledgerFailures, m.ledgerSuccess, build, chargeCollector{s},
		promcollectors.NewGoCollector(), promcollectors.NewProcessCollector(promcollectors.ProcessCollectorOpts{})}
	m.promFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuledger_serve_prometheus_query_failures_total",
		Help: "Months' pages whose token queries to Prometheus failed or timed out (the page is served without its cost per token section)."})
	m.promSuccess = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuledger_serve_prometheus_query_success_timestamp_seconds",
		Help: "When a month's token queries to Prometheus last succeeded (Unix seconds; 0 before the first)."})
	if s.cfg.Prometheus != nil {
		own = append(own, m.promFailures, m.promSuccess)
	}
	// What serve's caller watches besides the ledger (serve --quota: the
	// quota gauges and the recorder's health).
	own = append(own, s.cfg.Collectors...)
	m.reg.MustRegister(own)
	m.own = own
	return m
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// chargeCollector exposes the newest month-to-date report's lines per
// team and model. A scrape never waits for a page: it serves the report
// the pages or the previous scrape built (at most runningTTL old, or
// mtdMaxAge while the ledger does not answer), and a stale one starts a
// rebuild in the background for the next scrape. Only a scrape finding
// none for the month and book (the first one, a new month, a new book)
// waits for it, at most scrapeTimeout. A month without data yet exposes
// nothing.
type chargeCollector struct{ s *Server }

// mtdMaxAge is how long month-to-date charges are served while they
// cannot be rebuilt (a ledger down): then they are left out.
const mtdMaxAge = 5 * time.Minute

func (c chargeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- chargeDesc
	ch <- monthStartDesc
	describeGaps(ch)
}

func (c chargeCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.s.cfg.Now()
	book, version, err := c.s.book()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(chargeDesc, err)
		return
	}
	gen, err := c.s.ledgerGen()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(chargeDesc, err)
		return
	}
	month := now.In(book.Location).Format("2006-01")
	key := cacheKey{month: month, book: version, gen: gen} // the fleet's
	var rep *report.Report
	if m := c.s.mtd.Load(); m != nil && m.key == key && time.Since(m.at) < mtdMaxAge {
		rep = m.rep
		if time.Since(m.at) >= c.s.cfg.RunningTTL {
			go c.s.refreshMTD(month, now)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		rep, err = c.s.monthReport(ctx, month, now)
		var he *httpError
		if errors.As(err, &he) && he.code == http.StatusNotFound {
			return
		}
		if err != nil {
			ch <- prometheus.NewInvalidMetric(chargeDesc, err)
			return
		}
	}
	if rep.Empty() {
		return
	}
	// Per cluster: the fleet's bill is its clusters' added, so summing
	// without(cluster) is the fleet's charge.
	one := attribution.DefaultCluster
	if len(rep.Clusters) == 1 {
		one = rep.Clusters[0].Cluster
	}
	type key2 struct{ team, model, cluster string }
	sums := map[key2]int64{}
	for _, l := range rep.Lines {
		sums[key2{l.Team, l.GPUModel, cmp.Or(l.Cluster, one)}] += l.Amount
	}
	scale := math.Pow10(book.Currency.MinorUnit)
	for k, v := range sums {
		ch <- prometheus.MustNewConstMetric(chargeDesc, prometheus.GaugeValue, float64(v)/scale, k.team, k.model, book.Currency.Code, k.cluster)
	}
	ch <- prometheus.MustNewConstMetric(monthStartDesc, prometheus.GaugeValue, float64(rep.From.Unix()))
	collectGaps(ch, rep)
}

// refreshMTD rebuilds the month-to-date report in the background (one
// at a time: the rebuild is shared with any page asking for it).
func (s *Server) refreshMTD(month string, now time.Time) {
	if !s.mtdBusy.CompareAndSwap(false, true) {
		return
	}
	defer s.mtdBusy.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if _, err := s.monthReport(ctx, month, now); err != nil {
		s.log.Debug("month-to-date charges not rebuilt; /metrics keeps the previous ones", "err", RedactURLs(err.Error()))
	}
}

// handler serves the registry, then the newest advice series and their
// freshness, in the text format.
func (m *metrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mfs, err := m.reg.Gather()
		var b bytes.Buffer
		enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if e := enc.Encode(mf); e != nil && err == nil {
				err = e
			}
		}
		if err != nil {
			// A family that failed (the ledger is down) is left out;
			// the rest, the health series above all, still serve.
			m.s.log.Warn("metrics gathered with errors", "err", RedactURLs(err.Error()))
		}
		if _, err := m.advice.WriteTo(&b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		m.s.m.requests.WithLabelValues("metrics", "200").Inc()
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		_, _ = w.Write(b.Bytes())
	})
}

// RefreshAdvice advises on the month to date and keeps the series for
// /metrics; a failure keeps the previous advice and is counted.
func (s *Server) RefreshAdvice(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, adviceTimeout)
	defer cancel()
	now := s.cfg.Now()
	return s.m.advice.Refresh(ctx, now, func(ctx context.Context) (*advise.Plan, error) {
		book, _, err := s.book()
		if err != nil {
			return nil, err
		}
		a, err := s.monthAdvice(ctx, now.In(book.Location).Format("2006-01"), now)
		if err != nil {
			return nil, err
		}
		return a.Plan, nil
	})
}

// Run builds the month-to-date charges of /metrics, then refreshes the
// month-to-date advice every Config.AdviceRefresh until ctx ends.
func (s *Server) Run(ctx context.Context) {
	// The month-to-date charges are built once at start, so the first
	// scrape does not wait for them either.
	if book, _, err := s.book(); err == nil {
		now := s.cfg.Now()
		s.refreshMTD(now.In(book.Location).Format("2006-01"), now)
	}
	if s.cfg.AdviceRefresh < 0 {
		return
	}
	adviceprom.Every(ctx, s.cfg.AdviceRefresh, func() {
		if err := s.RefreshAdvice(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("month-to-date advice not refreshed; /metrics keeps the previous one", "err", err)
		}
	})
}
