package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math/big"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
)

//go:embed report.html.tmpl
var htmlTemplate string

var pageTemplate = template.Must(template.New("report").Parse(htmlTemplate))

// maxChartTeams bounds the bars of the per-team charts; the rest are one
// "other teams" bar. maxFindingRows bounds each findings table.
const (
	maxChartTeams  = 12
	maxFindingRows = 12
	maxRelated     = 6
)

// WriteHTML writes the report as one self-contained HTML page: inline CSS
// and SVG, no script, and a Content-Security-Policy that forbids fetching
// anything.
func WriteHTML(w io.Writer, r *Report) error {
	if err := pageTemplate.Execute(w, newPage(r)); err != nil {
		return fmt.Errorf("cannot write report HTML: %w", err)
	}
	return nil
}

type page struct {
	Title, Period, Range, Zone string
	Partial                    string // PartialNote; "" for a whole period
	Currency, Policy, Idle     string
	TeamLabel, Generated       string
	Empty                      bool
	NoUsage                    string
	Cards                      []card
	CostChart, TeamHours       chart
	ModeHours, Capacity        chart
	Teams                      []teamRow
	Platform, Rounding, Total  string
	TeamTotals                 teamRow
	// Cluster names the one cluster billed; Clusters is a fleet bill's
	// split by cluster (HasClusters).
	Cluster           string
	Clusters          []clusterRow
	ClusterNotes      []string
	Modes             []modeRow
	Models            []modelRow
	IdleAllocs        []findingRow
	IdleMore          int
	Noisy             []findingRow
	NoisyMore         int
	MemoryGrowth      []findingRow
	MemoryGrowthMore  int
	FindingsDropped   int
	Lines             []lineRow
	Explain           []string
	Reconcile         []string
	Unknown           []string
	Savings           *savingsPage
	Tokens            *tokensPage
	Quota             *quotaPage
	TokensUnavailable string
	Energy            *energyPage   // nil without an energy section
	Gaps              *gapsPage     // nil without coverage gaps
	Example           template.HTML // the example prices banner, or "" (example.go)
	// PriceBooks name the books that priced the period when the ledger
	// records books (pricebooks_render.go).
	PriceBooks  []string
	Adjustments *adjustmentsPage
}

// energyPage is the "Energy and carbon" section.
type energyPage struct {
	Rate, Intensity string // as the book names them; "" when it does not
	// Unlabelled is the line on nodes without a recorded value of the
	// book's carbon node label; "" without one.
	Unlabelled      string
	Teams           []energyRow
	Platform, Total energyRow
}

type energyRow struct{ Team, KWh, Cost, Co2e string }

type card struct{ Label, Value, Note string }

type teamRow struct {
	Team, Namespaces                string
	Allocated, Used, HeldIdle, Eff  string
	Borrowed                        string
	Charge, IdleShare, Total, Share string
}

type modeRow struct{ Mode, Allocated, Used, Borrowed, Eff, Charge string }

type modelRow struct {
	Model, Rate, Capacity, Unallocated, Idle, Unattributed string
	Amount, Unbilled, PaidBy                               string
	Unknown                                                bool
}

type findingRow struct {
	Pod, Container, Team, Where string
	Episodes, Duration, First   string
	Last, Related               string
	Detail                      string
}

type lineRow struct {
	Team, Namespace, Model, Mode, Type string
	Label                              string // the line type in the glossary's words
	Allocated, Used, Eff, Energy       string
	Rate, Amount                       string
	Book                               string // the short SHA-256 of the book that priced it
}

