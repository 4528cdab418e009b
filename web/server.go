// Package web is `gpuledger serve`: the chargeback as a web app and an
// API. It serves, from a ledger (ClickHouse or an embedded file) and a
// price book, the months the ledger covers with a cost-per-team trend,
// each month's report byte for byte as `gpuledger report` writes it (HTML,
// finance CSV, JSON, FOCUS), the sharing advice, and Prometheus metrics
// (month-to-date charges, the advice series, the server's own health).
//
// Pages are rendered on the server with html/template and the chargeback
// report's stylesheet and Content-Security-Policy: no script, nothing
// fetched, charts as inline SVG. The server holds no broken connection:
// a ledger read that fails retires the store (closed once no request
// reads it), the page answers 503, and the next request opens the ledger
// again; a reader that hangs up retires nothing. Work per request is
// bounded: identical computations are shared, at most
// Config.MaxComputations run at once, and what they build is kept for
// a stated time (server.go's constants).
package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"golang.org/x/sync/singleflight"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuledger/gpuledger/advisor/advicereport"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/billing/tokencost"
	"github.com/gpuledger/gpuledger/ledger"
)

// Bounds of what one request may cost.
const (
	// DefaultMonths is how many months back the index looks.
	DefaultMonths = 24
	// MaxMonths bounds Config.Months.
	MaxMonths = 120
	// trendMonths is the span of the index's cost-per-team chart.
	trendMonths = 12
	// pageTimeout bounds a page or file; adviceTimeout the advice, which
	// reads every container row of the month (seconds for a 100-GPU one).
	pageTimeout   = 30 * time.Second
	adviceTimeout = 2 * time.Minute
	// readyTimeout bounds /readyz.
	readyTimeout = 10 * time.Second
	// endedTTL is how long a built report of an ended month is reused:
	// rows shipped late show within it.
	endedTTL = 2 * time.Minute
	// runningTTL is how long the running month's report, token section
	// and the index's list of months are reused: the running month is
	// rebuilt at most once per runningTTL, whatever the traffic.
	runningTTL = 10 * time.Second
	// maxCached bounds the reports, advice and token sections kept: every
	// month the index can show, for two price book versions.
	maxCached = 2*MaxMonths + 16
	// maxDeviceSets bounds the per-device aggregates kept (reportDevices):
	// one set is a month's rows per GPU, slice and pod, much larger than a
	// report, and the running month's FOCUS file is the one read most.
	maxDeviceSets = 4
	// MaxMaxComputations bounds Config.MaxComputations.
	MaxMaxComputations = 64
	// maxTokenFlights bounds the months whose token queries run at once
	// (each month's queries run one after another).
	maxTokenFlights = 2
	// maxTokenWait bounds what a month's page waits for its token
	// queries, whatever Config.PrometheusTimeout says: the page must be
	// written within the HTTP server's write timeout.
	maxTokenWait = 2 * time.Minute
)

// DefaultMaxComputations is how many reports, advice and lists of months
// are computed at once by default: one fewer than the processors Go runs
// on, at least 1 and at most 4. A computation keeps its processor busy,
// and the one left free answers /metrics, probes and pages already built
// at once: with two processors and 8 clients loading pages, /metrics' p99
// was 99-107 ms at 4 computations and 19-28 ms at 1 (BENCHMARKS.md,
// "serve under load").
var DefaultMaxComputations = max(1, min(4, runtime.GOMAXPROCS(0)-1))

