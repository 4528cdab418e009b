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
// a ledger read that fails closes the store, the page answers 503, and
// the next request opens the ledger again.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuledger/gpuledger/advisor/advicereport"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/billing/tokencost"
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
	// endedTTL is how long a built report of an ended month is reused:
	// rows shipped late show within it.
	endedTTL = 2 * time.Minute
	// maxCached bounds the reports and advice kept.
	maxCached = 64
	// maxTokenWait bounds what a month's page waits for its token
	// queries, whatever Config.PrometheusTimeout says: the page must be
	// written within the HTTP server's write timeout.
	maxTokenWait = 2 * time.Minute
)

// Config is what a server reads.
type Config struct {
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
	// Collectors are registered on /metrics beside serve's own series
	// (serve --quota's quota gauges and recorder health).
	Collectors []prometheus.Collector
	Log        *slog.Logger
}

// Server serves the pages; Handler is its HTTP surface.
type Server struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex
	st ledger.Store // nil until opened, and after a failed read

	cacheMu sync.Mutex
	reports map[cacheKey]cached[*report.Report]
	advice  map[cacheKey]cached[*advicereport.Advice]
	tokens  map[cacheKey]cached[*report.Tokens]
	// adviceSem lets one advice be computed at a time: each reads a
	// month of container rows.
	adviceSem chan struct{}

	m *metrics
}

type cacheKey struct{ month, book string }

type cached[T any] struct {
	v  T
	at time.Time
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
	if cfg.AdviceRefresh == 0 {
		cfg.AdviceRefresh = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.PrometheusTimeout <= 0 {
		cfg.PrometheusTimeout = tokencost.DefaultTimeout
	}
	s := &Server{cfg: cfg, log: cfg.Log.With("component", "serve"), reports: map[cacheKey]cached[*report.Report]{},
		advice: map[cacheKey]cached[*advicereport.Advice]{}, tokens: map[cacheKey]cached[*report.Tokens]{}, adviceSem: make(chan struct{}, 1)}
	s.m = newMetrics(s)
	return s, nil
}

// Close closes the ledger.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil
	}
	err := s.st.Close()
	s.st = nil
	return err
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

// withStore runs fn on the open ledger, opening it first when needed. A
// failure closes the store, so the next request opens a fresh one.
func (s *Server) withStore(ctx context.Context, fn func(ledger.Store) error) error {
	s.mu.Lock()
	st := s.st
	if st == nil {
		var err error
		if st, err = s.cfg.Open(ctx); err != nil {
			s.mu.Unlock()
			s.m.ledgerFailures.Inc()
			return &errUnavailable{err}
		}
		s.st = st
	}
	s.mu.Unlock()
	if err := fn(st); err != nil {
		var he *httpError
		if errors.As(err, &he) {
			return err
		}
		s.m.ledgerFailures.Inc()
		s.mu.Lock()
		if s.st == st {
			s.st = nil
			_ = st.Close()
		}
		s.mu.Unlock()
		return &errUnavailable{err}
	}
	s.m.ledgerSuccess.SetToCurrentTime()
	return nil
}

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
// error (500), named.
func (s *Server) book() (*pricebook.Book, string, error) {
	b, v, err := s.cfg.Prices()
	if err != nil {
		return nil, "", &httpError{http.StatusInternalServerError, "cannot load the price book: " + err.Error()}
	}
	return b, v, nil
}

// monthReport is the chargeback of a month, generated at now, as
// `gpuledger report --period month` builds it: 404 when the ledger has no
// data in it. A report of an ended month is reused for endedTTL; the
// returned report is the caller's to change.
func (s *Server) monthReport(ctx context.Context, month string, now time.Time) (*report.Report, error) {
	rep, _, err := s.monthReportVersion(ctx, month, now)
	return rep, err
}

// monthReportVersion is monthReport and the version of the price book
// it was built with.
func (s *Server) monthReportVersion(ctx context.Context, month string, now time.Time) (*report.Report, string, error) {
	book, version, err := s.book()
	if err != nil {
		return nil, "", err
	}
	from, to, err := s.period(month, book, now)
	if err != nil {
		return nil, "", err
	}
	key := cacheKey{month, version}
	ended := !now.Before(to)
	s.cacheMu.Lock()
	c, ok := s.reports[key]
	s.cacheMu.Unlock()
	var rep *report.Report
	if ok && ended && now.Sub(c.at) < endedTTL && now.Sub(c.at) >= 0 {
		rep = c.v
	} else {
		err = s.withStore(ctx, func(st ledger.Store) error {
			var err error
			rep, err = report.Build(ctx, st, book, from, to)
			return err
		})
		if err != nil {
			return nil, "", err
		}
		if ended {
			s.cacheMu.Lock()
			putBounded(s.reports, key, cached[*report.Report]{rep, now})
			s.cacheMu.Unlock()
		}
	}
	cp := *rep
	cp.GeneratedAt = now
	if cp.Empty() {
		return nil, "", &httpError{http.StatusNotFound, fmt.Sprintf("no bill for %s: the ledger has no data in it (%s)", month, report.NoUsageMessage)}
	}
	return &cp, version, nil
}

