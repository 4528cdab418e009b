package report

import (
	"html/template"
	"math"
	"strconv"

	"github.com/gpuledger/gpuledger/support/svgchart"
)

// Chart geometry for the HTML report: horizontal bar charts laid out
// here and drawn as inline SVG by support/svgchart (chart.SVG).

// Widths in CSS pixels: the SVG is drawn at about its natural size in a
// full-width section (wide) or in one of two columns (narrow), so its text
// matches the page's.
const (
	wideChart   = 1060.0
	narrowChart = 500.0
	rowHeight   = 28.0
	barHeight   = 15.0
	chartTop    = 6.0
	chartBottom = 24.0 // room for the axis labels
	maxLabel    = 26   // characters of a label before it is cut
)

// chartGeometry is the horizontal layout of one chart width.
type chartGeometry struct{ width, label, value float64 }

func geometry(width float64) chartGeometry {
	if width <= narrowChart {
		return chartGeometry{width: width, label: 110, value: 80}
	}
	return chartGeometry{width: width, label: 190, value: 120}
}

// chart is one bar chart.
type chart struct {
	Title         string // for screen readers
	Width, Height float64
	LabelX        float64
	AxisY         float64
	Rows          []chartRow
	Ticks         []tick
	Legend        []legendItem
}

type chartRow struct {
	Label, FullLabel string
	LabelY           float64
	Segments         []segment
	Value            string
	ValueX           float64
}

type segment struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type tick struct {
	X     float64
	Label string
}

type legendItem struct{ Class, Label string }

// barInput is one row before layout: stacked parts, or overlaid ones
// (drawn on top of each other, the later thinner: used over allocated).
type barInput struct {
	Label   string
	Parts   []barPart
	Overlay bool
	Value   string
}

type barPart struct {
	Value float64
	Class string
	Title string
}

// layout places the rows on one scale, with a nice axis.
func layout(width float64, title string, rows []barInput, legend []legendItem, unit func(float64) string) chart {
	g := geometry(width)
	barArea := g.width - g.label - g.value
	maxV := 0.0
	for _, r := range rows {
		total := 0.0
		for _, p := range r.Parts {
			if r.Overlay {
				maxV = math.Max(maxV, p.Value)
			} else {
				total += math.Max(0, p.Value)
			}
		}
		maxV = math.Max(maxV, total)
	}
	step, top := niceScale(maxV)
	c := chart{Title: title, Width: g.width, LabelX: g.label - 10, Legend: legend}
	c.Height = chartTop + float64(len(rows))*rowHeight + chartBottom
	c.AxisY = c.Height - 8
	x := func(v float64) float64 { return g.label + barArea*v/top }
	for v := 0.0; v <= top*1.0000001; v += step {
		c.Ticks = append(c.Ticks, tick{X: x(v), Label: unit(v)})
	}
	for i, r := range rows {
		y := chartTop + float64(i)*rowHeight + (rowHeight-barHeight)/2
		row := chartRow{Label: cut(r.Label, g), FullLabel: r.Label, LabelY: y + barHeight/2 + 4, Value: r.Value}
		at := 0.0
		end := 0.0
		for j, p := range r.Parts {
			v := math.Max(0, p.Value)
			s := segment{Y: y, H: barHeight, Class: p.Class, Title: p.Title}
			if r.Overlay {
				inset := float64(j) * 4
				s.X, s.W, s.Y, s.H = x(0), x(v)-x(0), y+inset, barHeight-2*inset
				end = math.Max(end, x(v))
			} else {
				s.X, s.W = x(at), x(at+v)-x(at)
				at += v
				end = x(at)
			}
			if s.W > 0 {
				row.Segments = append(row.Segments, s)
			}
		}
		row.ValueX = math.Max(end, g.label) + 8
		c.Rows = append(c.Rows, row)
	}
	return c
}

// SVG draws the chart, a line of markup per tick, label, bar segment and
// value. Its text is escaped as the page's template escapes the rest.
func (c chart) SVG() template.HTML {
	n := svgchart.N
	s := svgchart.New(n(c.Width), n(c.Height), c.Title, svgchart.LikeTemplate)
	s.Newline()
	for _, t := range c.Ticks {
		s.Line("grid", n(t.X), n(t.X), "0", n(c.AxisY))
		s.Text(svgchart.Text{Class: "axis", X: n(t.X), Y: n(c.Height), Anchor: "middle", DY: "-2", Body: t.Label})
		s.Newline()
	}
	for _, r := range c.Rows {
		s.Text(svgchart.Text{X: n(c.LabelX), Y: n(r.LabelY), Anchor: "end", Titled: true, Title: r.FullLabel, Body: r.Label})
		s.Newline()
		for _, g := range r.Segments {
			s.Rect(svgchart.Rect{Class: g.Class, X: n(g.X), Y: n(g.Y), W: n(g.W), H: n(g.H), RX: "2", Title: g.Title})
			s.Newline()
		}
		s.Text(svgchart.Text{Class: "val", X: n(r.ValueX), Y: n(r.LabelY), Body: r.Value})
		s.Newline()
	}
	return s.HTML()
}

// niceScale picks an axis step of 1, 2 or 5 x 10^k giving 3-6 ticks.
func niceScale(maxV float64) (step, top float64) {
	if maxV <= 0 || math.IsNaN(maxV) || math.IsInf(maxV, 0) {
		return 1, 1
	}
	raw := maxV / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * mag
		if step >= raw {
			break
		}
	}
	top = math.Ceil(maxV/step) * step
	return step, top
}

func cut(s string, g chartGeometry) string {
	n := maxLabel
	if g.width <= narrowChart {
		n = 16
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// compact writes an axis value: 1200 -> "1.2k".
func compact(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