// Config is what a server reads.
type Config struct {
	// Cluster is the cluster the pages bill when a request names none
	// (serve --cluster); empty: the fleet. ?cluster=NAME picks one,
	// ?cluster= the fleet. /metrics is always the fleet's.
	Cluster string
	// Open opens the ledger. It is called again after a read fails, so a
	// ledger that comes back is used again.
	Open func(ctx context.Context) (ledger.Store, error)
	// Prices returns the price book and a version that changes when the
	// book does (BookFile re-reads a file when it changes).
	Prices func() (*pricebook.Book, string, error)
	// Now is the clock (tests fix it); nil is time.Now.
	Now func() time.Time
	// Months is how far back the index looks (default DefaultMonths).
	Months int
	// Version and Revision label gpuledger_build_info.
	Version, Revision string
	// AdviceRefresh is how often the month-to-date advice behind
	// /metrics is recomputed (default 1h); negative: never.
	AdviceRefresh time.Duration
	// Prometheus, when not nil, is where the month's HTML page and JSON
	// read the inference servers' token counters for their cost per token
	// section, as report --prometheus does (docs/tokens.md). A Prometheus
	// that does not answer leaves the section out and the page says why.
	Prometheus tokencost.Querier
	// PrometheusTimeout bounds a page's token queries together (default
	// tokencost.DefaultTimeout, at most maxTokenWait).
	PrometheusTimeout time.Duration
	// RunningTTL is how long the running month's report, token section
	// and the index's months are reused (default runningTTL; negative:
	// rebuilt on every request).
	RunningTTL time.Duration
	// LedgerFile is the embedded ledger's file ("" for ClickHouse): its
	// identity (device and inode) is checked on each request, so a file
	// replaced under the server is reopened and a deleted one is
	// unavailable (store.go).
	LedgerFile string
	// MaxComputations bounds the reports, advice and lists of months
	// computed at once (default DefaultMaxComputations, at most
	// MaxMaxComputations); identical requests share one computation.
	MaxComputations int
	// Collectors are registered on /metrics beside serve's own series
	// (serve --quota's quota gauges and recorder health).
	Collectors []prometheus.Collector
	Log        *slog.Logger
	// BuildWait is how long a month's page or file waits for its report
	// before answering that it is being built (default DefaultBuildWait;
	// rebuild.go); the build goes on in the background.
	BuildWait time.Duration
	// RecordPrices, when set, records each new price book in the ledger
	// as it is loaded (gpuledger serve; pricebooks.go): report.RecordBook
	// on a store it may write.
	RecordPrices func(ctx context.Context, book *pricebook.Book, now time.Time) (ledger.PriceBookRecord, bool, error)
}

// Server serves the pages; Handler is its HTTP surface.
type Server struct {
	cfg Config
	log *slog.Logger
	// books are the price book versions recorded (pricebooks.go).
	books bookRecorder

	// mu guards the open ledger (store.go): cur is nil until opened and
	// after it is retired; fileID is the identity of the file cur was
	// opened on (Config.LedgerFile); gen counts the files seen.
	mu     sync.Mutex
	cur    *storeRef
	fileID os.FileInfo
	gen    uint64
	// inUse counts the stores acquired and not yet released; shut is set
	// by Close, after which nothing opens the ledger again.
	inUse int
	shut  bool

	cacheMu sync.Mutex
	reports map[cacheKey]cached[*report.Report]
	advice  map[cacheKey]cached[*advicereport.Advice]
	tokens  map[cacheKey]cached[*report.Tokens]
	months  map[cacheKey]cached[map[string]time.Time]
	devices map[cacheKey]cached[deviceSet]
	// mtd is the newest month-to-date report, which /metrics serves
	// without waiting for a page.
	mtd     atomic.Pointer[mtdReport]
	mtdBusy atomic.Bool

	// flight merges identical computations in flight; sem bounds the
	// computations of reports, advice and the index's months at once,
	// tokenSem the months' token queries at once.
	flight   singleflight.Group
	sem      chan struct{}
	tokenSem chan struct{}
	// adviceSem lets one advice be computed at a time: each reads a
	// month of container rows.
	adviceSem chan struct{}
	// readySem lets one readiness query run at a time; ready is its last
	// success (serveReady).
	readySem chan struct{}
	ready    atomic.Pointer[readyAnswer]
	// builds are the months' computations in progress (rebuild.go).
	builds sync.Map // cacheKey -> *building

	m *metrics
}

// cacheKey names a computed value: the month, the price book's version
// (its digest) and the ledger file's generation (store.go).
type cacheKey struct {
	month, book string
	gen         uint64
	cluster     string // the cluster billed; "" the fleet
}

func (k cacheKey) String() string {
	return fmt.Sprintf("%s|%s|%d|%s", k.month, k.book, k.gen, k.cluster)
}

