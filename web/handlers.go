package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advicereport"
	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// Handler is the server's HTTP surface: the pages, the files, /metrics,
// /healthz and /readyz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", s.page("index", pageTimeout, s.serveIndex).head(s.headIndex))
	reportTimeout := pageTimeout
	if s.cfg.Prometheus != nil {
		// The page waits for its token queries on top of the rest.
		reportTimeout += min(s.cfg.PrometheusTimeout, maxTokenWait)
	}
	mux.Handle("GET /reports/{file}", s.page("report", reportTimeout, s.serveReport).head(s.headMonth))
	mux.Handle("GET /advice/{file}", s.page("advice", adviceTimeout, s.serveAdvice).head(s.headMonth))
	mux.Handle("GET /glossary", s.page("glossary", pageTimeout, serveGlossary))
	s.allocationRoutes(mux)
	mux.Handle("GET /metrics", s.m.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", s.page("readyz", readyTimeout, s.serveReady))
	mux.Handle("/", s.page("other", pageTimeout, func(_ context.Context, _ http.ResponseWriter, r *http.Request) error {
		return &httpError{http.StatusNotFound, "no page at " + r.URL.Path + ": see / for the months the ledger covers"}
	}))
	return securityHeaders(s.readOnly(mux))
}

// allowed are the methods of every path: serve only reads.
const allowed = "GET, HEAD"

// readOnly answers 405 with an Allow header to any method but GET and
// HEAD, on every path, before anything is read.
func (s *Server) readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", allowed)
		writeError(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed: gpuledger serve only reads (%s)", sanitizeMethod(r.Method), allowed))
		s.m.requests.WithLabelValues("other", strconv.Itoa(http.StatusMethodNotAllowed)).Inc()
	})
}

// sanitizeMethod bounds a client's method for a message.
func sanitizeMethod(m string) string {
	if len(m) > 16 {
		m = m[:16]
	}
	return strings.Map(func(r rune) rune {
		if r < 'A' || r > 'Z' {
			return '?'
		}
		return r
	}, m)
}

