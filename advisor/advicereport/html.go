package advicereport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/calendar"
)

//go:embed advice.html.tmpl
var htmlTemplate string

var pageTemplate = template.Must(template.New("advice").Parse(htmlTemplate))

type card struct{ Label, Value, Note string }

type actionRow struct {
	Kind, Workloads, Team, Model, Before, After string
	Freed, Saving, Contention, Latency          string
	Evidence, Incomplete                        []string
}

type keptRow struct {
	Workloads, Team, Model, Before, Held string
	Evidence, Incomplete                 []string
}

type page struct {
	CSP                               string
	Style                             template.CSS
	Title, Period, Range, Partial     string
	Policy, Currency, Zone, Generated string
	Saving                            string
	Cards                             []card
	Actions                           []actionRow
	Kept                              []keptRow
	MIG                               []advise.MIGPacking
	Problems, Explain                 []string
	// Gaps is the report's coverage gaps section: advice over time the
	// ledger has no rows for is advice on part of the fleet.
	Gaps template.HTML
}

// WriteHTML writes the advice as one self-contained page with the
// chargeback report's stylesheet and Content-Security-Policy: the actions
// first, the workloads kept as they are folded away with their count.
func WriteHTML(w io.Writer, a *Advice) error {
	pg := newPage(a)
	var err error
	if pg.Gaps, err = a.Report.GapsHTML(); err != nil {
		return fmt.Errorf("cannot write advice HTML: %w", err)
	}
	if err := pageTemplate.Execute(w, pg); err != nil {
		return fmt.Errorf("cannot write advice HTML: %w", err)
	}
	return nil
}

func newPage(a *Advice) page {
	p, rep := a.Plan, a.Report
	cur := p.Currency.Code
	loc := rep.Book.Location
	actions, kept := a.Actions()
	pg := page{
		CSP: report.ContentSecurityPolicy(), Style: report.Stylesheet(),
		Title:    "GPU sharing advice " + rep.PeriodLabel(),
		Period:   periodTitle(a),
		Range:    rep.From.In(loc).Format("Mon 2 Jan 2006 15:04") + " – " + rep.To.In(loc).Format("Mon 2 Jan 2006 15:04 MST"),
		Partial:  rep.PartialNote(),
		Policy:   string(rep.Book.Policy),
		Currency: cur, Zone: rep.Book.Timezone,
		Saving: rep.Money(p.SavingMinor),
		MIG:    p.MIG, Problems: p.Problems,
	}
	if pg.Partial != "" {
		pg.Title += " (partial)"
	}
	if !rep.GeneratedAt.IsZero() {
		pg.Generated = rep.GeneratedAt.In(loc).Format("2 Jan 2006 15:04 MST")
	}
	counts := kindCounts(actions)
	if counts == "" {
		counts = "nothing to change"
	}
	pg.Cards = []card{
		{"Saving over the period", rep.Money(p.SavingMinor) + " " + cur, "GPU-hours freed × the book's rates"},
		{"Actions", fmt.Sprint(len(actions)), counts},
		{"Kept as they are", fmt.Sprint(len(kept)), "workloads already sized to their use"},
		{"Held by the advised workloads", p.HeldHours.FloatString(1) + " h", rep.Money(p.ChargedMinor) + " " + cur + " at the book's rates"},
	}
	for _, r := range actions {
		pg.Actions = append(pg.Actions, actionRow{Kind: strings.ToUpper(string(r.Kind)), Workloads: strings.Join(r.Workloads, ", "), Team: r.Team,
			Model: r.Model, Before: r.Before, After: r.After, Freed: r.SavedHours.FloatString(1) + " of " + r.HeldHours.FloatString(1),
			Saving: rep.Money(r.SavingMinor), Contention: contentionShort(r), Latency: latencyText(r), Evidence: r.Evidence, Incomplete: r.Incomplete})
	}
	for _, r := range kept {
		pg.Kept = append(pg.Kept, keptRow{Workloads: strings.Join(r.Workloads, ", "), Team: r.Team, Model: r.Model, Before: r.Before,
			Held: r.HeldHours.FloatString(1), Evidence: r.Evidence, Incomplete: r.Incomplete})
	}
	pg.Explain = []string{
		fmt.Sprintf("The chargeback of the same period totals %s %s, of which the charge lines (what teams paid for their own GPU time, policy %s) are %s %s.",
			rep.Money(rep.Total), cur, rep.Book.Policy, rep.Money(a.Charges), cur),
		fmt.Sprintf("The advised workloads held %s GPU-hours, %s %s at the book's rates: the charge lines under policy allocation. A saving is part of that: GPU-hours a workload held and the proposed layout would not need.",
			p.HeldHours.FloatString(3), rep.Money(p.ChargedMinor), cur),
		"Savings are over the period shown, not per month, unless the period is a month. Rules and thresholds: docs/advisor.md.",
	}
	return pg
}

// periodTitle names the period as the report's page does: "November
// 2026" for a calendar month, else its bounds.
func periodTitle(a *Advice) string {
	rep := a.Report
	loc := rep.Book.Location
	from := rep.From.In(loc)
	if y, m, _ := from.Date(); from.Equal(calendar.DayStart(y, m, 1, loc)) && rep.To.Equal(calendar.DayStart(y, m+1, 1, loc)) {
		return from.Format("January 2006")
	}
	return from.Format("2 Jan 2006 15:04") + " – " + rep.To.In(loc).Format("2 Jan 2006 15:04")
}