type cached[T any] struct {
	v  T
	at time.Time // wall clock
	// complete: the month had ended when v was built.
	complete bool
}

// mtdReport is a month-to-date report and what it was built from.
type mtdReport struct {
	key cacheKey
	rep *report.Report
	at  time.Time // wall clock
}

// New checks cfg and returns a server; Run starts its background work.
func New(cfg Config) (*Server, error) {
	if cfg.Open == nil || cfg.Prices == nil {
		return nil, errors.New("web: a ledger and a price book are needed")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Months == 0 {
		cfg.Months = DefaultMonths
	}
	if cfg.Months < 1 || cfg.Months > MaxMonths {
		return nil, fmt.Errorf("web: %d months: want 1 to %d", cfg.Months, MaxMonths)
	}
	if cfg.MaxComputations == 0 {
		cfg.MaxComputations = DefaultMaxComputations
	}
	if cfg.MaxComputations < 1 || cfg.MaxComputations > MaxMaxComputations {
		return nil, fmt.Errorf("web: %d computations at once: want 1 to %d", cfg.MaxComputations, MaxMaxComputations)
	}
	if cfg.RunningTTL == 0 {
		cfg.RunningTTL = runningTTL
	}
	if cfg.RunningTTL > time.Minute {
		return nil, fmt.Errorf("web: the running month kept %s: want at most 1m", cfg.RunningTTL)
	}
	if cfg.BuildWait <= 0 {
		cfg.BuildWait = DefaultBuildWait
	}
	if cfg.AdviceRefresh == 0 {
		cfg.AdviceRefresh = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.PrometheusTimeout <= 0 {
		cfg.PrometheusTimeout = tokencost.DefaultTimeout
	}
	if cfg.Prometheus != nil {
		cfg.Prometheus = redactedQuerier{cfg.Prometheus}
	}
	s := &Server{cfg: cfg, log: cfg.Log.With("component", "serve"), reports: map[cacheKey]cached[*report.Report]{},
		advice: map[cacheKey]cached[*advicereport.Advice]{}, tokens: map[cacheKey]cached[*report.Tokens]{},
		months: map[cacheKey]cached[map[string]time.Time]{}, devices: map[cacheKey]cached[deviceSet]{}, sem: make(chan struct{}, cfg.MaxComputations),
		tokenSem: make(chan struct{}, maxTokenFlights), adviceSem: make(chan struct{}, 1), readySem: make(chan struct{}, 1)}
	s.m = newMetrics(s)
	return s, nil
}

// errUnavailable marks a ledger that cannot be read: 503.
type errUnavailable struct{ err error }

func (e *errUnavailable) Error() string { return "cannot read the ledger: " + e.err.Error() }
func (e *errUnavailable) Unwrap() error { return e.err }

// httpError is an answer other than 200, with what to tell the reader.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

var monthPattern = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// period resolves a month of the URL in the book's zone: 400 when it is
// not a month, 404 when it has not started.
func (s *Server) period(month string, book *pricebook.Book, now time.Time) (from, to time.Time, err error) {
	if !monthPattern.MatchString(month) {
		return from, to, &httpError{http.StatusBadRequest, fmt.Sprintf("%q is not a month: want YYYY-MM, such as %s", month, now.In(book.Location).Format("2006-01"))}
	}
	if from, to, err = report.Month(month, book.Location); err != nil {
		return from, to, &httpError{http.StatusBadRequest, err.Error()}
	}
	if !from.Before(now) {
		return from, to, &httpError{http.StatusNotFound, fmt.Sprintf("%s has not started yet: it starts %s", month, from.Format(time.RFC3339))}
	}
	return from, to, nil
}

// book loads the price book; a book that does not load is the server's
// error (500), named but without its path (BookFile's errors name the
// file by its base name only).
func (s *Server) book() (*pricebook.Book, string, error) {
	b, v, err := s.cfg.Prices()
	if err != nil {
		s.log.Warn("the price book does not load", "err", err)
		return nil, "", &httpError{http.StatusInternalServerError, "cannot load the price book: " + err.Error()}
	}
	return b, v, nil
}

// monthReport is the chargeback of a month, generated at now, as
// `gpuledger report --period month` builds it: 404 when the ledger has no
// data in it. The returned report is the caller's to change.
func (s *Server) monthReport(ctx context.Context, month string, now time.Time) (*report.Report, error) {
	rep, _, err := s.monthReportVersion(ctx, month, now)
	return rep, err
}

// monthReportVersion is monthReport and the version of the price book
// it was built with. A report of an ended month is reused for endedTTL,
// the running month's for runningTTL; requests for the same report at
// the same time share one computation.
func (s *Server) monthReportVersion(ctx context.Context, month string, now time.Time) (*report.Report, string, error) {
	b, err := s.monthBuild(ctx, month, now)
	if err != nil {
		return nil, "", err
	}
	return b.rep, b.key.book, nil
}

// monthBuild is a month's report as monthReportVersion returns it, with
// the kept report it is a copy of and the key it is kept under: what is
// derived from one build (the FOCUS files' per-device aggregates) is kept
// with it (reportDevices).
type monthBuild struct {
	rep, base *report.Report
	key       cacheKey
}

// monthBuild is monthReportVersion's work.
func (s *Server) monthBuild(ctx context.Context, month string, now time.Time) (monthBuild, error) {
	return s.monthBuildOr(ctx, month, now, nil, 0)
}

// monthBuildOr is monthBuild, but with a non-nil orErr it only answers
// from memory: a month not kept (or no longer fresh) is orErr, and the
// ledger is not read. With wait > 0 it waits that long for a build, then
// answers *errBuilding while the build goes on (rebuild.go).
func (s *Server) monthBuildOr(ctx context.Context, month string, now time.Time, orErr error, wait time.Duration) (monthBuild, error) {
	book, version, err := s.book()
	if err != nil {
		return monthBuild{}, err
	}
	gen, err := s.ledgerGen()
	if err != nil {
		return monthBuild{}, err
	}
	from, to, err := s.period(month, book, now)
	if err != nil {
		return monthBuild{}, err
	}
	cluster := clusterOf(ctx)
	key := cacheKey{month, version, gen, cluster}
	ended := !now.Before(to)
	s.cacheMu.Lock()
	c, ok := s.reports[key]
	s.cacheMu.Unlock()
	var rep *report.Report
	if fresh(c, ok, ended, s.cfg.RunningTTL) {
		rep = c.v
	} else if orErr != nil {
		return monthBuild{}, orErr
	} else {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if wait > 0 {
			wctx, cancel = context.WithTimeout(ctx, wait)
		}
		defer cancel()
		v, err := s.shared(wctx, "report|"+key.String(), monthBuildTimeout, func(ctx context.Context) (any, error) {
			b := s.startBuilding(key)
			defer s.doneBuilding(key)
			var rep *report.Report
			err := s.withStore(ctx, func(st ledger.Store) error {
				upTo := to
				if now.Before(upTo) {
					upTo = now // the running month: its hours so far
				}
				s.upkeep(ctx, st, b, month, from, upTo)
				var err error
				rep, err = s.buildReport(ctx, st, book, version, month, from, to, now, cluster)
				return err
			})
			if err != nil {
				return nil, err
			}
			at := time.Now()
			s.cacheMu.Lock()
			putBounded(s.reports, key, cached[*report.Report]{rep, at, ended})
			s.cacheMu.Unlock()
			if !ended && cluster == "" && month == now.In(book.Location).Format("2006-01") {
				s.mtd.Store(&mtdReport{key, rep, at})
			}
			return rep, nil
		})
		if err != nil {
			if wait > 0 && err == wctx.Err() && ctx.Err() == nil {
				return monthBuild{}, s.stillBuilding(key)
			}
			return monthBuild{}, err
		}
		rep = v.(*report.Report)
	}
	cp := *rep
	cp.GeneratedAt = now
	if cp.Empty() {
		return monthBuild{}, &httpError{http.StatusNotFound, fmt.Sprintf("no bill for %s: the ledger has no data in it (%s)", month, report.NoUsageMessage)}
	}
	return monthBuild{&cp, rep, key}, nil
}

// deviceSet is the per-device aggregates read for one build of a month's
// report.
type deviceSet struct {
	base *report.Report
	aggs []ledger.Aggregate
}

// reportDevices is the period's per-device day aggregates (what the FOCUS
// files are written from: report.LoadDevices) for the build b is a copy
// of. They are read once per build, shared by the requests asking at
// once and bounded like every computation, and kept until the month's
// report is rebuilt: each FOCUS request reading them again walked the
// ledger's per-device rollup (most of serve's CPU under load,
// BENCHMARKS.md), and kept with the build they are as fresh as the report
// they are written with. A read that fails is not kept.
func (s *Server) reportDevices(ctx context.Context, b monthBuild) ([]ledger.Aggregate, error) {
	s.cacheMu.Lock()
	c, ok := s.devices[b.key]
	s.cacheMu.Unlock()
	if ok && c.v.base == b.base {
		return c.v.aggs, nil
	}
	// The kept build's address names it: the flight holds it, so no other
	// build can take that address while the flight runs.
	v, err := s.shared(ctx, fmt.Sprintf("devices|%s|%p", b.key, b.base), pageTimeout, func(ctx context.Context) (any, error) {
		r := *b.base
		if err := s.withStore(ctx, func(st ledger.Store) error { return report.LoadDevices(ctx, st, &r) }); err != nil {
			return nil, err
		}
		s.cacheMu.Lock()
		putBoundedN(s.devices, b.key, cached[deviceSet]{deviceSet{b.base, r.Devices}, time.Now(), false}, maxDeviceSets)
		s.cacheMu.Unlock()
		return r.Devices, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]ledger.Aggregate), nil
}

// monthAdvice is the sharing advice of a month, one computed at a time,
// shared by the requests asking for it at once.
func (s *Server) monthAdvice(ctx context.Context, month string, now time.Time) (*advicereport.Advice, error) {
	rep, version, err := s.monthReportVersion(ctx, month, now)
	if err != nil {
		return nil, err
	}
	gen, err := s.ledgerGen()
	if err != nil {
		return nil, err
	}
	key := cacheKey{month, version, gen, clusterOf(ctx)}
	ended := !now.Before(rep.To)
	s.cacheMu.Lock()
	c, ok := s.advice[key]
	s.cacheMu.Unlock()
	var a *advicereport.Advice
	if fresh(c, ok, ended, s.cfg.RunningTTL) {
		a = c.v
	} else {
		v, err := s.shared(ctx, "advice|"+key.String(), adviceTimeout, func(ctx context.Context) (any, error) {
			select {
			case s.adviceSem <- struct{}{}:
				defer func() { <-s.adviceSem }()
			case <-ctx.Done():
				return nil, &httpError{http.StatusServiceUnavailable, "the server is busy computing other advice: try again shortly"}
			}
			var a *advicereport.Advice
			err := s.withStore(ctx, func(st ledger.Store) error {
				var err error
				a, err = advicereport.For(ctx, st, rep.Book, rep, nil, advise.Options{})
				return err
			})
			if err != nil {
				return nil, err
			}
			s.cacheMu.Lock()
			putBounded(s.advice, key, cached[*advicereport.Advice]{a, time.Now(), ended})
			s.cacheMu.Unlock()
			return a, nil
		})
		if err != nil {
			return nil, err
		}
		a = v.(*advicereport.Advice)
	}
	cp := *a
	r := *cp.Report
	r.GeneratedAt = now
	cp.Report = &r
	return &cp, nil
}

// tokenSection is a month's cost per token section, or why there is none.
type tokenSection struct {
	t           *report.Tokens
	unavailable string
}

// attachTokens gives a month's report its cost per token section, as
// report --prometheus builds it for the same ledger, book and month: the
// tokens counted from Config.Prometheus, priced from the ledger. A
// section is reused like the month's report (endedTTL, runningTTL), and
// requests for the same month at once share one set of queries, at most
// maxTokenFlights months at a time, all of a month's queries within
// Config.PrometheusTimeout (at most maxTokenWait). Any failure of the
// section, Prometheus's or the pricing's, is no error of the page: the
// report is left without the section, says why in TokensUnavailable, and
// the failure is logged and counted as the token queries' (not kept, so
// the next request asks again); it is never the ledger's 503.
func (s *Server) attachTokens(ctx context.Context, rep *report.Report, month, version string, now time.Time) error {
	if s.cfg.Prometheus == nil {
		return nil
	}
	gen, err := s.ledgerGen()
	if err != nil {
		return err
	}
	key := cacheKey{month, version, gen, clusterOf(ctx)}
	ended := !now.Before(rep.To)
	s.cacheMu.Lock()
	c, ok := s.tokens[key]
	s.cacheMu.Unlock()
	if fresh(c, ok, ended, s.cfg.RunningTTL) {
		rep.Tokens = c.v
		return nil
	}
	wait := min(s.cfg.PrometheusTimeout, maxTokenWait)
	from, to, book := rep.From, rep.To, rep.Book
	v, err := s.sharedOn(ctx, s.tokenSem, "tokens|"+key.String(), wait, func(ctx context.Context) (any, error) {
		sec := s.tokenSection(ctx, from, to, book, month)
		if sec.t != nil {
			s.cacheMu.Lock()
			putBounded(s.tokens, key, cached[*report.Tokens]{sec.t, time.Now(), ended})
			s.cacheMu.Unlock()
		}
		return sec, nil
	})
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			// Too many months' queries at once: the page goes without.
			rep.TokensUnavailable = he.msg
			return nil
		}
		return err // the reader went away: nobody to tell
	}
	sec := v.(tokenSection)
	rep.Tokens, rep.TokensUnavailable = sec.t, sec.unavailable
	return nil
}

