package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Panel IDs of the fleet overview not named in uids.go.
const (
	fleetGPUs = iota + 1
	fleetAllocatedShare
	fleetUsedShare
	fleetEfficiency
	fleetIdleShare
	fleetCostRate
	fleetByMode
	fleetHoursByMode
	fleetUsagePartition
	fleetAllocationPartition
	fleetBusyByNode
	fleetCostByModel
)

const (
	fleetSourceErrors  = PanelFleetOutboxAge + 1    // 25
	fleetAnomalies     = fleetSourceErrors + 1      // 26
	fleetCycleDuration = fleetAnomalies + 1         // 27
	fleetVersions      = PanelFleetLedgerErrors + 1 // 30
	fleetCostByCluster = fleetVersions + 1          // 31
)

// collectorUp selects the scrape health of gpuledger collectors: any job
// whose name contains gpuledger, as the collector-down alerts do.
const collectorUp = `up{job=~".*gpuledger.*", job!~".*advisor.*", cluster=~"$cluster"}`

func fleet() *dashboard.DashboardBuilder {
	alloc, used := sel(mAllocated, ctrFilter), sel(mUsed, ctrFilter)
	capacity := sel(mCapacity, gpuFilter)
	b := newBoard(UIDFleet, "gpuledger / Fleet overview",
		"Allocated vs used GPU-hours across the fleet, by sharing mode; idle device time and never-allocated capacity; the live cost rate; and the health of the collectors. Rates are GPUs: GPU-hours per hour.")

	b.WithRow(dashboard.NewRowBuilder("Fleet").Id(100))
	b.WithPanel(singleStat(fleetGPUs, "Physical GPUs",
		"Physical GPUs reporting through a gpuledger collector (MIG instances are counted with their parent GPU).",
		"none", 4, 4, q("A", "count("+sel(mGPUInfo, gpuFilter)+")", "GPUs")))
	b.WithPanel(singleStat(fleetAllocatedShare, "Allocated",
		"Share of the selected GPUs' capacity that containers of the selected teams held an allocation for.",
		unitPercent, 4, 4, q("A", sumBy("", rate(alloc))+" / "+sumBy("", rate(capacity)), "allocated")))
	b.WithPanel(singleStat(fleetUsedShare, "Used",
		"Share of the selected GPUs' capacity that containers of the selected teams kept busy.",
		unitPercent, 4, 4, q("A", sumBy("", rate(used))+" / "+sumBy("", rate(capacity)), "used")))
	b.WithPanel(singleStat(fleetEfficiency, "Efficiency (used / allocated)",
		"GPU time used over GPU time allocated. Above 100% means time-sliced or MPS tenants borrowed time their neighbours left unused, beyond their share.",
		unitPercent, 4, 4, q("A", sumBy("", rate(used))+" / "+sumBy("", rate(alloc)), "efficiency")))
	b.WithPanel(singleStat(fleetIdleShare, "Idle device time",
		"Share of the selected GPUs' capacity during which the device was not busy, allocated or not.",
		unitPercent, 4, 4, q("A", sumBy("", rate(sel(mIdle, gpuFilter)))+" / "+sumBy("", rate(capacity)), "idle device time")))
	b.WithPanel(singleStat(fleetCostRate, "Fleet cost rate",
		"What the selected GPUs cost per hour at the price book's rate per physical GPU-hour (gpuledger_price_per_gpu_hour, exported with the chargeback price book).",
		unitPerHour, 4, 4, q("A", sumBy("currency", priced(sumBy("cluster, model", rate(capacity)))), "{{currency}}")))

	b.WithRow(dashboard.NewRowBuilder("Allocation and use by sharing mode").Id(101))
	b.WithPanel(timeSeries(fleetByMode, "Allocated vs used GPUs by sharing mode",
		"Allocated and used GPUs (GPU-hours per hour) per sharing mode. Use below allocation is held but unused (paid for); use above it is time borrowed from neighbours who left it unused.",
		unitGPUs, 12, 9,
		q("A", sumBy("sharing_mode", rate(alloc)), "{{sharing_mode}} allocated"),
		q("B", sumBy("sharing_mode", rate(used)), "{{sharing_mode}} used")))
	b.WithPanel(bars(fleetHoursByMode, "GPU-hours by sharing mode (time range)",
		"Allocated and used GPU-hours per sharing mode over the dashboard's time range.",
		unitGPUHours, 12, 9,
		q("A", hours(sumBy("sharing_mode", increase(alloc))), "{{sharing_mode}} allocated"),
		q("B", hours(sumBy("sharing_mode", increase(used))), "{{sharing_mode}} used")))
	b.WithPanel(stacked(fleetUsagePartition, "Capacity: containers' use, unattributed, idle device time",
		"The usage partition of the selected GPUs: containers' used + unattributed + idle device time adds up to capacity (team and namespace filters do not apply here).",
		unitGPUs, 12, 9,
		q("A", sumBy("", rate(sel(mUsed, gpuFilter))), "containers' use"),
		q("B", sumBy("", rate(sel(mUnattributed, gpuFilter))), "unattributed"),
		q("C", sumBy("", rate(sel(mIdle, gpuFilter))), "idle device time")))
	b.WithPanel(stacked(fleetAllocationPartition, "Capacity: allocated and never allocated",
		"The allocation partition of the selected GPUs: containers' allocated + never allocated adds up to capacity (team and namespace filters do not apply here).",
		unitGPUs, 12, 9,
		q("A", sumBy("", rate(sel(mAllocated, gpuFilter))), "allocated"),
		q("B", sumBy("", rate(sel(mUnallocated, gpuFilter))), "never allocated")))
	b.WithPanel(bars(fleetBusyByNode, "Busy share by node",
		"Share of each node's GPU capacity during which the devices were busy (containers' use plus unattributed). Click a bar for the node's drill-down.",
		unitPercent, 12, 9,
		q("A", "1 - "+sumBy("cluster, node", rate(sel(mIdle, gpuFilter)))+" / "+sumBy("cluster, node", rate(capacity)), "{{node}}")).
		Max(1).
		DataLinks(nodeLink()))
	b.WithPanel(timeSeries(fleetCostByModel, "Cost rate by GPU model",
		"Cost per hour of the selected GPUs by model, at the price book's rates.",
		unitPerHour, 12, 9,
		q("A", sumBy("model, currency", priced(sumBy("cluster, model", rate(capacity)))), "{{model}} ({{currency}})")))
	b.WithPanel(stacked(fleetCostByCluster, "Cost rate by cluster",
		"Cost per hour of the selected GPUs by cluster, at the price book's rates, stacked: the fleet's cost rate split by the cluster label the chart's ServiceMonitor or PodMonitor sets (cluster.name). A series with no cluster is a Prometheus scraping without it.",
		unitPerHour, 24, 9,
		q("A", sumBy("cluster, currency", priced(sumBy("cluster, model", rate(capacity)))), "{{cluster}} ({{currency}})")))

	b.WithRow(dashboard.NewRowBuilder("Collector health").Id(102))
	b.WithPanel(tableOf(PanelFleetCollectorsUp, "Collector scrape targets",
		"Every gpuledger scrape target and whether Prometheus could scrape it (1 up, 0 down). A node whose collector is down is not being accounted.",
		8, 8, map[string]string{"A": "Up"}, nil,
		q("A", "max by (cluster, job, instance) ("+collectorUp+")", "")))
	b.WithPanel(timeSeries(PanelFleetSourcesUp, "Sources up by node",
		"1 while the source was read successfully in the last cycle. podresources down: nothing is allocated; nvml down: nothing is measured; dcgm down: MIG instances are blind.",
		"none", 8, 8,
		q("A", "min by (cluster, node, source) ("+sel(mSourceUp, gpuFilter)+")", "{{node}} {{source}}")).
		Max(1))
	b.WithPanel(timeSeries(PanelFleetCycles, "Collection cycles per second",
		"Collection cycles each collector completes per second (1 at the default 1 s poll interval). Zero while the collector is scraped means it is stuck.",
		"short", 8, 8,
		q("A", sumBy("cluster, node", rate(sel(mCycles, gpuFilter))), "{{node}}")))
	b.WithPanel(timeSeries(PanelFleetOutbox, "Ledger outbox: rows pending",
		"Ledger rows committed on the node but not yet shipped to the cluster ledger.",
		"short", 8, 8,
		q("A", "max by (cluster, node) ("+sel(mOutboxRows, gpuFilter)+")", "{{node}}")))
	b.WithPanel(timeSeries(PanelFleetOutboxAge, "Ledger outbox: oldest pending row age",
		"Age of the oldest unshipped ledger row per node; it grows while shipping fails.",
		"s", 8, 8,
		q("A", "max by (cluster, node) ("+sel(mOutboxAge, gpuFilter)+")", "{{node}}")))
	b.WithPanel(timeSeries(fleetSourceErrors, "Source errors",
		"Errors per second reading each source (0 where a source never failed).",
		"short", 8, 8,
		q("A", sumBy("cluster, node, source", rate(sel(mSourceErrors, gpuFilter)))+
			" or "+sumBy("cluster, node, source", sel(mSourceUp, gpuFilter))+" * 0", "{{node}} {{source}}")))
	b.WithPanel(timeSeries(fleetAnomalies, "Attribution input anomalies",
		"Unknown or malformed device IDs, HAMi mismatches... per second, by kind (0 where there were none). Their capacity stays never allocated or unattributed.",
		"short", 8, 8,
		q("A", sumBy("cluster, node, kind", rate(sel(mAnomalies, gpuFilter)))+
			" or "+sumBy("cluster, node", sel(mCycles, gpuFilter))+" * 0", "{{node}} {{kind}}")))
	b.WithPanel(timeSeries(fleetCycleDuration, "Collection cycle duration",
		"Time the last collection cycle took, per node.",
		"s", 8, 8,
		q("A", "max by (cluster, node) ("+sel(mCycleSeconds, gpuFilter)+")", "{{node}}")))
	b.WithPanel(timeSeries(PanelFleetShipping, "Ledger: rows written, batches shipped and failed",
		"Per node and second: ledger rows committed to the node's embedded ledger, outbox batches stored in the cluster ledger, and batches the cluster ledger refused or could not be reached for (retried).",
		"short", 8, 8,
		q("A", sumBy("cluster, node", rate(sel(mRowsWritten, gpuFilter))), "{{node}} rows written"),
		q("B", sumBy("cluster, node", rate(sel(mShipped, gpuFilter))), "{{node}} batches shipped"),
		q("C", sumBy("cluster, node", rate(sel(mShipFailed, gpuFilter))), "{{node}} batches failed")))
	b.WithPanel(timeSeries(PanelFleetLedgerErrors, "Embedded ledger: write errors and dropped rows",
		"Failed commits to the node's embedded ledger (disk full, read-only) and rows lost once the in-memory retry buffer overflowed, per second.",
		"short", 8, 8,
		q("A", sumBy("cluster, node", rate(sel(mWriteErrors, gpuFilter))), "{{node}} write errors"),
		q("B", sumBy("cluster, node", rate(sel(mRowsDropped, gpuFilter))), "{{node}} rows dropped")))
	b.WithPanel(tableOf(fleetVersions, "Collector versions",
		"How many collectors run each version: a rollout in progress shows two.",
		8, 8, map[string]string{"A": "Collectors"}, nil,
		q("A", "count by (version, revision, goversion) ("+sel(mBuildInfo, gpuFilter)+")", "")))
	return b
}

// nodeLink opens the drill-down on the node of the clicked series.
func nodeLink() []cogLink {
	return []cogLink{link("Open node drill-down",
		Path(UIDDrilldown)+"?${__url_time_range}&${datasource:queryparam}&${cluster:queryparam}&var-node=${__field.labels.node}")}
}
