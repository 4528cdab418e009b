package web

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/billing/allocation"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

var (
	//go:embed openapi.json
	openAPI []byte
	//go:embed explore.html.tmpl
	exploreHTML     string
	exploreTemplate = pageTemplate("explore", exploreHTML)
)

// allocationRoutes registers the allocation API, its OpenAPI document
// and the drill-down pages (docs/serve.md, "The allocation API").
func (s *Server) allocationRoutes(mux *http.ServeMux) {
	mux.Handle("GET /api/v1/allocation", s.api("allocation", s.serveAllocation(false)))
	mux.Handle("GET /api/v1/allocation.csv", s.api("allocation", s.serveAllocation(true)))
	mux.HandleFunc("GET /api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	mux.Handle("GET /explore", s.page("explore", pageTimeout, s.serveExplore))
}

// apiError is the API's error body: what is wrong, and the parameter
// when a parameter is.
type apiError struct {
	Error     string `json:"error"`
	Parameter string `json:"parameter,omitempty"`
}

// api runs fn under pageTimeout and answers its error as JSON: 400
// naming the parameter for bad input, never a 500 for it.
func (s *Server) api(name string, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
		defer cancel()
		sw := &statusWriter{ResponseWriter: w}
		if err := fn(ctx, sw, r); err != nil {
			code, body := http.StatusInternalServerError, apiError{Error: err.Error()}
			var pe *allocation.ParamError
			var he *httpError
			var ue *errUnavailable
			switch {
			case errors.As(err, &pe):
				code, body = http.StatusBadRequest, apiError{Error: pe.Error(), Parameter: pe.Param}
			case errors.As(err, &he):
				code = he.code
			case errors.As(err, &ue):
				code = http.StatusServiceUnavailable
			case errors.Is(r.Context().Err(), context.Canceled):
				code = statusClientClosed
			case ctx.Err() != nil:
				code, body.Error = http.StatusServiceUnavailable, fmt.Sprintf("the answer took longer than %s: narrow the query or try again shortly", pageTimeout)
			}
			body.Error = RedactURLs(body.Error)
			if code >= 500 && code != statusClientClosed {
				s.log.Warn("request failed", "path", r.URL.Path, "code", code, "err", body.Error)
			}
			b, _ := json.Marshal(body)
			sw.Header().Set("Content-Type", "application/json")
			sw.WriteHeader(code)
			_, _ = sw.Write(append(b, '\n'))
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		s.m.requests.WithLabelValues(name, strconv.Itoa(sw.code)).Inc()
	})
}

// allocation answers a parsed query, shared with identical queries at
// once and bounded like every computation.
func (s *Server) allocation(ctx context.Context, v url.Values) (*allocation.Answer, error) {
	book, version, err := s.book()
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	q, err := allocation.Parse(v, book.Location, now)
	if err != nil {
		return nil, err
	}
	gen, err := s.ledgerGen()
	if err != nil {
		return nil, err
	}
	var dims []string
	for _, d := range q.Aggregate {
		dims = append(dims, string(d))
	}
	key := fmt.Sprintf("allocation|%s|%d|%d|%d|%s|%s|%s|%d", version, gen, q.From.UnixNano(), q.To.UnixNano(),
		strings.Join(dims, ","), q.Step, allocation.FormatFilter(q.Filter), now.Unix())
	v2, err := s.shared(ctx, key, pageTimeout, func(ctx context.Context) (any, error) {
		var a *allocation.Answer
		var pe *allocation.ParamError
		err := s.withStore(ctx, func(st ledger.Store) error {
			var err error
			a, err = allocation.Run(ctx, st, book, q, now)
			if errors.As(err, &pe) {
				// Too large an answer: the client's to narrow, and the
				// store is sound (an httpError does not retire it).
				return &httpError{http.StatusBadRequest, err.Error()}
			}
			return err
		})
		if pe != nil {
			return pe, err // every request sharing this one gets pe
		}
		return a, err
	})
	if err != nil {
		if pe, ok := v2.(*allocation.ParamError); ok {
			return nil, pe
		}
		return nil, err
	}
	a := v2
	return a.(*allocation.Answer), nil
}

