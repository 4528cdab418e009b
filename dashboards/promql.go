package dashboards

import "strings"

// Series of the ledger contract the dashboards read.
const (
	mAllocated    = "gpuledger_container_gpu_allocated_seconds_total"
	mUsed         = "gpuledger_container_gpu_used_seconds_total"
	mRatio        = "gpuledger_container_gpu_allocation_ratio"
	mMemory       = "gpuledger_container_gpu_memory_bytes"
	mEnergy       = "gpuledger_container_gpu_energy_joules_total"
	mCapacity     = "gpuledger_gpu_capacity_seconds_total"
	mIdle         = "gpuledger_gpu_idle_seconds_total"
	mUnallocated  = "gpuledger_gpu_unallocated_seconds_total"
	mUnattributed = "gpuledger_gpu_unattributed_seconds_total"
	mIdleAlloc    = "gpuledger_idle_allocation"
	mNoisy        = "gpuledger_noisy_neighbour"
	mStarved      = "gpuledger_starved_container"
	mGPUInfo      = "gpuledger_gpu_info"
	mMIGInfo      = "gpuledger_mig_instance_info"
	mSourceUp     = "gpuledger_source_up"
	mCycleSeconds = "gpuledger_collector_cycle_duration_seconds"
	mCycles       = "gpuledger_collector_cycles_total"
	mSourceErrors = "gpuledger_source_errors_total"
	mAnomalies    = "gpuledger_attribution_anomalies_total"
	mBuildInfo    = "gpuledger_build_info"
	mRowsWritten  = "gpuledger_ledger_rows_written_total"
	mRowsDropped  = "gpuledger_ledger_rows_dropped_total"
	mWriteErrors  = "gpuledger_ledger_write_errors_total"
	mShipped      = "gpuledger_outbox_batches_shipped_total"
	mShipFailed   = "gpuledger_outbox_batches_failed_total"
	mOutboxRows   = "gpuledger_outbox_rows_pending"
	mOutboxAge    = "gpuledger_outbox_oldest_pending_age_seconds"

	// mPrice is the price book the collector exports with --prices, the
	// same rates the chargeback report uses.
	mPrice = "gpuledger_price_per_gpu_hour"
	// mQuota is the GPU quota serve --quota exports per team, resource
	// and source.
	mQuota = "gpuledger_team_quota_gpus"
)

// Label filters of the template variables.
const (
	// gpuFilter selects GPU-level series (capacity, idle, info...).
	gpuFilter = `cluster=~"$cluster", node=~"$node"`
	// ctrFilter selects container-level series and findings.
	ctrFilter = gpuFilter + `, team=~"$team", namespace=~"$namespace"`
	// drillFilter selects the GPUs of the drill-down.
	drillFilter = gpuFilter + `, gpu=~"$gpu"`
	// drillCtrFilter selects the containers on the drill-down's GPUs.
	drillCtrFilter = drillFilter + `, team=~"$team", namespace=~"$namespace"`
)

// Grouping labels.
const (
	// byGPU identifies one physical GPU across a fleet.
	byGPU = "cluster, node, gpu"
	// byContainer identifies one container slice; the used counter has a
	// method label as well, summed away here.
	byContainer = "cluster, node, gpu, slice, sharing_mode, namespace, pod, container, team"
)

// sel renders metric{filter}.
func sel(metric, filter string) string {
	return metric + "{" + filter + "}"
}

// rate is the per-second rate of a counter selector over the panel's rate
// interval: GPU-seconds per second, that is GPUs (GPU-hours per hour).
func rate(selector string) string {
	return "rate(" + selector + "[$__rate_interval])"
}

// increase is a counter's increase over the dashboard's time range.
func increase(selector string) string {
	return "increase(" + selector + "[$__range])"
}

// sumBy renders sum by (labels) (expr); an empty labels sums everything.
func sumBy(labels, expr string) string {
	if labels == "" {
		return "sum(" + expr + ")"
	}
	return "sum by (" + labels + ") (" + expr + ")"
}

// hours turns an expression in seconds into hours.
func hours(expr string) string {
	return "(" + expr + ") / 3600"
}

// orZero makes expr present wherever fallback is, with 0 where expr has no
// series: a container that never ran anything has no used series.
func orZero(expr, fallback string) string {
	return "(" + expr + " or " + fallback + " * 0)"
}

// gpuModel joins the model label onto a container-level expression grouped
// by at least byGPU, from gpuledger_gpu_info.
func gpuModel(expr string) string {
	return expr + " * on (" + byGPU + ") group_left (model) max by (" + byGPU + ", model) (" + sel(mGPUInfo, gpuFilter) + ")"
}

// priced multiplies an expression in GPUs, grouped by cluster and model,
// by the price book: the result is currency per hour.
func priced(expr string) string {
	return expr + " * on (cluster, model) group_left (currency) max by (cluster, model, currency) (" + sel(mPrice, `cluster=~"$cluster"`) + ")"
}

// join concatenates query fragments, for long expressions built in pieces.
func join(parts ...string) string { return strings.Join(parts, "") }
