package whatif

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/gpuledger/gpuledger/support/outformat"
)

// Result is a comparison as gpuledger whatif writes it: the settings it
// ran with, each mechanism's summary, and the hostile exercise (nil when
// not run).
type Result struct {
	Tenants int
	// Rate is each tenant's requests per second.
	Rate              float64
	Service, Duration time.Duration
	Runs              int
	Seed              uint64
	Summaries         []Summary
	Hostile           *HostileReport
}

// Format is one way a Result is written.
type Format string

// The formats, in the order FormatNames lists them.
const (
	// FormatText is the tables gpuledger whatif prints by default.
	FormatText Format = "text"
	// FormatJSON is one indented JSON document; latencies in ms.
	FormatJSON Format = "json"
)

var formats = outformat.Table[Format, *Result]{Kind: "whatif", What: "whatif result", Specs: []outformat.Spec[Format, *Result]{
	{Name: FormatText, Write: writeText}, {Name: FormatJSON, Write: writeJSON},
}}

// FormatNames lists the formats for a message: "text or json".
func FormatNames() string { return formats.Names() }

// ParseFormat is the format a name names.
func ParseFormat(name string) (Format, error) { return formats.Parse(name) }

// Write writes r in format f to w.
func Write(w io.Writer, r *Result, f Format) error { return formats.Write(w, r, f) }

// docMode is one mechanism in the JSON output; latencies in ms, means
// over the runs, null where no request was served.
type docMode struct {
	Mode      string      `json:"mode"`
	ServedPct *float64    `json:"served_pct"`
	P50       *float64    `json:"p50_ms"`
	P99       *float64    `json:"p99_ms"`
	P50SD     *float64    `json:"p50_sd_ms"`
	P99SD     *float64    `json:"p99_sd_ms"`
	Tenants   []docTenant `json:"tenants"`
}

type docTenant struct {
	Name      string   `json:"name"`
	Hostile   bool     `json:"hostile,omitempty"`
	ServedPct *float64 `json:"served_pct"`
	P50       *float64 `json:"p50_ms"`
	P99       *float64 `json:"p99_ms"`
}

type docHostile struct {
	Tenant string           `json:"tenant"`
	Modes  []docHostileMode `json:"modes"`
	// GapMs is the well-behaved tenants' p99 under MPS minus under MIG,
	// with the hostile tenant.
	GapMs        *float64 `json:"gap_ms"`
	MIGUnchanged bool     `json:"mig_unchanged"`
}

type docHostileMode struct {
	Mode       string   `json:"mode"`
	BenignP99  *float64 `json:"well_behaved_p99_ms"`
	HostileP99 *float64 `json:"well_behaved_p99_with_hostile_ms"`
	Change     *float64 `json:"change_ms"`
}

type jsonDoc struct {
	Tenants   int         `json:"tenants"`
	RateRPS   float64     `json:"rate_rps"`
	ServiceMs float64     `json:"service_ms"`
	DurationS float64     `json:"duration_s"`
	Runs      int         `json:"runs"`
	Seed      uint64      `json:"seed"`
	Modes     []docMode   `json:"modes"`
	Hostile   *docHostile `json:"hostile,omitempty"`
}

// num is x*scale for JSON, nil when undefined.
func num(x, scale float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	v := x * scale
	return &v
}

// writeJSON writes r as one indented JSON document.
func writeJSON(w io.Writer, r *Result) error {
	doc := jsonDoc{Tenants: r.Tenants, RateRPS: r.Rate, ServiceMs: r.Service.Seconds() * 1e3, DurationS: r.Duration.Seconds(),
		Runs: r.Runs, Seed: r.Seed, Modes: []docMode{}}
	h := r.Hostile
	for _, s := range r.Summaries {
		m := docMode{Mode: string(s.Mode), ServedPct: num(s.ServedFraction.Mean, 100), P50: num(s.P50.Mean, 1e3), P99: num(s.P99.Mean, 1e3),
			P50SD: num(s.P50.SD, 1e3), P99SD: num(s.P99.SD, 1e3)}
		for _, t := range s.Tenants {
			m.Tenants = append(m.Tenants, docTenant{Name: t.Name, Hostile: t.Hostile, ServedPct: num(t.ServedFraction.Mean, 100),
				P50: num(t.P50.Mean, 1e3), P99: num(t.P99.Mean, 1e3)})
		}
		doc.Modes = append(doc.Modes, m)
	}
	if h != nil {
		dh := &docHostile{Tenant: fmt.Sprintf("tenant-%d", h.Index), GapMs: num(h.Gap, 1e3), MIGUnchanged: h.MIGUnchanged}
		for _, m := range h.Modes {
			dh.Modes = append(dh.Modes, docHostileMode{Mode: string(m.Mode), BenignP99: num(m.BenignP99.Mean, 1e3),
				HostileP99: num(m.HostileP99.Mean, 1e3), Change: num(m.Change, 1e3)})
		}
		doc.Hostile = dh
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("cannot write whatif JSON: %w", err)
	}
	return nil
}

// ms writes seconds as milliseconds, "-" when undefined.
func ms(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x*1e3, 'f', 2, 64)
}

// writeText writes r as a table per exercise.
func writeText(w io.Writer, r *Result) error {
	h := r.Hostile
	fmt.Fprintf(w, "%d tenants x %g rps, %s of compute per request, %s per run, %d runs (seed %d)\n",
		r.Tenants, r.Rate, r.Service, r.Duration, r.Runs, r.Seed)
	fmt.Fprintf(w, "percentiles are means over the runs, ± the run-to-run standard deviation\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tserved%\tp50 ms\t± \tp99 ms\t± \t")
	for _, s := range r.Summaries {
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%s\t\n", s.Mode, s.ServedFraction.Mean*100, ms(s.P50.Mean), ms(s.P50.SD), ms(s.P99.Mean), ms(s.P99.SD))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if h == nil {
		return nil
	}
	fmt.Fprintf(w, "\nhostile tenant-%d (2x the requests, 10x the service): p99 of the other %d tenants\n\n", h.Index, r.Tenants-1)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\twithout ms\twith ms\tchange ms\t")
	for _, m := range h.Modes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", m.Mode, ms(m.BenignP99.Mean), ms(m.HostileP99.Mean), ms(m.Change))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	unchanged := "unchanged, run by run"
	if !h.MIGUnchanged {
		unchanged = "CHANGED (isolation broken)"
	}
	_, err := fmt.Fprintf(w, "\nMIG: well-behaved p99 %s. Gap, MPS minus MIG, with the hostile tenant: %s ms\n", unchanged, ms(h.Gap))
	return err
}
