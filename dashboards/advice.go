package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// Series `gpuledger advise --format prom` writes after each scheduled run
// (node_exporter's textfile collector or a Pushgateway; docs/advisor.md).
// They carry no node label: a recommendation is about workloads, which
// move between nodes, so the advice panels follow the cluster, team and
// namespace variables only.
const (
	mAdviceSaving     = "gpuledger_advice_saving"
	mAdviceBefore     = "gpuledger_advice_gpus_before"
	mAdviceAfter      = "gpuledger_advice_gpus_after"
	mAdviceContention = "gpuledger_advice_contention_minutes"
	mAdviceIncomplete = "gpuledger_advice_incomplete"
	mAdvicePeriodEnd  = "gpuledger_advice_period_end_timestamp_seconds"
)

// adviceFilter selects recommendations; the per-recommendation series all
// carry team and namespace.
const adviceFilter = `cluster=~"$cluster", team=~"$team", namespace=~"$namespace"`

// byRecommendation identifies one recommendation of one run; only its
// saving carries the currency.
const byRecommendation = "kind, team, namespace, workloads, gpu_model"

// ofTopSavings keeps a per-recommendation series of the twenty largest
// savings and adds their currency, so the table's rows join on the same
// labels whatever the series' unit.
func ofTopSavings(series, saving string) string {
	return "max by (" + byRecommendation + ") (" + series + ") * on (" + byRecommendation + ") group_left (currency) max by (" +
		byRecommendation + ", currency) (0 * topk(20, " + saving + ") + 1)"
}

// Panel IDs of the advice dashboard.
const (
	adviceSaving = iota + 1
	adviceGPUsFreed
	adviceIncomplete
	adviceAdvised
	adviceByKind
	adviceByTeam
	adviceTop
	adviceOverTime
)

func advice() *dashboard.DashboardBuilder {
	saving := sel(mAdviceSaving, adviceFilter)
	b := newBoard(UIDAdvice, "gpuledger / Sharing advice",
		"What gpuledger advise last recommended: reclaiming GPUs held but unused, right-sizing to MIG profiles or fractions, consolidating one team's workloads under MPS, with the money each would save at the price book's rates. Fed by the gpuledger_advice_* series of advise --format prom (docs/advisor.md).")
	b.WithPanel(singleStat(adviceSaving, "Savings recommended",
		"Sum of the recommendations' savings over the advised period (usually a month), in the price book's currency: capacity freed × the book's rate.",
		"none", 6, 5, q("A", "sum by (currency) ("+saving+")", "{{currency}}")))
	b.WithPanel(singleStat(adviceGPUsFreed, "GPUs freed",
		"GPUs the recommendations' workloads held on average minus what the proposed layouts hold.",
		unitGPUs, 6, 5, q("A", "sum("+sel(mAdviceBefore, adviceFilter)+" - "+sel(mAdviceAfter, adviceFilter)+")", "")))
	b.WithPanel(singleStat(adviceIncomplete, "Incomplete recommendations",
		"Recommendations whose figures are not the whole answer: an unpriced GPU model, a model without a MIG profile table, a malformed service-time annotation. The table says why.",
		"none", 6, 5, q("A", "sum("+sel(mAdviceIncomplete, adviceFilter)+")", "")))
	b.WithPanel(singleStat(adviceAdvised, "Advised period ends",
		"End of the period the last advise run covered: a stale value means the scheduled run stopped.",
		"dateTimeAsIso", 6, 5, q("A", "max("+sel(mAdvicePeriodEnd, `cluster=~"$cluster"`)+") * 1000", "")))
	b.WithPanel(bars(adviceByKind, "Recommendations by kind",
		"How many workloads (or team groups) each rule recommends for: reclaim, right-size, consolidate, keep.",
		"none", 8, 8, q("A", "count by (kind) ("+saving+")", "{{kind}}")))
	b.WithPanel(bars(adviceByTeam, "Savings by team",
		"The recommended savings per team, in the book's currency.",
		"none", 16, 8, q("A", "sum by (team, currency) ("+saving+") > 0", "{{team}} ({{currency}})")))
	b.WithPanel(tableOf(adviceTop, "Largest savings",
		"The twenty recommendations that save the most, with the GPUs held now and under the proposal, and the minutes where the replayed usage would have exceeded the proposed capacity.",
		24, 10, map[string]string{"A": "Saving", "B": "GPUs now", "C": "GPUs proposed", "D": "Contention minutes", "E": "Incomplete"}, []string{"cluster", "__name__"},
		q("A", "topk(20, "+saving+")", ""),
		q("B", ofTopSavings(sel(mAdviceBefore, adviceFilter), saving), ""),
		q("C", ofTopSavings(sel(mAdviceAfter, adviceFilter), saving), ""),
		q("D", ofTopSavings(sel(mAdviceContention, adviceFilter), saving), ""),
		q("E", ofTopSavings(sel(mAdviceIncomplete, adviceFilter), saving), "")))
	b.WithPanel(timeSeries(adviceOverTime, "Savings recommended over time",
		"The recommended savings as each scheduled advise run reported them: falling as recommendations are applied, rising as workloads drift.",
		"none", 24, 8, q("A", "sum by (kind, currency) ("+saving+")", "{{kind}} ({{currency}})")))
	return b
}
