// Package allocation answers the allocation API (serve's
// /api/v1/allocation and its drill-down pages): the bill of any window,
// grouped by any of team, namespace, workload, pod, container, node, GPU
// model and sharing mode, filtered on the same fields and cut into steps.
//
// It never prices anything itself. Each answer is billing/report's
// chargeback (report.BuildDated) over a source that hands the report its
// day aggregates at a finer grain: the extra fields of a grouping (pod,
// container, node, workload) ride in the aggregate's namespace, so the
// report's policy, idle sharing and rounding apply unchanged, line by line,
// and the lines are then added up per group. The money of any grouping
// therefore adds up to the report's total for the window.
package allocation

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/calendar"
)

// Dim is a field entries are grouped and filtered by.
type Dim string

// The fields of the API, in the order an entry's name lists them.
const (
	Team        Dim = "team"
	Namespace   Dim = "namespace"
	Workload    Dim = "workload"
	Pod         Dim = "pod"
	Container   Dim = "container"
	Node        Dim = "node"
	GPUModel    Dim = "gpu_model"
	SharingMode Dim = "sharing_mode"
	// Cluster is the cluster a line was billed in (ledger.AggregateQuery's
	// cluster): a fleet of several is billed cluster by cluster, as
	// report.BuildFleet bills it.
	Cluster Dim = "cluster"
)

// Dims are the fields, in order.
var Dims = []Dim{Team, Namespace, Workload, Pod, Container, Node, GPUModel, SharingMode, Cluster}

// Steps are the series steps, by name.
const (
	StepNone  = ""
	StepHour  = "hour"
	StepDay   = "day"
	StepWeek  = "week"
	StepMonth = "month"
)

// Bounds of one query: whatever a client sends, one answer is bounded.
const (
	MaxParamLen   = 1024 // bytes of one parameter's value
	MaxFilters    = 32   // field:value terms of a filter
	MaxValueLen   = 253  // bytes of one filter value (a Kubernetes name)
	MaxSteps      = 800  // sets of a series (a 31-day month of hours is 744)
	MaxRelDays    = 400  // N of a relative window "Nd"
	MaxWindowDays = 400  // span of any window
)

// Platform and Rounding are the key values of lines no team holds:
// capacity charged to the platform, and the report's one rounding line.
const (
	Platform = "__platform__"
	Rounding = "__rounding__"
)

// Query is one parsed request.
type Query struct {
	From, To  time.Time // the window, in the book's zone
	Window    string    // as asked
	Aggregate []Dim     // at least one, no repeats
	Step      string
	// Filter keeps the entries whose every filtered field has one of its
	// values (values of one field are alternatives, fields all apply).
	Filter map[Dim][]string
}

// ParamError is a bad parameter: the API answers 400 naming it.
type ParamError struct {
	Param, Msg string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

func bad(param, format string, a ...any) *ParamError {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, a...)}
}

// Params are the query parameters the API reads; any other is refused.
var Params = []string{"window", "aggregate", "step", "filter"}

// Parse reads a request's parameters. Windows are cut in loc (the price
// book's zone) and relative ones end at now. Every error is a
// *ParamError.
func Parse(v url.Values, loc *time.Location, now time.Time) (Query, error) {
	for k, vs := range v {
		if !slices.Contains(Params, k) {
			return Query{}, bad(clip(k), "unknown parameter: want %s", strings.Join(Params, ", "))
		}
		if len(vs) > 1 {
			return Query{}, bad(k, "given %d times: give it once", len(vs))
		}
		if len(vs[0]) > MaxParamLen {
			return Query{}, bad(k, "%d bytes long: at most %d", len(vs[0]), MaxParamLen)
		}
	}
	var q Query
	var err error
	q.Window = v.Get("window")
	if q.Window == "" {
		q.Window = "month"
	}
	if q.From, q.To, err = ParseWindow(q.Window, loc, now); err != nil {
		return Query{}, err
	}
	if q.Aggregate, err = parseAggregate(v.Get("aggregate")); err != nil {
		return Query{}, err
	}
	if q.Step, err = parseStep(v.Get("step"), q.From, q.To, loc); err != nil {
		return Query{}, err
	}
	if q.Filter, err = ParseFilter(v.Get("filter")); err != nil {
		return Query{}, err
	}
	return q, nil
}