// tokenSection counts and prices a month's tokens through
// tokencost.Build; a failure of either is the section's reason, logged and
// counted.
func (s *Server) tokenSection(ctx context.Context, from, to time.Time, book *pricebook.Book, month string) tokenSection {
	prom := RedactURLs(s.cfg.Prometheus.String())
	src := &pricingSource{s: s}
	t, err := tokencost.Build(ctx, s.cfg.Prometheus, src, book, from, to)
	var pe *tokencost.PrometheusError
	if errors.As(err, &pe) {
		s.m.promFailures.Inc()
		s.log.Warn("the month's page is served without its cost per token section: Prometheus did not answer",
			"month", month, "prometheus", prom, "err", RedactURLs(err.Error()))
		return tokenSection{unavailable: tokensUnavailable(prom, err)}
	}
	s.m.promSuccess.SetToCurrentTime()
	if err != nil {
		if src.err != nil {
			err = src.err // the ledger was not there to read: say so, not what the pricing made of it
		}
		s.m.promFailures.Inc()
		s.log.Warn("the month's page is served without its cost per token section: it could not be priced",
			"month", month, "err", RedactURLs(err.Error()))
		return tokenSection{unavailable: tokensUnpriced(err)}
	}
	return tokenSection{t: t}
}

// pricingSource is the ledger as the token section's pricing reads it:
// acquired only once Prometheus has answered, so that slow token queries
// hold no store. Its failures are the section's: it neither retires the
// store nor counts as the ledger's failure. err keeps why the store could
// not be had.
type pricingSource struct {
	s   *Server
	err error
}