func newPage(r *Report) page {
	b := r.Book
	p := page{
		Title:     "GPU chargeback " + r.PeriodLabel() + partialSuffix(r),
		Partial:   r.PartialNote(),
		Gaps:      newGapsPage(r),
		Example:   ExampleBanner(r.ExamplePrices()),
		Period:    periodTitle(r),
		Range:     r.From.Format("Mon 2 Jan 2006 15:04") + " – " + r.To.Format("Mon 2 Jan 2006 15:04 MST"),
		Zone:      b.Timezone,
		Currency:  b.Currency.Code,
		Policy:    string(b.Policy),
		Idle:      string(b.Idle),
		TeamLabel: b.TeamLabel,
		Empty:     r.Empty(),
		NoUsage:   NoUsageMessage,
		Explain:   explain(b),
	}
	if !r.GeneratedAt.IsZero() {
		p.Generated = r.GeneratedAt.In(b.Location).Format("2 Jan 2006 15:04 MST")
	}
	if r.Empty() {
		return p
	}
	money := func(x int64) string { return formatMinor(x, b.Currency.MinorUnit, true) }
	p.Total, p.Platform, p.Rounding = money(r.Total), money(r.Platform), money(r.Rounding)
	p.Cards = cards(r, money)
	p.CostChart = costChart(r, money)
	p.TeamHours = hoursChart("GPU-hours per team", teamHourInputs(r))
	p.ModeHours = hoursChart("GPU-hours per sharing mode", modeHourInputs(r))
	p.Capacity = capacityChart(r)
	p.Teams, p.TeamTotals = teamRows(r, money)
	p.ClusterNotes = r.ClusterNotes
	if r.HasClusters() {
		p.Cluster = r.Cluster
		for _, c := range r.Clusters {
			p.Clusters = append(p.Clusters, clusterRow{Cluster: c.Cluster, Total: money(c.Total)})
		}
	}
	for _, m := range r.Modes {
		p.Modes = append(p.Modes, modeRow{Mode: m.Mode, Allocated: hoursText(m.AllocatedHours), Used: hoursText(m.UsedHours),
			Borrowed: hoursText(m.BorrowedHours), Eff: percent(m.Efficiency), Charge: money(m.Charge)})
	}
	p.Models = modelRows(r, money)
	p.IdleAllocs, p.IdleMore = findingRows(r, attribution.FindingIdleAllocation)
	p.Noisy, p.NoisyMore = findingRows(r, attribution.FindingNoisyNeighbour)
	p.MemoryGrowth, p.MemoryGrowthMore = findingRows(r, attribution.FindingMemoryGrowth)
	p.FindingsDropped = r.FindingsDropped
	for _, l := range r.Lines {
		f := lineFields(r, l)
		p.Lines = append(p.Lines, lineRow{Team: l.Team, Namespace: l.Namespace, Model: l.GPUModel, Mode: l.SharingMode, Type: string(l.Type), Label: LineLabel(l.Type),
			Allocated: f.Allocated, Used: f.Used, Eff: f.Efficiency, Energy: f.Energy, Rate: f.Rate, Amount: money(l.Amount), Book: priceBookCells(l)[0]})
	}
	p.PriceBooks = priceBooksHTML(r)
	for _, m := range r.UnknownModels() {
		p.Unknown = append(p.Unknown, fmt.Sprintf("%s (%s GPU-hours, %d ledger rows) priced at the default rate %s",
			m.Model, hoursText(m.CapacityHours), m.Rows, m.Rate.Format(b.Currency.MinorUnit)))
	}
	p.Reconcile = reconcile(r, money)
	p.Savings = savingsSection(r, money)
	p.Tokens = tokensSection(r)
	p.Quota = quotaSection(r)
	if p.Tokens == nil {
		p.TokensUnavailable = r.TokensUnavailable
	}
	p.Energy = energySection(r, money)
	p.Adjustments = adjustmentsHTML(r)
	return p
}

func energySection(r *Report, money func(int64) string) *energyPage {
	if !r.HasEnergy() || r.Energy == nil {
		return nil
	}
	e := &energyPage{}
	if r.HasEnergyCost() {
		e.Rate = r.Book.Energy.Rate.String()
	}
	if r.HasCarbon() {
		e.Intensity = exactDecimal(r.Book.Energy.CarbonIntensity)
	}
	if t := r.Energy; t.NodeLabel != "" {
		e.Unlabelled = fmt.Sprintf("nodes without a recorded %s: %d", t.NodeLabel, t.UnlabelledNodes)
	}
	row := func(team string, kwh *big.Rat, cost, grams int64) energyRow {
		return energyRow{Team: team, KWh: decimal(kwh, energyDecimals), Cost: money(cost), Co2e: Kg(grams)}
	}
	for _, t := range r.Teams {
		e.Teams = append(e.Teams, row(t.Team, t.EnergyKWh, t.EnergyCost, t.Co2eGrams))
	}
	t := r.Energy
	e.Platform = row("platform", t.PlatformKWh, t.PlatformCost, t.PlatformCo2eGrams)
	e.Total = row("", t.KWh, t.Cost, t.Co2eGrams)
	return e
}

