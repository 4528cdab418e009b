package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"math/big"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/support/svgchart"
)

// maxTeamColumns bounds the per-team columns and chart series of the
// index; the rest are one "other teams".
const maxTeamColumns = 7

// teamPalette are the report stylesheet's team series classes (--t1 to
// --t7), in stacking order: neighbours differ in hue and lightness by at
// least the CIEDE2000 distance TestTeamPaletteContrast states.
var teamPalette = []string{"s-t1", "s-t2", "s-t3", "s-t4", "s-t5", "s-t6", "s-t7"}

type monthRow struct {
	Month, Title, Total, Partial string
	Closed                       string   // when it closed; "" while open
	Teams                        []string // per team column, "—" where none
	Platform                     string
}

type legendItem struct{ Class, Label string }

// trendItem is one month of the cost-per-team chart, as a list.
type trendItem struct{ Label, Value string }

type indexPage struct {
	Style                  template.CSS
	CSP                    string
	Currency, Zone, Policy string
	Idle, Now              string
	Months                 int
	TeamNames              []string
	Rows                   []monthRow
	Chart                  template.HTML
	Legend                 []legendItem
	// TrendList is the chart as a list (month and total), shown instead
	// of it on a phone.
	TrendList []trendItem
	Nav       Nav
	Empty     bool
	// Gaps are the months' coverage gaps sections (web/gaps.go).
	Gaps []monthGaps
	// Example is the example prices banner, or "" (web/example.go).
	Example template.HTML
}

// monthBill is one month's total and per-team totals.
type monthBill struct {
	month   string
	start   time.Time
	rep     *report.Report
	byTeam  map[string]int64
	other   int64 // platform and rounding lines
	partial string
	closed  string // when the month closed, "" while open
}

// serveIndex lists the months the ledger covers, newest first, with their
// totals and per-team totals and a cost-per-team chart of the last twelve
// months.
func (s *Server) serveIndex(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	now := s.cfg.Now()
	cluster, err := s.viewCluster(r)
	if err != nil {
		return err
	}
	ctx = withCluster(ctx, cluster)
	book, _, err := s.book()
	if err != nil {
		return err
	}
	bills, err := s.bills(ctx, book, now)
	if err != nil {
		return err
	}
	p := indexPage{Style: report.Stylesheet(), CSP: report.ContentSecurityPolicy(), Currency: book.Currency.Code, Zone: book.Timezone,
		Policy: string(book.Policy), Idle: string(book.Idle), Now: now.In(book.Location).Format("2 Jan 2006 15:04 MST"), Months: s.cfg.Months,
		Empty: len(bills) == 0}
	teams := topTeams(bills)
	p.TeamNames = teams
	money := func(r *report.Report, x int64) string { return grouped(r.Money(x)) }
	for _, b := range bills {
		row := monthRow{Month: b.month, Title: b.start.Format("January 2006"), Total: money(b.rep, b.rep.Total), Partial: b.partial, Closed: b.closed}
		var other int64
		named := map[string]bool{}
		for _, t := range teams {
			named[t] = true
			if v, ok := b.byTeam[t]; ok {
				row.Teams = append(row.Teams, money(b.rep, v))
			} else {
				row.Teams = append(row.Teams, "—")
			}
		}
		for t, v := range b.byTeam {
			if !named[t] {
				other += v
			}
		}
		row.Platform = money(b.rep, b.other+other)
		p.Rows = append(p.Rows, row)
	}
	if p.Gaps, err = gapSections(bills); err != nil {
		return err
	}
	p.Chart, p.Legend, p.TrendList = trendChart(bills, teams, book, now)
	months := make([]string, 0, len(bills))
	for _, b := range bills {
		months = append(months, b.month)
	}
	p.Nav = NewNav(r.URL.Path, "index", "", months)
	p.Example = indexExample(book.Example, bills)
	var buf bytes.Buffer
	if err := indexTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("cannot write the index page: %w", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
	return nil
}

// bills are the bills of the months the ledger has data for, among the
// last Config.Months, newest first.
func (s *Server) bills(ctx context.Context, book *pricebook.Book, now time.Time) ([]monthBill, error) {
	months, err := s.ledgerMonths(ctx, book, now)
	if err != nil {
		return nil, err
	}
	closed, err := s.closedMonths(ctx)
	if err != nil {
		return nil, err
	}
	var out []monthBill
	for month, start := range months {
		rep, err := s.monthReport(ctx, month, now)
		var he *httpError
		if errors.As(err, &he) && he.code == http.StatusNotFound {
			continue // rows, but none that bill (a month ending at its first instant)
		}
		if err != nil {
			return nil, err
		}
		b := monthBill{month: month, start: start, rep: rep, byTeam: map[string]int64{}, other: rep.Platform + rep.Rounding, partial: rep.PartialNote()}
		for _, t := range rep.Teams {
			b.byTeam[t.Team] = t.Total
		}
		if c := closed[month]; c != nil {
			t, err := s.closedTotals(ctx, month, c)
			if err != nil {
				return nil, err
			}
			if t != nil {
				withStoredTotals(&b, c, t)
			}
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].month > out[j].month })
	return out, nil
}