func (p *pricingSource) with(ctx context.Context, fn func(report.Source) error) error {
	if _, err := p.s.ledgerGen(); err != nil {
		p.err = err
		return err
	}
	ref, err := p.s.acquire(ctx)
	if err != nil {
		p.err = err
		return err
	}
	defer p.s.release(ref, false)
	return fn(ref.st)
}

func (p *pricingSource) Aggregate(ctx context.Context, q ledger.AggregateQuery) (out []ledger.Aggregate, err error) {
	err = p.with(ctx, func(src report.Source) error {
		out, err = src.Aggregate(ctx, q)
		return err
	})
	return out, err
}

func (p *pricingSource) Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	return p.with(ctx, func(src report.Source) error { return src.Findings(ctx, from, to, fn) })
}

// maxNote bounds the reason a page gives for its missing token section.
const maxNote = 300

// oneLine is err's message on one line of bounded length, URLs redacted.
func oneLine(err error) string {
	why := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, RedactURLs(err.Error()))
	why = strings.Join(strings.Fields(why), " ")
	if len(why) > maxNote {
		why = strings.ToValidUTF8(why[:maxNote], "") + "..."
	}
	return why
}

// tokensUnavailable is the one line a page shows in place of its token
// section: which Prometheus, and why, on one line of bounded length.
func tokensUnavailable(prom string, err error) string {
	return fmt.Sprintf("Prometheus %s did not answer its token queries (%s). The rest of the month is complete; reload to try again.", RedactURLs(prom), oneLine(err))
}