func (s *Server) serveAllocation(csv bool) handlerFunc {
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
		a, err := s.allocation(ctx, r.URL.Query())
		if err != nil {
			return err
		}
		// The answer is made whole before a byte goes out, so a failure
		// is an error page, not half an answer.
		var body io.WriterTo
		if csv {
			var b bytes.Buffer
			if err := allocation.WriteCSV(&b, a); err != nil {
				return err
			}
			body = &b
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="allocation.csv"`)
		} else {
			j, err := allocation.EncodeJSON(&a.Result)
			if err != nil {
				return fmt.Errorf("cannot write the answer: %w", err)
			}
			body = j
			w.Header().Set("Content-Type", "application/json")
		}
		if a.Window.Partial {
			w.Header().Set("X-Gpuledger-Partial", "true")
		}
		_, err = body.WriteTo(w)
		return err
	}
}

// drill is the drill-down's levels: a team's namespaces, their
// workloads, their pods.
var drill = []allocation.Dim{allocation.Team, allocation.Namespace, allocation.Workload, allocation.Pod}

// exploreRow is one entry of a drill-down page.
type exploreRow struct {
	Name, Href                       string
	Held, Used, Efficiency, Idle     string
	Energy, Charge, IdleShare, Total string
	Special                          bool
}

// serveExplore is a drill-down page: the same query as the API (one
// level of team, namespace, workload, pod at a time), a date form, and
// the view as CSV. Its links are relative, so it works behind a prefix.
func (s *Server) serveExplore(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	in := r.URL.Query()
	level := allocation.Dim(in.Get("aggregate"))
	if level == "" {
		level = allocation.Team
	}
	i := slices.Index(drill, level)
	if i < 0 {
		return &httpError{http.StatusBadRequest, fmt.Sprintf("aggregate: a page shows one of team, namespace, workload or pod (the API groups by any fields: api/v1/allocation)")}
	}
	window := in.Get("window")
	if f, t := in.Get("from"), in.Get("to"); f != "" || t != "" {
		// The form's dates: from the first day to the last, both included.
		td, err := time.Parse(time.DateOnly, t)
		if _, ferr := time.Parse(time.DateOnly, f); ferr != nil || err != nil {
			return &httpError{http.StatusBadRequest, "from, to: want two dates YYYY-MM-DD, the first and last day shown"}
		}
		window = f + "," + td.AddDate(0, 0, 1).Format(time.DateOnly)
	}
	v := url.Values{"aggregate": {string(level)}}
	if window != "" {
		v.Set("window", window)
	}
	if f := in.Get("filter"); f != "" {
		v.Set("filter", f)
	}
	a, err := s.allocation(ctx, v)
	if err != nil {
		var pe *allocation.ParamError
		if errors.As(err, &pe) {
			return &httpError{http.StatusBadRequest, pe.Error()}
		}
		return err
	}
	rep := a.Report
	win := a.Query.From.Format(time.RFC3339) + "," + a.Query.To.Format(time.RFC3339)
	link := func(d allocation.Dim, filter map[allocation.Dim][]string) string {
		q := url.Values{"window": {win}, "aggregate": {string(d)}}
		if f := allocation.FormatFilter(filter); f != "" {
			q.Set("filter", f)
		}
		return "explore?" + q.Encode()
	}
	crumbs := []NavLink{{Label: "Teams", Href: link(allocation.Team, nil)}}
	path := map[allocation.Dim][]string{}
	for _, d := range drill[:i] {
		vs := a.Query.Filter[d]
		if len(vs) != 1 {
			break
		}
		path[d] = vs
		crumbs = append(crumbs, NavLink{Label: string(d) + " " + vs[0], Href: link(drill[slices.Index(drill, d)+1], clone(path))})
	}
	var rows []exploreRow
	for _, e := range a.Sets[0].Entries {
		row := exploreRow{Name: e.Name, Held: string(e.HeldHours), Used: string(e.UsedHours), Idle: string(e.IdleHours),
			Energy: string(e.EnergyKWh), Charge: string(e.Charge), IdleShare: string(e.IdleShare), Total: string(e.Total)}
		if e.Efficiency != nil {
			row.Efficiency = string(*e.Efficiency)
		}
		row.Special = e.Name == allocation.Platform || e.Name == allocation.Rounding
		if !row.Special && i+1 < len(drill) {
			f := clone(a.Query.Filter)
			f[level] = []string{e.Name}
			row.Href = link(drill[i+1], f)
		}
		rows = append(rows, row)
	}
	csvQ := url.Values{"window": {win}, "aggregate": {string(level)}}
	if f := allocation.FormatFilter(a.Query.Filter); f != "" {
		csvQ.Set("filter", f)
	}
	last := a.Query.To.Add(-time.Nanosecond)
	// The page itself is the last crumb: it links nowhere.
	crumbs[len(crumbs)-1].Href = ""
	month := ""
	if m := a.Query.From.Format("2006-01"); calendarMonth(a.Query.From, a.Query.To) {
		month = m
	}
	var b bytes.Buffer
	err = exploreTemplate.Execute(&b, map[string]any{
		"Nav":   NewNav(r.URL.Path, "explore", month, s.navMonths(ctx), crumbs...),
		"Style": report.Stylesheet(), "CSP": report.ContentSecurityPolicy(), "Level": string(level),
		"Rows": rows, "Window": a.Window, "Currency": a.Currency, "Total": string(a.Total),
		"Policy": a.Policy, "Idle": a.Idle, "Source": a.Source,
		"From": a.Query.From.Format(time.DateOnly), "To": last.Format(time.DateOnly),
		"Filter": allocation.FormatFilter(a.Query.Filter), "Aggregate": string(level),
		"CSV": "api/v1/allocation.csv?" + csvQ.Encode(), "JSON": "api/v1/allocation?" + csvQ.Encode(),
		"Empty": rep.Empty(),
	})
	if err != nil {
		return fmt.Errorf("cannot render the page: %w", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write(b.Bytes())
	return err
}

func clone(f map[allocation.Dim][]string) map[allocation.Dim][]string {
	out := map[allocation.Dim][]string{}
	for d, vs := range f {
		out[d] = slices.Clone(vs)
	}
	return out
}

// calendarMonth says whether [from, to) is one calendar month in from's
// zone: its page's header then links that month's report and files.
func calendarMonth(from, to time.Time) bool {
	y, m, d := from.Date()
	return d == 1 && from.Hour() == 0 && from.Minute() == 0 && from.Second() == 0 && from.Nanosecond() == 0 &&
		to.Equal(time.Date(y, m+1, 1, 0, 0, 0, 0, from.Location()))
}