// clip bounds a client's parameter name named in an error: printable
// ASCII, at most 64 bytes.
func clip(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// trim bounds a client's text quoted in an error.
func trim(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// ParseWindow reads a window: "START,END" (RFC 3339 instants or dates,
// a date being the start of that day in loc), a month "2026-11", "Nd"
// (the N days before now's day, with today), "today", "week" (since
// Monday), "lastweek", "month" (month to date), "lastmonth".
func ParseWindow(s string, loc *time.Location, now time.Time) (from, to time.Time, err error) {
	const p = "window"
	s = strings.TrimSpace(s)
	n := now.In(loc)
	y, m, d := n.Date()
	today := calendar.DayStart(y, m, d, loc)
	monday := calendar.DayStart(y, m, d-(int(n.Weekday())+6)%7, loc)
	switch s {
	case "today":
		return today, calendar.DayStart(y, m, d+1, loc), nil
	case "week":
		return monday, calendar.DayStart(y, m, d-(int(n.Weekday())+6)%7+7, loc), nil
	case "lastweek":
		return calendar.DayStart(y, m, d-(int(n.Weekday())+6)%7-7, loc), monday, nil
	case "month":
		return calendar.DayStart(y, m, 1, loc), calendar.DayStart(y, m+1, 1, loc), nil
	case "lastmonth":
		return calendar.DayStart(y, m-1, 1, loc), calendar.DayStart(y, m, 1, loc), nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		k, err := strconv.Atoi(days)
		if err != nil || k < 1 || k > MaxRelDays {
			return from, to, bad(p, "%s: want 1d to %dd", trim(s), MaxRelDays)
		}
		return calendar.DayStart(y, m, d-k+1, loc), calendar.DayStart(y, m, d+1, loc), nil
	}
	if a, b, ok := strings.Cut(s, ","); ok {
		if from, err = parseBound(a, loc); err != nil {
			return from, to, bad(p, "start: %v", err)
		}
		if to, err = parseBound(b, loc); err != nil {
			return from, to, bad(p, "end: %v", err)
		}
		if !from.Before(to) {
			return from, to, bad(p, "start %s is not before end %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
		if to.Sub(from) > MaxWindowDays*24*time.Hour {
			return from, to, bad(p, "spans %s: at most %d days", to.Sub(from).Round(time.Hour), MaxWindowDays)
		}
		return from.In(loc), to.In(loc), nil
	}
	if t, err := time.Parse("2006-01", s); err == nil {
		y, m, _ := t.Date()
		from, to = calendar.DayStart(y, m, 1, loc), calendar.DayStart(y, m+1, 1, loc)
		if err := errors.Join(calendar.CheckTime(from), calendar.CheckTime(to)); err != nil {
			return from, to, bad(p, "%v", err)
		}
		return from, to, nil
	}
	return from, to, bad(p, "%s: want START,END (RFC 3339 or dates), a month YYYY-MM, Nd, today, week, lastweek, month or lastmonth", trim(s))
}

// parseBound is an RFC 3339 instant or a date, the start of that day in
// loc (where invoice periods are cut), as report --from/--to read them.
func parseBound(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.In(loc), calendar.CheckTime(t)
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if err := calendar.CheckTime(t); err != nil {
			return t, err
		}
		y, m, d := t.Date()
		return calendar.DayStart(y, m, d, loc), nil
	}
	return time.Time{}, fmt.Errorf("%s: want RFC 3339 (2026-11-01T00:00:00Z) or a date (2026-11-01)", trim(s))
}

func parseDim(s string) (Dim, bool) {
	d := Dim(strings.TrimSpace(s))
	return d, slices.Contains(Dims, d)
}

func dimNames() string {
	var b []string
	for _, d := range Dims {
		b = append(b, string(d))
	}
	return strings.Join(b, ", ")
}

// parseAggregate reads "team,namespace": fields, no repeats; "" is team.
func parseAggregate(s string) ([]Dim, error) {
	if strings.TrimSpace(s) == "" {
		return []Dim{Team}, nil
	}
	var out []Dim
	for _, f := range strings.Split(s, ",") {
		d, ok := parseDim(f)
		if !ok {
			return nil, bad("aggregate", "%s is not a field: want any of %s, comma-separated", trim(f), dimNames())
		}
		if slices.Contains(out, d) {
			return nil, bad("aggregate", "%s given twice", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// parseStep reads the series step and checks the window has at most
// MaxSteps of them.
func parseStep(s string, from, to time.Time, loc *time.Location) (string, error) {
	switch s {
	case StepNone:
		return s, nil
	case StepHour, StepDay, StepWeek, StepMonth:
	default:
		return "", bad("step", "%s: want hour, day, week or month", trim(s))
	}
	if n := approxSteps(s, from, to); n > MaxSteps {
		return "", bad("step", "%d %ss in the window: at most %d sets; use a longer step or a shorter window", n, s, MaxSteps)
	}
	return s, nil
}

func approxSteps(step string, from, to time.Time) int {
	span := to.Sub(from)
	switch step {
	case StepHour:
		return int(span/time.Hour) + 1
	case StepDay:
		return int(span/(24*time.Hour)) + 1
	case StepWeek:
		return int(span/(7*24*time.Hour)) + 2
	}
	return int(span/(28*24*time.Hour)) + 2
}

// ParseFilter reads "team:ads,namespace:search": field:value terms,
// comma-separated. A value is URL-unescaped after the split (a comma or
// colon in a value is %2C, %3A); several values of one field are
// alternatives.
func ParseFilter(s string) (map[Dim][]string, error) {
	const p = "filter"
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	terms := strings.Split(s, ",")
	if len(terms) > MaxFilters {
		return nil, bad(p, "%d terms: at most %d", len(terms), MaxFilters)
	}
	out := map[Dim][]string{}
	for _, t := range terms {
		f, raw, ok := strings.Cut(t, ":")
		if !ok {
			return nil, bad(p, "%s: want field:value, such as team:ads", trim(t))
		}
		d, ok := parseDim(f)
		if !ok {
			return nil, bad(p, "%s is not a field: want any of %s", trim(f), dimNames())
		}
		v, err := url.PathUnescape(raw)
		if err != nil {
			return nil, bad(p, "%s: the value is not escaped right: %v", trim(t), err)
		}
		if v == "" || len(v) > MaxValueLen {
			return nil, bad(p, "%s: a value is 1 to %d bytes", trim(t), MaxValueLen)
		}
		if !slices.Contains(out[d], v) {
			out[d] = append(out[d], v)
		}
	}
	return out, nil
}

// FormatFilter writes a filter as ParseFilter reads it, fields in order.
func FormatFilter(f map[Dim][]string) string {
	var terms []string
	for _, d := range Dims {
		for _, v := range f[d] {
			terms = append(terms, string(d)+":"+escapeValue(v))
		}
	}
	return strings.Join(terms, ",")
}

// escapeValue escapes what would split a term; PathUnescape reads it back.
func escapeValue(v string) string {
	r := strings.NewReplacer("%", "%25", ",", "%2C", ":", "%3A")
	return r.Replace(v)
}