// tokensUnpriced is the line for tokens counted that could not be priced.
func tokensUnpriced(err error) string {
	return fmt.Sprintf("the tokens counted could not be priced (%s). The rest of the month is complete; reload to try again.", oneLine(err))
}

// putBounded adds v, dropping the oldest entry when the map is full.
func putBounded[T any](m map[cacheKey]cached[T], k cacheKey, v cached[T]) {
	putBoundedN(m, k, v, maxCached)
}

// putBoundedN is putBounded for a map of at most n entries.
func putBoundedN[T any](m map[cacheKey]cached[T], k cacheKey, v cached[T], n int) {
	if _, ok := m[k]; !ok && len(m) >= n {
		var oldest cacheKey
		first := true
		for k2, c := range m {
			if first || c.at.Before(m[oldest].at) {
				oldest, first = k2, false
			}
		}
		delete(m, oldest)
	}
	m[k] = v
}

// BookFile loads the price book at path, and again whenever the file's
// content changes (its SHA-256 digest, the book's version: an edit that
// keeps the size and modification time still shows on the next request).
// A book that no longer loads is an error until fixed; errors name the
// file by its base name only, so a page never shows where it lies.
func BookFile(path string) func() (*pricebook.Book, string, error) {
	var mu sync.Mutex
	var book *pricebook.Book
	var version string
	name := filepath.Base(path)
	return func() (*pricebook.Book, string, error) {
		data, err := readBounded(path, maxBookBytes)
		if err != nil {
			return nil, "", fmt.Errorf("cannot read the price book %s: %w", name, err)
		}
		sum := sha256.Sum256(data)
		v := "sha256:" + hex.EncodeToString(sum[:])
		mu.Lock()
		defer mu.Unlock()
		if book != nil && v == version {
			return book, version, nil
		}
		b, err := pricebook.Parse(name, data)
		if err != nil {
			return nil, "", err
		}
		book, version = b, v
		return book, version, nil
	}
}

