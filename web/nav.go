package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Nav is the header every page of serve carries (nav.html.tmpl, used as
// {{template "nav" .Nav}} by a page parsed with pageTemplate): the months,
// the month's report, advice and files, the glossary, and breadcrumbs.
// Every link is relative to the page (Root), so serve works behind a path
// prefix (http.StripPrefix behind a proxy).
type Nav struct {
	// Root leads from the page back to serve's root: "./" on pages at
	// the top ("/", "/glossary"), "../" one level down ("/reports/…").
	Root string
	// Here names the page for aria-current: "index", "report", "advice",
	// "glossary", or anything else (no tab is current).
	Here string
	// Month is the page's month (YYYY-MM): its report, advice and files
	// are linked; "" on pages of no month.
	Month string
	// Months are the months the ledger covers, newest first; none where
	// they are not known (an error page).
	Months []NavLink
	// Crumbs are where the page is, from the months down; the last is the
	// page itself, without an Href.
	Crumbs []NavLink
}

// NavLink is one link of the header.
type NavLink struct {
	Label, Href string
	Current     bool
}

// NewNav is the header of the page at urlPath (as the handler sees it,
// after any prefix was stripped), of month ("" for none), with the
// ledger's months (YYYY-MM, any order; nil when unknown) and the crumbs
// below "All months" (the last one the page itself, Href "").
func NewNav(urlPath, here, month string, months []string, crumbs ...NavLink) Nav {
	n := Nav{Root: RootFor(urlPath), Here: here, Month: month}
	sorted := slices.Clone(months)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	for _, m := range sorted {
		n.Months = append(n.Months, NavLink{Label: monthTitle(m), Href: n.Root + "reports/" + m, Current: m == month})
	}
	first := NavLink{Label: "All months", Href: n.Root}
	if len(crumbs) == 0 {
		first.Href = ""
	}
	n.Crumbs = append([]NavLink{first}, crumbs...)
	return n
}

// RootFor is the relative way from a page at urlPath to serve's root:
// one "../" per folder the path is in, "./" at the top.
func RootFor(urlPath string) string {
	depth := strings.Count(strings.TrimPrefix(urlPath, "/"), "/")
	if depth == 0 {
		return "./"
	}
	return strings.Repeat("../", depth)
}

// monthTitle writes 2026-11 as "November 2026"; anything else as it is.
func monthTitle(month string) string {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return month
	}
	return t.Format("January 2006")
}

// navMonths are the months the ledger covers, for the header: best
// effort, as the index lists them (cached); a ledger that cannot say
// leaves the header without them rather than failing the page.
func (s *Server) navMonths(ctx context.Context) []string {
	book, _, err := s.book()
	if err != nil {
		return nil
	}
	ms, err := s.ledgerMonths(ctx, book, s.cfg.Now())
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ms))
	for m := range ms {
		out = append(out, m)
	}
	return out
}

// navHTML renders n as the header's HTML.
func navHTML(n Nav) (template.HTML, error) {
	var b bytes.Buffer
	if err := navTemplates.ExecuteTemplate(&b, "nav", n); err != nil {
		return "", fmt.Errorf("cannot write the page header: %w", err)
	}
	return template.HTML(b.String()), nil //nolint:gosec // our own template's output
}

// headClose is where a page's head ends: the header's style goes before.
var headClose = []byte("</head>")

// withNav is a page another package wrote (the report, the advice) with
// serve's header: its style in the head, the header first in <main>.
// The report file itself never carries it: it is serve's wrapper.
func withNav(page []byte, n Nav) ([]byte, error) {
	h, err := navHTML(n)
	if err != nil {
		return nil, err
	}
	i, j := bytes.Index(page, headClose), bytes.Index(page, mainOpen)
	if i < 0 || j < 0 || j < i {
		return page, nil
	}
	style := "<style>" + string(NavStyle()) + "</style>\n"
	at := j + len(mainOpen)
	out := make([]byte, 0, len(page)+len(style)+len(h))
	out = append(out, page[:i]...)
	out = append(out, style...)
	out = append(out, page[i:at]...)
	out = append(out, h...)
	out = append(out, page[at:]...)
	return out, nil
}

// WithoutNav is a served report or advice page without serve's header:
// the page `gpuledger report` writes (tests compare them byte for byte).
func WithoutNav(page []byte) []byte {
	style := []byte("<style>" + string(NavStyle()) + "</style>\n")
	out := bytes.Replace(page, style, nil, 1)
	i := bytes.Index(out, []byte(`<nav class="site"`))
	if i < 0 {
		return out
	}
	end := []byte("</nav>\n")
	j := bytes.Index(out[i:], end)
	if j < 0 {
		return out
	}
	return append(out[:i:i], out[i+j+len(end):]...)
}

// withMonthNav is a month's page (the report, the advice) with serve's
// header: here is "report" or "advice".
func (s *Server) withMonthNav(ctx context.Context, r *http.Request, page []byte, here, month string) ([]byte, error) {
	crumbs := []NavLink{{Label: monthTitle(month)}}
	if here == "advice" {
		crumbs = []NavLink{{Label: monthTitle(month), Href: RootFor(r.URL.Path) + "reports/" + month}, {Label: "Advice"}}
	}
	return withNav(page, NewNav(r.URL.Path, here, month, s.navMonths(ctx), crumbs...))
}
