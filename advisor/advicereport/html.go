package advicereport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
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
	Released, Moved                             string // the saving split (report.SplitSaving)
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
	Saving, Released, Moved           string
	Idle                              string
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
		Idle:   string(rep.Book.Idle),
		MIG:    p.MIG, Problems: p.Problems,
	}
	released, moved := a.split(actions)
	pg.Released, pg.Moved = rep.Money(released), rep.Money(moved)
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
		{"Capacity released", pg.Released + " " + cur, "whole GPUs freed: money the company stops spending"},
		{"Cost that moves between teams", pg.Moved + " " + cur, movedNote(rep.Book.Idle)},
		{"Actions", fmt.Sprint(len(actions)), counts},
		{"Kept as they are", fmt.Sprint(len(kept)), "workloads already sized to their use"},
		{"Held by the advised workloads", p.HeldHours.FloatString(1) + " h", rep.Money(p.ChargedMinor) + " " + cur + " at the book's rates"},
	}
	for _, r := range actions {
		rel, mov := report.SplitSaving(r.SavingMinor, r.BeforeGPUs, r.AfterGPUs)
		pg.Actions = append(pg.Actions, actionRow{Released: rep.Money(rel), Moved: rep.Money(mov), Kind: strings.ToUpper(string(r.Kind)), Workloads: strings.Join(r.Workloads, ", "), Team: r.Team,
			Model: r.Model, Before: r.Before, After: r.After, Freed: r.SavedHours.FloatString(1) + " of " + r.HeldHours.FloatString(1),
			Saving: rep.Money(r.SavingMinor), Contention: contentionShort(r), Latency: latencyText(r), Evidence: financeWords(r.Evidence), Incomplete: r.Incomplete})
	}
	for _, r := range kept {
		pg.Kept = append(pg.Kept, keptRow{Workloads: strings.Join(r.Workloads, ", "), Team: r.Team, Model: r.Model, Before: r.Before,
			Held: r.HeldHours.FloatString(1), Evidence: financeWords(r.Evidence), Incomplete: r.Incomplete})
	}
	pg.Explain = []string{
		fmt.Sprintf("The chargeback of the same period totals %s %s, of which the charge lines (what teams paid for their own GPU time, policy %s) are %s %s.",
			rep.Money(rep.Total), cur, rep.Book.Policy, rep.Money(a.Charges), cur),
		fmt.Sprintf("The advised workloads held %s GPU-hours, %s %s at the book's rates: the charge lines under policy allocation. A saving is part of that: GPU-hours a workload held and the proposed layout would not need.",
			p.HeldHours.FloatString(3), rep.Money(p.ChargedMinor), cur),
		fmt.Sprintf("Of the saving of %s %s, %s %s is capacity released: whole GPUs the changes free, which the company can give back or not buy. The other %s %s frees part of a GPU that stays in the fleet: the team that frees it pays less, and %s.",
			pg.Saving, cur, pg.Released, cur, pg.Moved, cur, movedWhere(rep.Book.Idle)),
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

// movedNote is the card's note on the cost that moves between teams.
func movedNote(idle pricebook.Idle) string {
	if idle == pricebook.IdleShared {
		return "part of a GPU freed: the other teams' share of unused capacity grows"
	}
	return "part of a GPU freed: the platform line grows"
}

// movedWhere says who pays for the part of a GPU a change frees.
func movedWhere(idle pricebook.Idle) string {
	if idle == pricebook.IdleShared {
		return "under idle: shared the other teams on that GPU model pay for the time it frees, as their share of unused capacity"
	}
	return "under idle: platform the time it frees is on the platform line"
}

// engineerPhrases are the advisor's evidence in the glossary's words for
// the page finance reads (the text and JSON keep the advisor's own).
var engineerPhrases = strings.NewReplacer(
	"idle_allocation findings", "held-but-unused findings",
	"its replica-minutes", "the minutes its replicas ran",
	"replica-minutes", "minutes of replicas",
	"per-replica usage", "use of one replica",
)

// financeWords is evidence as the page says it.
func financeWords(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = percentileWords(engineerPhrases.Replace(l))
	}
	return out
}

// percentile matches the advisor's "p99 " (or p95, p99.5): a percentile
// of the minutes, which the page spells out.
var percentile = regexp.MustCompile(`\bp(\d+(?:\.\d+)?) `)

func percentileWords(s string) string {
	return percentile.ReplaceAllString(s, "busiest-minute (${1}th percentile) ")
}