// partialSuffix marks a partial period in the page's title.
func partialSuffix(r *Report) string {
	if r.Partial() {
		return " (partial)"
	}
	return ""
}

func periodTitle(r *Report) string {
	if isMonth(r.From, r.To, r.Book.Location) {
		return r.From.Format("January 2006")
	}
	return r.From.Format("2 Jan 2006 15:04") + " – " + r.To.Format("2 Jan 2006 15:04")
}

func cards(r *Report, money func(int64) string) []card {
	var capH, alloc, used, unalloc, idle = new(big.Rat), new(big.Rat), new(big.Rat), new(big.Rat), new(big.Rat)
	for _, m := range r.Models {
		capH.Add(capH, m.CapacityHours)
		alloc.Add(alloc, m.AllocatedHours)
		used.Add(used, m.UsedHours)
		unalloc.Add(unalloc, m.UnallocatedHours)
		idle.Add(idle, m.IdleHours)
	}
	unbilled := r.Platform
	var shared int64
	for _, t := range r.Teams {
		shared += t.IdleShare
	}
	note := "on the platform line"
	if r.Book.Idle == pricebook.IdleShared {
		unbilled += shared
		note = "shared over the teams"
		if r.Platform != 0 {
			note = "shared, rest on the platform line"
		}
	}
	return []card{
		{"Total charged", money(r.Total) + " " + r.Book.Currency.Code, fmt.Sprintf("%d teams, %d GPU models", len(r.Teams), len(r.Models))},
		{"GPU capacity", hoursText(capH) + " h", fmt.Sprintf("%s h held, %s h never allocated", hoursText(alloc), hoursText(unalloc))},
		{"Efficiency", percent(ratio(used, alloc)), efficiencyNote(r, used, alloc)},
		{"Unused capacity", money(unbilled) + " " + r.Book.Currency.Code, note},
	}
}

// efficiencyNote explains the efficiency card: used over allocated hours,
// where used includes time borrowed beyond the held share (time-slicing
// and MPS lend time co-tenants leave idle), so the part within the held
// share is shown beside it.
func efficiencyNote(r *Report, used, alloc *big.Rat) string {
	lent := new(big.Rat)
	for _, t := range r.Teams {
		lent.Add(lent, t.BorrowedHours)
	}
	note := fmt.Sprintf("%s of %s held GPU-hours used", hoursText(used), hoursText(alloc))
	if lent.Sign() > 0 {
		within := new(big.Rat).Sub(used, lent)
		note += fmt.Sprintf("; %s h of the use was borrowed (beyond the held share, on time others left unused): %s within the held share", hoursText(lent), percent(ratio(within, alloc)))
	}
	return note
}

func costChart(r *Report, money func(int64) string) chart {
	unit := r.Book.Currency.MinorUnit
	f := func(x int64) float64 { v, _ := new(big.Rat).SetFrac64(x, pow10(unit)).Float64(); return v }
	var rows []barInput
	var otherC, otherS int64
	others := 0
	for i, t := range r.Teams {
		if i >= maxChartTeams {
			otherC, otherS = otherC+t.Charge, otherS+t.IdleShare
			others++
			continue
		}
		rows = append(rows, barInput{Label: t.Team, Value: money(t.Total), Parts: []barPart{
			{f(t.Charge), "s-charge", t.Team + ": charge " + money(t.Charge)},
			{f(t.IdleShare), "s-share", t.Team + ": share of unused capacity " + money(t.IdleShare)},
		}})
	}
	if others > 0 {
		rows = append(rows, barInput{Label: fmt.Sprintf("%d other teams", others), Value: money(otherC + otherS), Parts: []barPart{
			{f(otherC), "s-charge", "charge " + money(otherC)}, {f(otherS), "s-share", "share of unused capacity " + money(otherS)}}})
	}
	if r.Platform != 0 {
		rows = append(rows, barInput{Label: "platform", Value: money(r.Platform), Parts: []barPart{{f(r.Platform), "s-platform", "platform " + money(r.Platform)}}})
	}
	legend := []legendItem{{"s-charge", "charge"}}
	if r.Book.Idle == pricebook.IdleShared {
		legend = append(legend, legendItem{"s-share", "share of unused capacity"})
	}
	if r.Platform != 0 {
		legend = append(legend, legendItem{"s-platform", "platform"})
	}
	return layout(wideChart, "Cost per team in "+r.Book.Currency.Code, rows, legend, compact)
}