// ledgerMonths are the months among the last Config.Months the ledger
// has rows in, by name, with their starts: reused for runningTTL and
// shared by the index requests at once.
func (s *Server) ledgerMonths(ctx context.Context, book *pricebook.Book, now time.Time) (map[string]time.Time, error) {
	_, version, err := s.book()
	if err != nil {
		return nil, err
	}
	gen, err := s.ledgerGen()
	if err != nil {
		return nil, err
	}
	loc := book.Location
	y, m, _ := now.In(loc).Date()
	// The key's month is the current one: the span changes with it.
	key := cacheKey{month: fmt.Sprintf("%04d-%02d", y, m), book: version, gen: gen}
	s.cacheMu.Lock()
	c, ok := s.months[key]
	s.cacheMu.Unlock()
	if fresh(c, ok, false, s.cfg.RunningTTL) {
		return c.v, nil
	}
	v, err := s.shared(ctx, "months|"+key.String(), pageTimeout, func(ctx context.Context) (any, error) {
		first := calendar.DayStart(y, m-time.Month(s.cfg.Months-1), 1, loc)
		var aggs []ledger.Aggregate
		err := s.withStore(ctx, func(st ledger.Store) error {
			var err error
			aggs, err = st.Aggregate(ctx, ledger.AggregateQuery{From: first, To: now, Location: loc, Bucket: ledger.BucketMonth})
			return err
		})
		if err != nil {
			return nil, err
		}
		months := map[string]time.Time{}
		for _, a := range aggs {
			if a.Rows > 0 {
				t := a.BucketStart.In(loc)
				months[t.Format("2006-01")] = calendar.DayStart(t.Year(), t.Month(), 1, loc)
			}
		}
		s.cacheMu.Lock()
		putBounded(s.months, key, cached[map[string]time.Time]{months, time.Now(), false})
		s.cacheMu.Unlock()
		return months, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string]time.Time), nil
}

