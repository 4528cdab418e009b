package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
)

// jsonCoverage is the JSON's coverage_gaps: every listed gap and the
// totals (present only when the period has a gap).
type jsonCoverage struct {
	Count     int           `json:"count"`
	GPUHours  json.Number   `json:"gpu_hours"`
	Omitted   int           `json:"omitted,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	Note      string        `json:"note"`
	Gaps      []jsonGapItem `json:"gaps"`
}

type jsonGapItem struct {
	Node     string      `json:"node"`
	GPUs     int         `json:"gpus"`
	From     string      `json:"from"`
	To       string      `json:"to"`
	GPUHours json.Number `json:"gpu_hours"`
	// Stopped: the node sent nothing more up to the data's end.
	Stopped bool `json:"stopped_sending"`
}

func coverageJSON(r *Report) *jsonCoverage {
	c := r.Coverage
	if c.Empty() {
		return nil
	}
	j := &jsonCoverage{Count: c.Count, GPUHours: num(decimal(c.GPUHours, hoursDecimals)), Omitted: c.Omitted,
		Truncated: c.Truncated, Note: r.GapNote(), Gaps: []jsonGapItem{}}
	for _, g := range c.Gaps {
		j.Gaps = append(j.Gaps, jsonGapItem{Node: g.Node, GPUs: g.GPUs, From: g.From.Format(time.RFC3339Nano),
			To: g.To.Format(time.RFC3339Nano), GPUHours: num(decimal(g.GPUHours(), hoursDecimals)), Stopped: g.Trailing})
	}
	return j
}

// csvGapPrefix starts the finance CSV's coverage records: after every
// line, one record per listed gap and a total, each as wide as the header
// with the whole text in its first cell, which starts with '#'. A reader
// that skips comment lines ('#') skips them; a strict reader reads records
// of the right width and can tell them by the first cell.
const csvGapPrefix = "# coverage_gap"

// csvGapRecords are the coverage records of a header width wide:
//
//	# coverage_gap node=demo-mig gpus=1 from=2026-11-03T00:00:00Z to=2026-11-27T00:00:00Z gpu_hours=576.000000,,,…
//	# coverage_gaps_total count=3 gpu_hours=1728.000000 omitted=0 truncated=false not_billed=true,,,…
//
// Node names are written as Go quoted strings when they hold anything but
// letters, digits, '.', '-' and '_', so no name can forge a field.
func csvGapRecords(r *Report, width int) [][]string {
	c := r.Coverage
	if c.Empty() {
		return nil
	}
	rec := func(text string) []string {
		row := make([]string, width)
		row[0] = text
		return row
	}
	var out [][]string
	for _, g := range c.Gaps {
		out = append(out, rec(fmt.Sprintf("%s node=%s gpus=%d from=%s to=%s gpu_hours=%s", csvGapPrefix, plainName(g.Node), g.GPUs,
			g.From.Format(time.RFC3339Nano), g.To.Format(time.RFC3339Nano), decimal(g.GPUHours(), hoursDecimals))))
	}
	out = append(out, rec(fmt.Sprintf("%ss_total count=%d gpu_hours=%s omitted=%d truncated=%t not_billed=true", csvGapPrefix, c.Count,
		decimal(c.GPUHours, hoursDecimals), c.Omitted, c.Truncated)))
	return out
}

// plainName is s where it is plain, else s quoted.
func plainName(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// gapsPage is the HTML "Coverage gaps" section, on the report and on every
// page of gpuledger serve.
type gapsPage struct {
	Note           string
	Rows           []gapRow
	Total          string
	Count, Omitted int
	Truncated      bool
}

type gapRow struct{ Node, GPUs, From, To, Hours, Stopped string }

func newGapsPage(r *Report) *gapsPage {
	c := r.Coverage
	if c.Empty() {
		return nil
	}
	p := &gapsPage{Note: r.GapNote(), Total: decimal(c.GPUHours, 2), Count: c.Count, Omitted: c.Omitted, Truncated: c.Truncated}
	for _, g := range c.Gaps {
		row := gapRow{Node: g.Node, GPUs: strconv.Itoa(g.GPUs), From: g.From.Format("2006-01-02 15:04:05 MST"),
			To: g.To.Format("2006-01-02 15:04:05 MST"), Hours: decimal(g.GPUHours(), 2)}
		if g.Trailing {
			row.Stopped = "stopped sending"
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

//go:embed gaps.html.tmpl
var gapsHTML string

// The section is its own template in the page's set, as quota is.
var _ = template.Must(pageTemplate.New("gaps").Parse(gapsHTML))

// GapsHTML is the report's "Coverage gaps" section as HTML, for pages
// that show a report's gaps beside something else (gpuledger serve's
// index, advice and cost per token pages); "" when the period has none.
func (r *Report) GapsHTML() (template.HTML, error) {
	p := newGapsPage(r)
	if p == nil {
		return "", nil
	}
	var b strings.Builder
	if err := pageTemplate.ExecuteTemplate(&b, "gaps", p); err != nil {
		return "", fmt.Errorf("cannot write the coverage gaps section: %w", err)
	}
	return template.HTML(b.String()), nil // #nosec G203: our own template's output, escaped by it
}
