package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// Panel IDs of the findings dashboard not named in uids.go.
const (
	findingsOverTime = iota + 4
	findingsInterference
	findingsIdleUse
	// PanelFindingsMemory is the memory-growth table, which the
	// memory alerts link to.
	PanelFindingsMemory
)

// The memory-growth detector's series (collector/exposition).
const (
	mMemGrowth     = "gpuledger_memory_growth"
	mMemGrowthRate = "gpuledger_memory_growth_bytes_per_second"
	mMemExhaustion = "gpuledger_memory_exhaustion_seconds"
)

// byMemory identifies a memory_growth series: a flagged container, the
// device that fills up, who is at risk and how badly.
const byMemory = byFinding + ", device, scope, severity"

// byFinding identifies a flagged container.
const byFinding = "cluster, node, gpu, namespace, pod, container, team"

// flagged selects the containers a finding series flags right now.
func flagged(finding string) string {
	return "(" + sel(finding, ctrFilter) + " == 1)"
}

// ofFlagged restricts a per-container expression grouped by byFinding to
// the containers a finding flags.
func ofFlagged(expr, finding string) string {
	return expr + " and on (cluster, node, gpu, namespace, pod, container) " + flagged(finding)
}

// withNoisyPod adds the noisy_pod label of a starved container to a
// per-container expression grouped by byFinding (one noisy pod per victim
// is named: topk keeps the match unique).
func withNoisyPod(expr string) string {
	starved := "topk by (cluster, node, gpu, namespace, pod, container) (1, max by (" + byFinding + ", noisy_pod) " + flagged(mStarved) + ")"
	return expr + " * on (cluster, node, gpu, namespace, pod, container) group_left (noisy_pod) " + starved
}

func findings() *dashboard.DashboardBuilder {
	used := sumBy(byFinding, rate(sel(mUsed, ctrFilter)))
	alloc := sumBy(byFinding, rate(sel(mAllocated, ctrFilter)))
	share := sumBy(byFinding, sel(mRatio, ctrFilter))
	b := newBoard(UIDFindings, "gpuledger / Findings",
		"What the detectors flag right now: noisy neighbours on GPUs shared without hardware isolation with the containers they starve, allocations held but unused, and GPU memory that keeps growing where neighbours share it. Click a row for the GPU's drill-down.")

	b.WithPanel(tableOf(PanelFindingsNoisy, "Noisy neighbours",
		"Containers using at least twice their allocation share of a GPU that is at least 90% busy while another tenant gets less than its share (time-slicing, MPS, HAMi; never MIG). Used and share are in GPUs.",
		12, 8, map[string]string{"A": "Flagged", "B": "Used GPUs", "C": "Allocation share"}, []string{"cluster"},
		q("A", "max by ("+byFinding+") "+flagged(mNoisy), ""),
		q("B", ofFlagged(used, mNoisy), ""),
		q("C", ofFlagged(share, mNoisy), "")).
		DataLinks(drilldownLink()))
	b.WithPanel(tableOf(PanelFindingsStarved, "Starved containers and their noisy neighbour",
		"Containers with running processes getting less than their allocation share of a busy shared GPU, with the noisy pod (namespace/pod) that starves them.",
		12, 8, map[string]string{"A": "Flagged", "B": "Used GPUs", "C": "Allocation share"}, []string{"cluster"},
		q("A", "max by ("+byFinding+", noisy_pod) "+flagged(mStarved), ""),
		q("B", withNoisyPod(used), ""),
		q("C", withNoisyPod(share), "")).
		DataLinks(drilldownLink()))
	b.WithPanel(tableOf(PanelFindingsIdle, "Held but unused",
		"Containers that have held a GPU allocation for the whole detection window while using less than the detector's threshold of it. Allocated and used are in GPUs.",
		24, 8, map[string]string{"A": "Flagged", "B": "Allocated GPUs", "C": "Used GPUs"}, []string{"cluster"},
		q("A", "max by ("+byFinding+") "+flagged(mIdleAlloc), ""),
		q("B", ofFlagged(alloc, mIdleAlloc), ""),
		q("C", ofFlagged(orZero(used, alloc), mIdleAlloc), "")).
		DataLinks(drilldownLink()))
	b.WithPanel(timeSeries(findingsOverTime, "Flagged containers over time",
		"How many containers each detector flags.",
		"none", 8, 9,
		q("A", "count("+flagged(mNoisy)+")", "noisy neighbours"),
		q("B", "count("+flagged(mStarved)+")", "starved"),
		q("C", "count("+flagged(mIdleAlloc)+")", "held but unused"),
		q("D", "count("+flagged(mMemGrowth)+")", "memory growth")))
	b.WithPanel(timeSeries(findingsInterference, "Noisy neighbours and victims: used vs share",
		"GPUs used by the flagged noisy neighbours and their victims, next to their allocation shares: the noisy one far above its share, the victims below theirs.",
		unitGPUs, 8, 9,
		q("A", sumBy("cluster, node, namespace, pod", rate(sel(mUsed, ctrFilter)))+
			" and on (cluster, node, namespace, pod) ("+flagged(mNoisy)+" or "+flagged(mStarved)+")", "{{namespace}}/{{pod}} used"),
		q("B", sumBy("cluster, node, namespace, pod", sel(mRatio, ctrFilter))+
			" and on (cluster, node, namespace, pod) ("+flagged(mNoisy)+" or "+flagged(mStarved)+")", "{{namespace}}/{{pod}} share")))
	b.WithPanel(timeSeries(findingsIdleUse, "Held but unused: allocated vs used",
		"GPUs held and GPUs used by the containers flagged as held but unused.",
		unitGPUs, 8, 9,
		q("A", ofFlagged(alloc, mIdleAlloc), "{{namespace}}/{{pod}} allocated"),
		q("B", ofFlagged(orZero(used, alloc), mIdleAlloc), "{{namespace}}/{{pod}} used")))
	b.WithPanel(tableOf(PanelFindingsMemory, "GPU memory growth",
		"Containers whose GPU memory (its lowest level, bucket by bucket over the memory window) keeps growing on a device shared without memory isolation. "+
			"scope gpu: a time-sliced or MPS GPU, every tenant's allocations fail when it is full; scope mig_instance: only that MIG instance (severity info when the container holds it alone). "+
			"Growth in MiB per minute; hours until the device is full if the growth goes on (empty when its size is unknown).",
		24, 8, map[string]string{"A": "Flagged", "B": "Growth (MiB/min)", "C": "Hours until full"}, []string{"cluster"},
		q("A", "max by ("+byMemory+") "+flagged(mMemGrowth), ""),
		q("B", "max by ("+byMemory+") ("+sel(mMemGrowthRate, ctrFilter)+") * 60 / 1048576", ""),
		q("C", "max by ("+byMemory+") ("+sel(mMemExhaustion, ctrFilter)+") / 3600", "")).
		DataLinks(drilldownLink()))
	return b
}