func hoursChart(title string, rows []barInput) chart {
	return layout(narrowChart, title, rows, []legendItem{{"s-alloc", "held GPU-hours"}, {"s-used", "used GPU-hours"}}, compact)
}

func teamHourInputs(r *Report) []barInput {
	var rows []barInput
	for i, t := range r.Teams {
		if i >= maxChartTeams {
			break
		}
		rows = append(rows, hourBar(t.Team, t.AllocatedHours, t.UsedHours, t.Efficiency))
	}
	return rows
}

func modeHourInputs(r *Report) []barInput {
	var rows []barInput
	for _, m := range r.Modes {
		rows = append(rows, hourBar(m.Mode, m.AllocatedHours, m.UsedHours, m.Efficiency))
	}
	return rows
}

func hourBar(label string, alloc, used, eff *big.Rat) barInput {
	return barInput{Label: label, Overlay: true, Value: percent(eff) + " used", Parts: []barPart{
		{ratF64(alloc), "s-alloc", label + ": " + hoursText(alloc) + " h held"},
		{ratF64(used), "s-used", label + ": " + hoursText(used) + " h used"},
	}}
}

func capacityChart(r *Report) chart {
	var rows []barInput
	for _, m := range r.Models {
		rows = append(rows,
			barInput{Label: m.Model + " · held", Value: hoursText(m.CapacityHours) + " h", Parts: []barPart{
				{ratF64(m.AllocatedHours), "s-held", hoursText(m.AllocatedHours) + " h held by containers"},
				{ratF64(m.UnallocatedHours), "s-unalloc", hoursText(m.UnallocatedHours) + " h never allocated"}}},
			barInput{Label: m.Model + " · busy", Value: percent(ratio(new(big.Rat).Add(m.UsedHours, m.UnattributedHours), m.CapacityHours)) + " busy", Parts: []barPart{
				{ratF64(m.UsedHours), "s-used", hoursText(m.UsedHours) + " h used by containers"},
				{ratF64(m.UnattributedHours), "s-unattr", hoursText(m.UnattributedHours) + " h busy, no container"},
				{ratF64(m.IdleHours), "s-idle", hoursText(m.IdleHours) + " h idle device time"}}})
	}
	return layout(wideChart, "GPU capacity per model", rows, []legendItem{{"s-held", "held"}, {"s-unalloc", "never allocated"},
		{"s-used", "used by containers"}, {"s-unattr", "busy, no container"}, {"s-idle", "idle device time"}}, compact)
}

func teamRows(r *Report, money func(int64) string) ([]teamRow, teamRow) {
	var rows []teamRow
	alloc, used, held, lent := new(big.Rat), new(big.Rat), new(big.Rat), new(big.Rat)
	var charge, share int64
	for _, t := range r.Teams {
		rows = append(rows, teamRow{Team: t.Team, Namespaces: strings.Join(t.Namespaces, ", "), Allocated: hoursText(t.AllocatedHours),
			Used: hoursText(t.UsedHours), HeldIdle: hoursText(t.HeldIdleHours), Borrowed: hoursText(t.BorrowedHours), Eff: percent(t.Efficiency), Charge: money(t.Charge),
			IdleShare: money(t.IdleShare), Total: money(t.Total), Share: shareOf(t.Total, r.Total)})
		alloc.Add(alloc, t.AllocatedHours)
		used.Add(used, t.UsedHours)
		held.Add(held, t.HeldIdleHours)
		lent.Add(lent, t.BorrowedHours)
		charge += t.Charge
		share += t.IdleShare
	}
	return rows, teamRow{Allocated: hoursText(alloc), Used: hoursText(used), HeldIdle: hoursText(held), Borrowed: hoursText(lent), Eff: percent(ratio(used, alloc)),
		Charge: money(charge), IdleShare: money(share), Total: money(charge + share), Share: shareOf(charge+share, r.Total)}
}