// securityHeaders sends the report page's policy on every answer.
func securityHeaders(h http.Handler) http.Handler {
	csp := report.ContentSecurityPolicy()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status code for the request counter.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

type handlerFunc = func(context.Context, http.ResponseWriter, *http.Request) error

// pageHandler is a page: fn answers GET, headFn (when set) HEAD without
// building the body.
type pageHandler struct {
	s          *Server
	name       string
	timeout    time.Duration
	fn, headFn handlerFunc
}

// page runs fn under a deadline, counts the answer and writes an error
// fn returns as a page (HTML routes) or text (files).
func (s *Server) page(name string, timeout time.Duration, fn handlerFunc) *pageHandler {
	return &pageHandler{s: s, name: name, timeout: timeout, fn: fn}
}

// head sets what answers HEAD.
func (p *pageHandler) head(fn handlerFunc) *pageHandler {
	p.headFn = fn
	return p
}

func (p *pageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s, name, timeout := p.s, p.name, p.timeout
	fn := p.fn
	if r.Method == http.MethodHead && p.headFn != nil {
		fn = p.headFn
	}
	{
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		sw := &statusWriter{ResponseWriter: w}
		err := fn(ctx, sw, r)
		if err != nil {
			code, msg := http.StatusInternalServerError, err.Error()
			var he *httpError
			var ue *errUnavailable
			switch {
			case errors.As(err, &he):
				code = he.code
			case errors.As(err, &ue):
				code = http.StatusServiceUnavailable
				msg = "The ledger cannot be read right now (" + ue.err.Error() + "). Try again shortly: the server reconnects on the next request."
			case errors.Is(r.Context().Err(), context.Canceled):
				// The reader hung up: nobody to answer, nothing failed.
				code, msg = statusClientClosed, "the request was cancelled"
			case ctx.Err() != nil:
				code, msg = http.StatusServiceUnavailable, fmt.Sprintf("the answer took longer than %s: try again shortly", timeout)
			}
			msg = RedactURLs(msg)
			if code >= 500 && code != statusClientClosed {
				s.log.Warn("request failed", "path", r.URL.Path, "code", code, "err", RedactURLs(err.Error()))
			}
			writeError(sw, r, code, msg)
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		s.m.requests.WithLabelValues(name, strconv.Itoa(sw.code)).Inc()
	}
}

// statusClientClosed is the code counted for a reader that hung up
// before its answer (nginx's 499).
const statusClientClosed = 499

// headIndex answers HEAD / with the page's type, without building it.
func (s *Server) headIndex(_ context.Context, w http.ResponseWriter, _ *http.Request) error {
	if _, _, err := s.book(); err != nil {
		return err
	}
	if _, err := s.ledgerGen(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return nil
}

// headMonth answers HEAD of a month's page or file with its type, after
// the checks that need no report (a month, started, a ledger file
// there): a HEAD never builds a report.
func (s *Server) headMonth(_ context.Context, w http.ResponseWriter, r *http.Request) error {
	month, suffix := splitFile(r.PathValue("file"))
	if strings.HasPrefix(r.URL.Path, "/advice/") && suffix != fileHTML && suffix != fileJSON {
		return &httpError{http.StatusNotFound, "the advice is a page (/advice/YYYY-MM) or JSON (/advice/YYYY-MM.json)"}
	}
	book, _, err := s.book()
	if err != nil {
		return err
	}
	if _, _, err := s.period(month, book, s.cfg.Now()); err != nil {
		return err
	}
	if _, err := s.ledgerGen(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", fileFormats[suffix].ContentType())
	return nil
}

// writeError answers code with msg: a styled page where a person reads
// HTML, plain text for files and probes.
func writeError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p := r.URL.Path
	if strings.HasSuffix(p, ".csv") || strings.HasSuffix(p, ".json") || p == "/readyz" {
		http.Error(w, msg, code)
		return
	}
	var b bytes.Buffer
	if err := errorTemplate.Execute(&b, struct {
		Style       template.CSS
		CSP, Status string
		Code        int
		Message     string
		Nav         Nav
	}{report.Stylesheet(), report.ContentSecurityPolicy(), http.StatusText(code), code, msg,
		NewNav(p, "error", "", nil, NavLink{Label: http.StatusText(code)})}); err != nil {
		http.Error(w, msg, code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// A month's files, by the URL's suffix.
const (
	fileHTML  = ""
	fileCSV   = ".csv"
	fileJSON  = ".json"
	fileFOCUS = ".focus.csv"
)

// fileFormats are the report formats of a month's files, by suffix.
var fileFormats = map[string]report.Format{
	fileHTML: report.FormatHTML, fileCSV: report.FormatCSV, fileJSON: report.FormatJSON, fileFOCUS: report.FormatFOCUS,
}

// splitFile cuts "2026-03.focus.csv" into the month and the suffix.
func splitFile(name string) (month, suffix string) {
	for _, sfx := range []string{fileFOCUS, fileCSV, fileJSON} {
		if m, ok := strings.CutSuffix(name, sfx); ok {
			return m, sfx
		}
	}
	return name, fileHTML
}

// serveReport writes a month's chargeback exactly as `gpuledger report`
// writes it for the same ledger, book and period.
func (s *Server) serveReport(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	month, suffix := splitFile(r.PathValue("file"))
	now := s.cfg.Now()
	cluster, err := s.viewCluster(r)
	if err != nil {
		return err
	}
	ctx = withCluster(ctx, cluster)
	if book, _, err := s.book(); err != nil {
		return err
	} else if _, _, err := s.period(month, book, now); err != nil {
		return err
	}
	// A closed month is its stored files. Only where the ledger cannot
	// be reached does the month's report kept in memory answer (as for
	// any ended month), or the build's own error: a month closed since
	// was closed from the same rows. Any other failure (a damaged stored
	// bill, a store that keeps no closings) is the answer.
	// A closed month's stored bill is the fleet's: one cluster's is
	// built from the ledger.
	var ue *errUnavailable
	var c *ledger.Closing
	if cluster == "" {
		c, err = s.closedMonth(ctx, month)
	}
	switch {
	case err != nil && !errors.As(err, &ue):
		return err
	case c != nil:
		return s.serveClosed(ctx, w, r, c, suffix)
	}
	mb, err := s.monthBuildOr(ctx, month, now, err, s.cfg.BuildWait)
	var eb *errBuilding
	if errors.As(err, &eb) {
		writeBuilding(w, eb, suffix)
		return nil
	}
	if err != nil {
		return err
	}
	rep := mb.rep
	if suffix == fileHTML || suffix == fileJSON {
		// The files report --prometheus adds its section to.
		if err := s.attachTokens(ctx, rep, month, mb.key.book, now); err != nil {
			return err
		}
		if rep.TokensUnavailable != "" {
			w.Header().Set("X-Gpuledger-Tokens-Unavailable", rep.TokensUnavailable)
		}
	}
	var b bytes.Buffer
	if err := s.writeReport(ctx, &b, mb, fileFormats[suffix]); err != nil {
		return err
	}
	body := b.Bytes()
	if suffix == fileHTML {
		if body, err = s.withMonthNav(ctx, r, body, "report", month); err != nil {
			return err
		}
	}
	writeFile(w, rep, "gpuledger-chargeback-"+month, suffix, body)
	return nil
}

// writeReport writes mb's report in format f to b through report.Write,
// as gpuledger report does. A format that reads the ledger (FOCUS's
// per-device aggregates) is given those kept with the report's build
// (reportDevices): a failed read is answered and counted as every other,
// and an error of the writing itself is the writer's.
func (s *Server) writeReport(ctx context.Context, b *bytes.Buffer, mb monthBuild, f report.Format) error {
	if !f.ReadsLedger() {
		return report.Write(ctx, b, nil, mb.rep, f)
	}
	aggs, err := s.reportDevices(ctx, mb)
	if err != nil {
		return err
	}
	return report.Write(ctx, b, keptDevices{mb.rep, aggs}, mb.rep, f)
}

// keptDevices is a report.Source that answers the one read a FOCUS
// writer makes, its report's per-device aggregates, with those kept
// (reportDevices); any other read is an error, never a silent answer.
type keptDevices struct {
	rep  *report.Report
	aggs []ledger.Aggregate
}

func (k keptDevices) Aggregate(_ context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if !q.ByDevice || q.ByNode || q.Bucket != ledger.BucketDay || !q.From.Equal(k.rep.From) || !q.To.Equal(k.rep.To) || q.Location != k.rep.Book.Location {
		return nil, fmt.Errorf("cannot read ledger aggregates from %s to %s: only the report's per-device day aggregates are kept", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	// Each writer gets its own copy: the kept set is shared.
	return slices.Clone(k.aggs), nil
}

func (keptDevices) Findings(context.Context, time.Time, time.Time, func(attribution.Finding) error) error {
	return errors.New("cannot read findings: only the report's per-device day aggregates are kept")
}

// writeFile sends a month's file with its type and name; a partial
// month says so in a header and in the file's name.
func writeFile(w http.ResponseWriter, rep *report.Report, base, suffix string, body []byte) {
	h := w.Header()
	if note := rep.PartialNote(); note != "" {
		h.Set("X-Gpuledger-Partial", note)
		base += "-partial"
	}
	h.Set("Content-Type", fileFormats[suffix].ContentType())
	// The page is read in place; JSON opens in the browser, CSV downloads.
	switch suffix {
	case fileHTML:
	case fileJSON:
		h.Set("Content-Disposition", `inline; filename="`+base+suffix+`"`)
	default:
		h.Set("Content-Disposition", `attachment; filename="`+base+suffix+`"`)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// adviceFormats are the advice's formats, by suffix.
var adviceFormats = map[string]advicereport.Format{fileHTML: advicereport.FormatHTML, fileJSON: advicereport.FormatJSON}

// serveAdvice writes a month's sharing advice as a page or JSON.
func (s *Server) serveAdvice(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	month, suffix := splitFile(r.PathValue("file"))
	if suffix != fileHTML && suffix != fileJSON {
		return &httpError{http.StatusNotFound, "the advice is a page (/advice/YYYY-MM) or JSON (/advice/YYYY-MM.json)"}
	}
	a, err := s.monthAdvice(ctx, month, s.cfg.Now())
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := advicereport.Write(&b, a, adviceFormats[suffix]); err != nil {
		return err
	}
	body := b.Bytes()
	if suffix == fileHTML {
		body = withExampleBanner(body, a.Report.ExamplePrices())
		if body, err = s.withMonthNav(ctx, r, body, "advice", month); err != nil {
			return err
		}
	}
	writeFile(w, a.Report, "gpuledger-advice-"+month, suffix, body)
	return nil
}

// readyReuse is how long a ledger's answer to the readiness query is
// reused: a probe costs a walk of the embedded ledger's rollup (a second
// of CPU on a large file), so probes, which anyone who reaches the port
// may send, must not cost one each. Kubernetes probes every 10 seconds.
const readyReuse = 5 * time.Second

// serveReady answers 200 when the ledger answers a query. Probes at once
// share one query (a prober hanging up cancels nothing), at most one runs
// at a time, and a success is reused for readyReuse unless a ledger read
// failed since (withStore); the ledger file's identity is checked on
// every probe, so a file gone answers 503 at once.
func (s *Server) serveReady(ctx context.Context, w http.ResponseWriter, _ *http.Request) error {
	gen, err := s.ledgerGen()
	if err != nil {
		return err
	}
	if r := s.ready.Load(); r == nil || r.gen != gen || time.Since(r.at) >= readyReuse || time.Since(r.at) < 0 {
		_, err := s.sharedOn(ctx, s.readySem, fmt.Sprintf("readyz|%d", gen), readyTimeout, func(ctx context.Context) (any, error) {
			now := s.cfg.Now()
			err := s.withStore(ctx, func(st ledger.Store) error {
				_, err := st.Aggregate(ctx, ledger.AggregateQuery{From: now.Add(-time.Hour), To: now, Bucket: ledger.BucketNone})
				return err
			})
			if err != nil {
				return nil, err
			}
			s.ready.Store(&readyAnswer{gen, time.Now()})
			return nil, nil
		})
		if err != nil {
			return err
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ready: the ledger answers\n")
	return nil
}

// readyAnswer is when the ledger of generation gen last answered the
// readiness query (wall clock).
type readyAnswer struct {
	gen uint64
	at  time.Time
}