// topTeams are the teams with the largest totals over the bills, at most
// maxTeamColumns.
func topTeams(bills []monthBill) []string {
	sum := map[string]int64{}
	for _, b := range bills {
		for t, v := range b.byTeam {
			sum[t] += v
		}
	}
	names := make([]string, 0, len(sum))
	for t := range sum {
		names = append(names, t)
	}
	sort.Slice(names, func(i, j int) bool {
		if sum[names[i]] != sum[names[j]] {
			return sum[names[i]] > sum[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > maxTeamColumns {
		names = names[:maxTeamColumns]
	}
	return names
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH       = 960.0, 300.0
	plotLeft, plotRight  = 78.0, 12.0
	plotTop, plotBottom  = 22.0, 30.0
	barFill              = 0.62
	otherClass           = "s-platform"
	otherLabel           = "other teams, platform and rounding"
	chartTitleTemplate   = "Cost per team, last %d months, %s"
	chartTickTargetCount = 5
)

// trendChart draws the last twelve months' bills as stacked bars, one
// segment per team, as inline SVG (no script: the page's policy allows
// none).
func trendChart(bills []monthBill, teams []string, book *pricebook.Book, now time.Time) (template.HTML, []legendItem, []trendItem) {
	loc := book.Location
	y, m, _ := now.In(loc).Date()
	byMonth := map[string]monthBill{}
	for _, b := range bills {
		byMonth[b.month] = b
	}
	scale := math.Pow10(book.Currency.MinorUnit)
	type seg struct {
		class, title string
		v            float64
	}
	type bar struct {
		label, total string
		segs         []seg
		sum          float64
	}
	var bars []bar
	maxV := 0.0
	for i := trendMonths - 1; i >= 0; i-- {
		start := calendar.DayStart(y, m-time.Month(i), 1, loc)
		key := start.Format("2006-01")
		// "Dec 2025", never "Dec 25", which reads as a date.
		br := bar{label: start.Format("Jan 2006")}
		if b, ok := byMonth[key]; ok {
			br.total = b.rep.Money(b.rep.Total)
			named := map[string]bool{}
			for j, t := range teams {
				named[t] = true
				if v := b.byTeam[t]; v != 0 {
					br.segs = append(br.segs, seg{teamPalette[j%len(teamPalette)], fmt.Sprintf("%s %s: %s %s", key, t, b.rep.Money(v), book.Currency.Code), float64(v) / scale})
				}
			}
			other := b.other
			for t, v := range b.byTeam {
				if !named[t] {
					other += v
				}
			}
			if other != 0 {
				br.segs = append(br.segs, seg{otherClass, fmt.Sprintf("%s %s: %s %s", key, otherLabel, b.rep.Money(other), book.Currency.Code), float64(other) / scale})
			}
			br.sum = float64(b.rep.Total) / scale
		}
		maxV = math.Max(maxV, br.sum)
		bars = append(bars, br)
	}
	step := niceStep(maxV / chartTickTargetCount)
	top := step * math.Ceil(maxV/step)
	if top <= 0 {
		top = 1
	}
	plotW, plotH := chartW-plotLeft-plotRight, chartH-plotTop-plotBottom
	yOf := func(v float64) float64 { return plotTop + plotH*(1-v/top) }
	title := fmt.Sprintf(chartTitleTemplate, trendMonths, book.Currency.Code)
	c := svgchart.New(fmt.Sprintf("%.0f", chartW), fmt.Sprintf("%.0f", chartH), title, svgchart.LikeHTMLEscapeString)
	n := svgchart.N
	for v := 0.0; v <= top+step/2; v += step {
		yy := yOf(v)
		c.Line("grid", n(plotLeft), n(chartW-plotRight), n(yy), n(yy))
		c.Text(svgchart.Text{Class: "axis", X: n(plotLeft - 8), Y: n(yy), Anchor: "end", DY: "4", Body: compact(v)})
	}
	slot := plotW / float64(len(bars))
	for i, br := range bars {
		x := plotLeft + slot*float64(i) + slot*(1-barFill)/2
		bw := slot * barFill
		acc := 0.0
		for _, s := range br.segs {
			y0, y1 := yOf(acc+s.v), yOf(acc)
			c.Rect(svgchart.Rect{Class: s.class, X: n(x), Y: n(y0), W: n(bw), H: n(math.Max(y1-y0, 0)), Title: s.title})
			acc += s.v
		}
		if br.total != "" {
			c.Text(svgchart.Text{Class: "val", X: n(x + bw/2), Y: n(yOf(br.sum)), Anchor: "middle", DY: "-4", Body: compact(br.sum)})
		}
		c.Text(svgchart.Text{Class: "axis", X: n(x + bw/2), Y: n(chartH - 8), Anchor: "middle", Body: br.label})
	}
	c.Line("base", n(plotLeft), n(chartW-plotRight), n(yOf(0)), n(yOf(0)))
	var legend []legendItem
	for j, t := range teams {
		legend = append(legend, legendItem{teamPalette[j%len(teamPalette)], t})
	}
	legend = append(legend, legendItem{otherClass, otherLabel})
	var list []trendItem
	for i := len(bars) - 1; i >= 0; i-- {
		if bars[i].total != "" {
			list = append(list, trendItem{bars[i].label, grouped(bars[i].total) + " " + book.Currency.Code})
		}
	}
	return c.HTML(), legend, list
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if x <= f*p {
			return f * p
		}
	}
	return 10 * p
}

// compact writes an axis amount: 950, 12.5k, 1.2M.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trim(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e3:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	}
	return trim(fmt.Sprintf("%.0f", v))
}

func trim(s string) string {
	r := new(big.Rat)
	if _, ok := r.SetString(s); ok && r.IsInt() {
		return r.Num().String()
	}
	return s
}

// grouped writes an amount with thousands separators, as the report's
// page does: "9240.00" is "9,240.00".
func grouped(s string) string {
	neg := strings.HasPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}