// monthAdvice is the sharing advice of a month, one computed at a time.
func (s *Server) monthAdvice(ctx context.Context, month string, now time.Time) (*advicereport.Advice, error) {
	rep, err := s.monthReport(ctx, month, now)
	if err != nil {
		return nil, err
	}
	_, version, err := s.book()
	if err != nil {
		return nil, err
	}
	key := cacheKey{month, version}
	ended := !now.Before(rep.To)
	select {
	case s.adviceSem <- struct{}{}:
		defer func() { <-s.adviceSem }()
	case <-ctx.Done():
		return nil, &httpError{http.StatusServiceUnavailable, "the server is busy computing other advice: try again shortly"}
	}
	s.cacheMu.Lock()
	c, ok := s.advice[key]
	s.cacheMu.Unlock()
	if ok && ended && now.Sub(c.at) < endedTTL && now.Sub(c.at) >= 0 {
		cp := *c.v
		r := *cp.Report
		r.GeneratedAt = now
		cp.Report = &r
		return &cp, nil
	}
	var a *advicereport.Advice
	err = s.withStore(ctx, func(st ledger.Store) error {
		var err error
		a, err = advicereport.For(ctx, st, rep.Book, rep, nil, advise.Options{})
		return err
	})
	if err != nil {
		return nil, err
	}
	if ended {
		s.cacheMu.Lock()
		putBounded(s.advice, key, cached[*advicereport.Advice]{a, now})
		s.cacheMu.Unlock()
	}
	return a, nil
}

// attachTokens gives a month's report its cost per token section, as
// report --prometheus builds it for the same ledger, book and month: the
// tokens counted from Config.Prometheus, priced from the ledger. A
// section of an ended month is reused for endedTTL per price book
// version, like the month's report. A Prometheus that does not answer
// within Config.PrometheusTimeout is no error: the report is left
// without the section, says why in TokensUnavailable, and the failure is
// logged and counted. A ledger that fails is the page's error, as
// everywhere.
func (s *Server) attachTokens(ctx context.Context, rep *report.Report, month, version string, now time.Time) error {
	if s.cfg.Prometheus == nil {
		return nil
	}
	key := cacheKey{month, version}
	ended := !now.Before(rep.To)
	s.cacheMu.Lock()
	c, ok := s.tokens[key]
	s.cacheMu.Unlock()
	if ok && ended && now.Sub(c.at) < endedTTL && now.Sub(c.at) >= 0 {
		rep.Tokens = c.v
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, min(s.cfg.PrometheusTimeout, maxTokenWait))
	counted, err := tokencost.Count(tctx, s.cfg.Prometheus, rep.From, rep.To)
	cancel()
	if err != nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err() // the reader went away: nobody to tell, nothing to count
	}
	if err != nil {
		s.m.promFailures.Inc()
		s.log.Warn("the month's page is served without its cost per token section: Prometheus did not answer",
			"month", month, "prometheus", s.cfg.Prometheus.String(), "err", err)
		rep.TokensUnavailable = tokensUnavailable(s.cfg.Prometheus.String(), err)
		return nil
	}
	s.m.promSuccess.SetToCurrentTime()
	var t *report.Tokens
	err = s.withStore(ctx, func(st ledger.Store) error {
		var err error
		t, err = counted.Join(ctx, st, rep.Book)
		return err
	})
	if err != nil {
		return err
	}
	if ended {
		s.cacheMu.Lock()
		putBounded(s.tokens, key, cached[*report.Tokens]{t, now})
		s.cacheMu.Unlock()
	}
	rep.Tokens = t
	return nil
}

// maxNote bounds the reason a page gives for its missing token section.
const maxNote = 300

// tokensUnavailable is the one line a page shows in place of its token
// section: which Prometheus, and why, on one line of bounded length.
func tokensUnavailable(prom string, err error) string {
	why := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, err.Error())
	why = strings.Join(strings.Fields(why), " ")
	if len(why) > maxNote {
		why = strings.ToValidUTF8(why[:maxNote], "") + "..."
	}
	return fmt.Sprintf("Prometheus %s did not answer its token queries (%s). The rest of the month is complete; reload to try again.", prom, why)
}

// putBounded adds v, dropping the oldest entry when the map is full.
func putBounded[T any](m map[cacheKey]cached[T], k cacheKey, v cached[T]) {
	if _, ok := m[k]; !ok && len(m) >= maxCached {
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
// size or modification time changes, so a price book change shows on the
// next request. A book that no longer loads is an error until fixed.
func BookFile(path string) func() (*pricebook.Book, string, error) {
	var mu sync.Mutex
	var book *pricebook.Book
	var version string
	return func() (*pricebook.Book, string, error) {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, "", fmt.Errorf("cannot read price book: %w", err)
		}
		v := fmt.Sprintf("%s@%d/%d", path, fi.ModTime().UnixNano(), fi.Size())
		mu.Lock()
		defer mu.Unlock()
		if book != nil && v == version {
			return book, version, nil
		}
		b, err := pricebook.Load(path)
		if err != nil {
			return nil, "", err
		}
		book, version = b, v
		return book, version, nil
	}
}

// FixedBook serves one price book that never changes (the demo's).
func FixedBook(b *pricebook.Book) func() (*pricebook.Book, string, error) {
	return func() (*pricebook.Book, string, error) { return b, "fixed", nil }
}