func modelRows(r *Report, money func(int64) string) []modelRow {
	var rows []modelRow
	for _, m := range r.Models {
		row := modelRow{Model: m.Model, Rate: m.Rate.Format(r.Book.Currency.MinorUnit), Capacity: hoursText(m.CapacityHours),
			Unallocated: hoursText(m.UnallocatedHours), Idle: hoursText(m.IdleHours), Unattributed: hoursText(m.UnattributedHours),
			Amount: money(m.Amount), Unbilled: money(m.PlatformAmount + m.IdleShareAmount), Unknown: !m.Known}
		var payers []string
		if m.PlatformAmount != 0 {
			payers = append(payers, "platform "+money(m.PlatformAmount))
		}
		for i, p := range m.IdleSharedBy {
			if i == 3 {
				payers = append(payers, fmt.Sprintf("%d more teams", len(m.IdleSharedBy)-3))
				break
			}
			payers = append(payers, p.Team+" "+money(p.Amount))
		}
		row.PaidBy = strings.Join(payers, " · ")
		if row.PaidBy == "" {
			row.PaidBy = "—"
		}
		rows = append(rows, row)
	}
	return rows
}

func findingRows(r *Report, kind string) ([]findingRow, int) {
	var rows []findingRow
	more := 0
	for _, f := range r.Findings {
		if f.Kind != kind {
			continue
		}
		if len(rows) == maxFindingRows {
			more++
			continue
		}
		where := f.Node
		if len(f.GPUs) > 0 {
			where += " · " + strings.Join(f.GPUs, ", ")
		}
		rows = append(rows, findingRow{Pod: f.PodName(), Container: f.Container, Team: f.Team, Where: where,
			Episodes: fmt.Sprint(f.Episodes), Duration: duration(f.Duration),
			First: f.First.In(r.Book.Location).Format("2 Jan 15:04"), Last: f.Last.In(r.Book.Location).Format("2 Jan 15:04"),
			Related: relatedText(f.Related), Detail: f.Detail})
	}
	return rows, more
}

func relatedText(pods []string) string {
	if len(pods) > maxRelated {
		return strings.Join(pods[:maxRelated], ", ") + fmt.Sprintf(" and %d more", len(pods)-maxRelated)
	}
	return strings.Join(pods, ", ")
}

func explain(b *pricebook.Book) []string {
	var out []string
	switch b.Policy {
	case pricebook.PolicyUsage:
		out = append(out, "Policy usage: each team pays for the GPU-hours its containers used measured per process where the GPU allows it and estimated by allocation share where it does not (MIG instances shared by replicas, MPS showing only its server).")
		if b.MemoryWeighted() {
			w := exactDecimal(b.MemoryWeight)
			rest := new(big.Rat).Sub(big.NewRat(1, 1), b.MemoryWeight)
			out = append(out, fmt.Sprintf("memoryWeight %s: a container is charged %s × its used GPU-hours + %s × its memory share (GPU memory MiB-hours it held / the device's memory in MiB). Memory nobody held is uncharged capacity like idle device time.",
				w, exactDecimal(rest), w))
		}
		if b.Idle == pricebook.IdleShared {
			out = append(out, "idle: shared. Idle device time (the GPU was not busy) and busy time no container explains (unattributed) are spread, day by day, over the teams in proportion to the hours they used on the same GPU model that day (each team's share of unused capacity). On a day when nobody used a model, that time goes to the platform line.")
		} else {
			out = append(out, "idle: platform. Idle device time (the GPU was not busy) and busy time no container explains (unattributed) are on the platform line, not on any team's bill.")
		}
	case pricebook.PolicyFlat:
		out = append(out, "Policy flat: each GPU slot a team's containers held pays the model's price per slot per month, prorated by the hours held in each calendar month, whatever was used. A whole GPU is one slot; a time-slicing or MPS replica 1/replicas of one; a MIG instance its compute slices / 7.")
		if b.Idle == pricebook.IdleShared {
			out = append(out, "idle: shared. Slots held by no container are spread, day by day, over the teams in proportion to the slot-hours they held on the same GPU model that day (each team's share of unused capacity). On a day when nobody held a model, its slots go to the platform line.")
		} else {
			out = append(out, "idle: platform. Slots held by no container are on the platform line at the same price, not on any team's bill.")
		}
	default:
		out = append(out, "Policy allocation: each team pays for the GPU-hours its containers held, whether they used them or not. A whole GPU is 1 GPU-hour per hour; a time-slicing or MPS replica 1/replicas of it; a MIG instance its compute slices / 7; a HAMi share its cores %.")
		if b.Idle == pricebook.IdleShared {
			out = append(out, "idle: shared. Never-allocated capacity (held by no container) is spread, day by day, over the teams in proportion to the hours they held on the same GPU model that day (each team's share of unused capacity). On a day when nobody held a model, its capacity goes to the platform line.")
		} else {
			out = append(out, "idle: platform. Never-allocated capacity (held by no container) is on the platform line, not on any team's bill.")
		}
	}
	if b.Policy == pricebook.PolicyFlat {
		out = append(out, fmt.Sprintf("Slot prices are per physical GPU slot per calendar month, by GPU model; the rate per GPU-hour shown is that price over the month's hours. Teams are named by the %q label of the namespace (else of the pod, else the namespace name), as it was when the GPU time was recorded. Periods are calendar months in %s.", b.TeamLabel, b.Timezone))
		return out
	}
	out = append(out, fmt.Sprintf("Rates are per physical GPU-hour, by GPU model; models the price book does not list are charged at the default rate and named at the top of the report. Teams are named by the %q label of the namespace (else of the pod, else the namespace name), as it was when the GPU time was recorded. Periods are calendar months in %s.", b.TeamLabel, b.Timezone))
	return out
}

