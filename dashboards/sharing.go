package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// Panel IDs of the sharing efficiency dashboard.
const (
	sharingEfficiencyBars = iota + 1
	sharingEfficiencyOverTime
	sharingTable
	sharingBorrowed
	sharingAllocated
	sharingFindings
)

// borrowedSeconds is, per container slice, the GPU time it used beyond
// its allocation over the rate interval: idle time lent by neighbours,
// which time-slicing and MPS allow and MIG does not.
func borrowed(filter string) string {
	used := sumBy(byContainer, rate(sel(mUsed, filter)))
	alloc := sumBy(byContainer, rate(sel(mAllocated, filter)))
	return "clamp_min(" + used + " - " + alloc + ", 0)"
}

// findingsByMode counts the containers flagged by a finding series per
// sharing mode of their slices.
func findingsByMode(finding string) string {
	modes := "max by (cluster, node, gpu, namespace, pod, container, sharing_mode) (" + sel(mRatio, ctrFilter) + ")"
	flagged := "(" + sel(finding, ctrFilter) + " == 1)"
	return "count by (sharing_mode) (" + modes + " and on (cluster, node, gpu, namespace, pod, container) " + flagged + ")"
}

func sharing() *dashboard.DashboardBuilder {
	alloc, used := sel(mAllocated, ctrFilter), sel(mUsed, ctrFilter)
	b := newBoard(UIDSharing, "gpuledger / Sharing efficiency",
		"MIG, MPS, time-slicing, HAMi and exclusive GPUs compared on your own data: how much of what tenants hold they use, how much time their neighbours leave unused they borrow, and where interference shows up. MIG buys isolation with reserved capacity; MPS and time-slicing recover held-but-unused capacity at the price of noisy neighbours.")

	b.WithPanel(bars(sharingEfficiencyBars, "Used / allocated by sharing mode (time range)",
		"GPU-hours used over GPU-hours allocated per sharing mode. Above 100%: tenants borrowed time their neighbours held but left unused (time-slicing, MPS); MIG and exclusive GPUs cannot exceed 100%.",
		unitPercent, 12, 8,
		q("A", sumBy("sharing_mode", increase(used))+" / "+sumBy("sharing_mode", increase(alloc)), "{{sharing_mode}}")))
	b.WithPanel(timeSeries(sharingEfficiencyOverTime, "Used / allocated by sharing mode",
		"The same ratio over time.",
		unitPercent, 12, 8,
		q("A", sumBy("sharing_mode", rate(used))+" / "+sumBy("sharing_mode", rate(alloc)), "{{sharing_mode}}")))
	b.WithPanel(tableOf(sharingTable, "Sharing modes compared (time range)",
		"Per sharing mode: GPU-hours allocated and used, efficiency, allocated GPU-hours held but unused, containers, and the share of used time that had to be estimated (split by allocation share because per-process data was not available).",
		24, 8,
		map[string]string{"A": "Allocated GPU-h", "B": "Used GPU-h", "C": "Efficiency", "D": "Held-but-unused GPU-h", "E": "Containers", "F": "Estimated share"}, nil,
		q("A", hours(sumBy("sharing_mode", increase(alloc))), ""),
		q("B", hours(sumBy("sharing_mode", increase(used))), ""),
		q("C", sumBy("sharing_mode", increase(used))+" / "+sumBy("sharing_mode", increase(alloc)), ""),
		q("D", hours(sumBy("sharing_mode", idleAllocatedSeconds(ctrFilter))), ""),
		q("E", "count by (sharing_mode) (max by ("+byContainer+") ("+sel(mRatio, ctrFilter)+"))", ""),
		q("F", orZero(sumBy("sharing_mode", increase(sel(mUsed, ctrFilter+`, method="estimated"`))), sumBy("sharing_mode", increase(used)))+
			" / "+sumBy("sharing_mode", increase(used)), "")).
		OverrideByName("Efficiency", []dashboard.DynamicConfigValue{{Id: "unit", Value: unitPercent}}).
		OverrideByName("Estimated share", []dashboard.DynamicConfigValue{{Id: "unit", Value: unitPercent}}))
	b.WithPanel(timeSeries(sharingBorrowed, "GPU time used beyond allocation",
		"GPUs' worth of time that containers used beyond their allocation share, per sharing mode: time lent by neighbours who held it but left it unused. High values on a busy GPU are where noisy neighbours come from.",
		unitGPUs, 12, 8,
		q("A", sumBy("sharing_mode", borrowed(ctrFilter)), "{{sharing_mode}}")))
	b.WithPanel(stacked(sharingAllocated, "Allocated GPUs by sharing mode",
		"GPUs (GPU-hours per hour) held by containers, per sharing mode.",
		unitGPUs, 12, 8,
		q("A", sumBy("sharing_mode", rate(alloc)), "{{sharing_mode}}")))
	b.WithPanel(bars(sharingFindings, "Containers flagged now, by sharing mode",
		"Noisy neighbours and held-but-unused allocations flagged right now, by the sharing mode of the container's slice. MIG instances are hardware-isolated and never flagged as noisy.",
		"none", 24, 6,
		q("A", findingsByMode(mNoisy), "{{sharing_mode}} noisy neighbours"),
		q("B", findingsByMode(mIdleAlloc), "{{sharing_mode}} held but unused")))
	return b
}
