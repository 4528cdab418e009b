package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// Panel IDs of the team chargeback.
const (
	chargebackTable = iota + 1
	chargebackAllocatedByTeam
	chargebackUsedByTeam
	chargebackEfficiency
	chargebackCostRate
	chargebackTopIdle
	chargebackTokens
	chargebackQuota
)

// quotaFilter selects serve's quota gauges: per team, resource and source,
// no node or namespace.
const quotaFilter = `cluster=~"$cluster", team=~"$team"`

// idleAllocatedSeconds is, per container slice, the allocated GPU-seconds
// it left unused over the time range (never negative: time-sliced tenants
// may use more than they hold). A container that never ran anything has no
// used series and counts as fully idle.
func idleAllocatedSeconds(filter string) string {
	alloc := sumBy(byContainer, increase(sel(mAllocated, filter)))
	used := sumBy(byContainer, increase(sel(mUsed, filter)))
	return "clamp_min(" + alloc + " - " + orZero(used, alloc) + ", 0)"
}

// teamCostRate is the live cost per hour of each team, under the
// allocation policy (counter: allocated) or the usage policy (used).
func teamCostRate(counter string) string {
	perGPU := sumBy(byGPU+", team", rate(sel(counter, ctrFilter)))
	return sumBy("team, currency", priced(sumBy("cluster, team, model", gpuModel(perGPU))))
}

func chargeback() *dashboard.DashboardBuilder {
	alloc, used := sel(mAllocated, ctrFilter), sel(mUsed, ctrFilter)
	b := newBoard(UIDChargeback, "gpuledger / Team chargeback",
		"Cost and efficiency per team: GPU-hours allocated and used, the live cost rate under both billing policies, and the allocations held but unused. Team is the namespace's team label (a pod cannot move its cost to another team).")

	b.WithPanel(tableOf(chargebackTable, "Teams over the time range",
		"Per team over the dashboard's time range: GPU-hours allocated, used, the efficiency (used / allocated) and the allocated GPU-hours held but unused.",
		24, 9,
		map[string]string{"A": "Allocated GPU-h", "B": "Used GPU-h", "C": "Efficiency", "D": "Held-but-unused GPU-h"}, nil,
		q("A", hours(sumBy("team", increase(alloc))), ""),
		q("B", hours(sumBy("team", increase(used))), ""),
		q("C", sumBy("team", increase(used))+" / "+sumBy("team", increase(alloc)), ""),
		q("D", hours(sumBy("team", idleAllocatedSeconds(ctrFilter))), "")).
		OverrideByName("Efficiency", []dashboard.DynamicConfigValue{{Id: "unit", Value: unitPercent}}))
	b.WithPanel(stacked(chargebackAllocatedByTeam, "Allocated GPUs by team",
		"GPUs (GPU-hours per hour) each team holds an allocation for: what it pays under the allocation policy.",
		unitGPUs, 12, 9,
		q("A", sumBy("team", rate(alloc)), "{{team}}")))
	b.WithPanel(stacked(chargebackUsedByTeam, "Used GPUs by team",
		"GPUs (GPU-hours per hour) each team's containers kept busy: what it pays under the usage policy.",
		unitGPUs, 12, 9,
		q("A", sumBy("team", rate(used)), "{{team}}")))
	b.WithPanel(bars(chargebackEfficiency, "Efficiency by team (used / allocated, time range)",
		"Used over allocated GPU-hours per team. Low bars are teams paying for GPUs they hold but leave unused.",
		unitPercent, 12, 9,
		q("A", sumBy("team", increase(used))+" / "+sumBy("team", increase(alloc)), "{{team}}")))
	b.WithPanel(timeSeries(chargebackCostRate, "Live cost rate by team",
		"Cost per hour of each team at the price book's rate for its GPUs' model: under the allocation policy (allocated GPU-hours) and the usage policy (used GPU-hours). Needs gpuledger_price_per_gpu_hour from the chargeback price book.",
		unitPerHour, 12, 9,
		q("A", teamCostRate(mAllocated), "{{team}} allocated ({{currency}})"),
		q("B", teamCostRate(mUsed), "{{team}} used ({{currency}})")))
	b.WithPanel(tableOf(chargebackTopIdle, "Top held-but-unused allocations (time range)",
		"The 20 container slices that left the most allocated GPU-hours unused over the time range. Click a row for its GPU.",
		24, 10, map[string]string{"A": "Held-but-unused GPU-h"}, []string{"cluster"},
		q("A", "topk(20, "+hours(idleAllocatedSeconds(ctrFilter))+")", "")).
		DataLinks(drilldownLink()))
	b.WithPanel(tableOf(chargebackTokens, "Cost per million tokens by model (time range)",
		"Inference pods' exact GPU cost over the time range (allocated GPU-hours at the price book's rates: a MIG slice, MPS client or HAMi fraction at its share, not a whole GPU) divided by the tokens their servers counted (vLLM, SGLang, TGI, Triton TensorRT-LLM, NVIDIA NIM), per namespace and model. Each column divides the whole cost. Needs the servers scraped with their pod's namespace and pod labels (docs/tokens.md).",
		24, 8, map[string]string{"A": "per M input tokens", "B": "per M output tokens"}, []string{"cluster"},
		q("A", costPerMillionTokens(promptTokenMetrics), ""),
		q("B", costPerMillionTokens(generationTokenMetrics), "")))
	b.WithPanel(timeSeries(chargebackQuota, "GPU quota, held and used by team",
		"The GPUs each team is promised by quota (ResourceQuota, Kueue, Volcano or KAI, from gpuledger serve --quota; MIG quotas weighted by their slices) beside the GPUs its containers hold and use. Quota above held is promised but unheld; held above quota is borrowed (docs/quota.md).",
		unitGPUs, 24, 9,
		q("A", sumBy("team, source", sel(mQuota, quotaFilter)), "{{team}} quota ({{source}})"),
		q("B", sumBy("team", rate(alloc)), "{{team}} held"),
		q("C", sumBy("team", rate(used)), "{{team}} used")))
	return b
}