func reconcile(r *Report, money func(int64) string) []string {
	cur := r.Book.Currency.Code
	var parts []string
	for _, m := range r.Models {
		if m.SlotRate != nil {
			parts = append(parts, fmt.Sprintf("%s %s h = %s slot-months × %s = %s", m.Model, hoursText(m.CapacityHours),
				decimal(m.SlotMonths, slotMonthDecimals), m.SlotRate.Format(r.Book.Currency.MinorUnit), money(m.Amount)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s h × %s = %s", m.Model, hoursText(m.CapacityHours), m.Rate.Format(r.Book.Currency.MinorUnit), money(m.Amount)))
	}
	out := []string{
		"Capacity × rate, per model, each rounded once: " + strings.Join(parts, "; ") + ".",
		fmt.Sprintf("The fleet total, rounded once, is %s %s; the rounding line (%s) is the difference, so the lines add up to it exactly. Within a model, lines are rounded by largest remainder: each is its exact amount rounded down or up, and the model's lines add up to its capacity × rate.", money(r.Total), cur, money(r.Rounding)),
	}
	if r.Book.Policy == pricebook.PolicyQuota {
		out[1] = fmt.Sprintf("The fleet total, rounded once, is %s %s. The teams pay their quota and above-quota lines; the platform line (%s) is the capacity × rate they do not pay, negative when they pay more. Every line is its exact amount rounded down or up by largest remainder, so the lines add up to the total exactly.", money(r.Total), cur, money(r.Platform))
	}
	return out
}

func hoursText(x *big.Rat) string {
	if x == nil {
		return "—"
	}
	s := decimal(x, 1)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	out := groupThousands(intPart) + "." + frac
	if neg {
		out = "-" + out
	}
	return out
}

func percent(x *big.Rat) string {
	if x == nil {
		return "—"
	}
	return decimal(new(big.Rat).Mul(x, big.NewRat(100, 1)), 0) + "%"
}

func shareOf(x, total int64) string {
	if total == 0 {
		return "—"
	}
	return decimal(new(big.Rat).Mul(big.NewRat(x, total), big.NewRat(100, 1)), 1) + "%"
}

func duration(d time.Duration) string {
	d = d.Round(time.Minute)
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh %02dm", hours, mins)
	}
	return fmt.Sprintf("%dm", mins)
}

func ratF64(x *big.Rat) float64 {
	if x == nil {
		return 0
	}
	f, _ := x.Float64()
	return f
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// clusterRow is one cluster's line of a fleet bill's split.
type clusterRow struct{ Cluster, Total string }
