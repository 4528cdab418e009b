package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Panel IDs of the drill-down not named in uids.go (1 and 4 are).
const (
	drillAllocation = 2
	drillContainers = 3
	drillPower      = 5
	drillMemory     = 6
	drillInventory  = 7
	drillMIG        = 8
)

// ofCapacity divides a per-GPU expression by the GPU's capacity: the
// fraction of the GPU's time it stands for.
func ofCapacity(expr string) string {
	return expr + " / on (" + byGPU + ") group_left () " + sumBy(byGPU, rate(sel(mCapacity, drillFilter)))
}

// blindThreshold is the unattributed share of busy time above which the
// attribution blind spot alert fires (alerts/gpuledger-rules.yaml).
const blindThreshold = 0.2

func drilldown() *dashboard.DashboardBuilder {
	ctrs := drillCtrFilter
	b := newBoard(UIDDrilldown, "gpuledger / Node & GPU drill-down",
		"One node's GPUs: each GPU's capacity split into its containers' use, idle device time and unattributed time (stacked to 100%), the allocation split, and the containers on it.")
	b.WithVariable(gpuVariable())

	b.WithPanel(stacked(PanelDrillUsage, "GPU ${gpu}: where its time went",
		"The usage partition of one GPU as a share of its capacity: each container's used time, unattributed busy time (host processes, unresolved PIDs, missing per-process data) and idle device time add up to 100%. With a team or namespace filter only those containers are shown.",
		unitPercent, 24, 10,
		q("A", ofCapacity(sumBy(byGPU+", namespace, pod, container", rate(sel(mUsed, ctrs)))), "{{namespace}}/{{pod}}/{{container}}"),
		q("B", ofCapacity(sumBy(byGPU, rate(sel(mUnattributed, drillFilter)))), "unattributed"),
		q("C", ofCapacity(sumBy(byGPU, rate(sel(mIdle, drillFilter)))), "idle device time")).
		Max(1).
		Repeat("gpu").
		RepeatDirection(dashboard.PanelRepeatDirectionV))
	b.WithPanel(stacked(drillAllocation, "GPU ${gpu}: who holds it",
		"The allocation partition of one GPU as a share of its capacity: each container's allocated share and the never-allocated rest add up to 100%.",
		unitPercent, 24, 8,
		q("A", ofCapacity(sumBy(byGPU+", namespace, pod, container", rate(sel(mAllocated, ctrs)))), "{{namespace}}/{{pod}}/{{container}}"),
		q("B", ofCapacity(sumBy(byGPU, rate(sel(mUnallocated, drillFilter)))), "never allocated")).
		Max(1).
		Repeat("gpu").
		RepeatDirection(dashboard.PanelRepeatDirectionV))
	b.WithPanel(tableOf(drillContainers, "Containers on the selected GPUs",
		"Each container slice: its allocation share of one physical GPU, the GPUs it holds and uses right now (GPU-hours per hour), and its framebuffer memory.",
		24, 9,
		map[string]string{"A": "Allocation share", "B": "Allocated GPUs", "C": "Used GPUs", "D": "Memory"}, []string{"cluster"},
		q("A", "max by ("+byContainer+") ("+sel(mRatio, ctrs)+")", ""),
		q("B", sumBy(byContainer, rate(sel(mAllocated, ctrs))), ""),
		q("C", sumBy(byContainer, rate(sel(mUsed, ctrs))), ""),
		q("D", "max by ("+byContainer+") ("+sel(mMemory, ctrs)+")", "")).
		OverrideByName("Memory", []dashboard.DynamicConfigValue{{Id: "unit", Value: "bytes"}}))
	b.WithPanel(timeSeries(PanelDrillUnattribute, "Unattributed share of busy time",
		"Busy GPU time no container explains, as a share of the GPU's busy time. Above 20% for 15 minutes the attribution blind spot alert fires: host processes on the GPU, PIDs procfs cannot resolve, or per-process data the driver does not give.",
		unitPercent, 12, 8,
		q("A", sumBy(byGPU, rate(sel(mUnattributed, drillFilter)))+" / ("+
			sumBy(byGPU, rate(sel(mCapacity, drillFilter)))+" - "+sumBy(byGPU, rate(sel(mIdle, drillFilter)))+")", "{{node}} {{gpu}}")).
		Max(1).
		Thresholds(thresholds(blindThreshold)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLine)))
	b.WithPanel(timeSeries(drillPower, "Power by container",
		"GPU energy attributed to each container per second (watts), split like its used time.",
		"watt", 12, 8,
		q("A", sumBy("cluster, node, namespace, pod, container", rate(sel(mEnergy, ctrs))), "{{namespace}}/{{pod}}/{{container}}")))
	b.WithPanel(timeSeries(drillMemory, "GPU memory by container",
		"Framebuffer memory used by each container's processes on the selected GPUs.",
		"bytes", 12, 8,
		q("A", sumBy("cluster, node, namespace, pod, container", sel(mMemory, ctrs)), "{{namespace}}/{{pod}}/{{container}}")))
	b.WithPanel(tableOf(drillInventory, "GPUs",
		"The node's GPUs with their index, model and MIG mode.",
		12, 6, map[string]string{"A": "Present"}, []string{"cluster"},
		q("A", "max by (cluster, node, gpu, index, model, mig_enabled) ("+sel(mGPUInfo, drillFilter)+")", "")))
	b.WithPanel(tableOf(drillMIG, "MIG instances",
		"MIG GPU instances with their profile and compute slices (a slice is 1/7 of the GPU).",
		12, 6, map[string]string{"A": "Present"}, []string{"cluster"},
		q("A", "max by (cluster, node, gpu, mig_instance, profile, slices) ("+sel(mMIGInfo, drillFilter)+")", "")))
	return b
}

// thresholds is green below limit and red from it.
func thresholds(limit float64) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{
			{Color: "green"},
			{Value: &limit, Color: "red"},
		})
}
