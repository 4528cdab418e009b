// Package svgchart draws the inline SVG charts of gpuledger's pages
// (serve's index, the report's HTML page): the one place that writes a
// chart's elements, escapes their text and formats their coordinates. A
// page lays its chart out (where each bar, tick and label goes) and draws
// it here, element by element, so that no page writes SVG markup of its
// own. The pages allow no script, so a chart is markup alone, and its
// text is escaped here because the page inserts the chart as trusted
// HTML.
package svgchart

import (
	"fmt"
	"html/template"
	"strings"
)

// NS is the SVG namespace every chart declares, so that a page read as
// XML draws it too.
const NS = "http://www.w3.org/2000/svg"

// Escaping is how a chart's text is escaped. Both are safe in HTML text
// and in quoted attribute values; they differ in '+' alone. Each page
// keeps the escaping its chart has always had, so that its bytes do not
// change.
type Escaping bool

const (
	// LikeTemplate escapes as html/template escapes the page around the
	// chart: quotes, '&', '<', '>', '+' (as &#43;) and NUL (as U+FFFD).
	LikeTemplate Escaping = true
	// LikeHTMLEscapeString escapes as template.HTMLEscapeString: the same
	// but '+', which is left as it is.
	LikeHTMLEscapeString Escaping = false
)

var (
	basicEscaper    = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;")
	templateEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;", "+", "&#43;")
)

// Chart is one chart being drawn: New opens its svg element, the element
// methods add to it in order, and HTML closes it.
type Chart struct {
	b   strings.Builder
	esc *strings.Replacer
}

// N writes a coordinate or length with one decimal, as every chart does.
func N(v float64) string { return fmt.Sprintf("%.1f", v) }

// New opens a chart of viewBox "0 0 width height", labelled title for
// screen readers. width and height are written as given (N, or whole
// units).
func New(width, height, title string, e Escaping) *Chart {
	c := &Chart{esc: basicEscaper}
	if e == LikeTemplate {
		c.esc = templateEscaper
	}
	fmt.Fprintf(&c.b, `<svg class="chart" viewBox="0 0 %s %s" role="img" aria-label="%s" xmlns="%s">`, width, height, c.esc.Replace(title), NS)
	return c
}

// Newline ends a line of the markup, for a page that keeps its chart's
// rows on lines of their own.
func (c *Chart) Newline() { c.b.WriteByte('\n') }

// Line draws a line of class (grid, base) from (x1, y1) to (x2, y2).
func (c *Chart) Line(class, x1, x2, y1, y2 string) {
	fmt.Fprintf(&c.b, `<line class="%s" x1="%s" x2="%s" y1="%s" y2="%s"/>`, c.esc.Replace(class), x1, x2, y1, y2)
}

// Rect is one bar or bar segment; every one has a tooltip, Title.
type Rect struct {
	Class      string
	X, Y, W, H string
	RX         string // corner radius; "" for square corners
	Title      string
}

// Rect draws r.
func (c *Chart) Rect(r Rect) {
	fmt.Fprintf(&c.b, `<rect class="%s" x="%s" y="%s" width="%s" height="%s"`, c.esc.Replace(r.Class), r.X, r.Y, r.W, r.H)
	if r.RX != "" {
		fmt.Fprintf(&c.b, ` rx="%s"`, r.RX)
	}
	c.b.WriteByte('>')
	c.title(r.Title)
	c.b.WriteString("</rect>")
}

// Text is one label or value; the empty fields are left out.
type Text struct {
	Class  string
	X, Y   string
	Anchor string // text-anchor: start, middle or end
	DY     string // shift down from Y, in user units
	// Titled gives the text a tooltip, Title (even an empty one): the
	// whole text where Body is cut.
	Titled bool
	Title  string
	Body   string
}

// Text draws t.
func (c *Chart) Text(t Text) {
	c.b.WriteString("<text")
	if t.Class != "" {
		fmt.Fprintf(&c.b, ` class="%s"`, c.esc.Replace(t.Class))
	}
	fmt.Fprintf(&c.b, ` x="%s" y="%s"`, t.X, t.Y)
	if t.Anchor != "" {
		fmt.Fprintf(&c.b, ` text-anchor="%s"`, t.Anchor)
	}
	if t.DY != "" {
		fmt.Fprintf(&c.b, ` dy="%s"`, t.DY)
	}
	c.b.WriteByte('>')
	if t.Titled {
		c.title(t.Title)
	}
	c.b.WriteString(c.esc.Replace(t.Body))
	c.b.WriteString("</text>")
}

func (c *Chart) title(s string) {
	fmt.Fprintf(&c.b, "<title>%s</title>", c.esc.Replace(s))
}

// HTML closes the chart and returns it, every text in it escaped.
func (c *Chart) HTML() template.HTML {
	c.b.WriteString("</svg>")
	return template.HTML(c.b.String()) // every text in it went through c.esc
}