// maxBookBytes bounds the price book read on each request (the book's
// own bound is 1 MiB; one more byte says it is over).
const maxBookBytes = 1<<20 + 1

// readBounded reads at most limit bytes of path; its errors do not name
// the path.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, pathless(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, pathless(err)
	}
	return data, nil
}

// pathless is err without the path an *os.PathError carries.
func pathless(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// FixedBook serves one price book that never changes (the demo's).
func FixedBook(b *pricebook.Book) func() (*pricebook.Book, string, error) {
	return func() (*pricebook.Book, string, error) { return b, "fixed", nil }
}

// clusterKey carries the cluster a request bills (viewCluster) to the
// month's build, whose cache it keys.
type clusterKey struct{}

// withCluster is ctx billing cluster ("" the fleet).
func withCluster(ctx context.Context, cluster string) context.Context {
	return context.WithValue(ctx, clusterKey{}, cluster)
}

// clusterOf is the cluster ctx bills: "" (the fleet) unless withCluster
// set one.
func clusterOf(ctx context.Context) string {
	c, _ := ctx.Value(clusterKey{}).(string)
	return c
}

// viewCluster is the cluster a page request bills: ?cluster=NAME, the
// fleet for ?cluster= (empty), else the server's default view
// (Config.Cluster). A name that is not a cluster name is a 400.
func (s *Server) viewCluster(r *http.Request) (string, error) {
	q := r.URL.Query()
	if !q.Has("cluster") {
		return s.cfg.Cluster, nil
	}
	c := q.Get("cluster")
	if c == "" {
		return "", nil
	}
	if err := ledger.CheckClusterName(c); err != nil {
		return "", &httpError{http.StatusBadRequest, "?cluster: " + err.Error()}
	}
	return c, nil
}
