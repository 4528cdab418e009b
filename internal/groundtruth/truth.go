package groundtruth

// MethodEstimated marks containers whose usage (or allocation) the pipeline
// can only estimate, never measure.
const MethodEstimated = "estimated"

// Truth is the ground truth of one scenario. Times are seconds.
type Truth struct {
	Scenario       string
	Duration       float64
	LedgerInterval float64
	// Containers is keyed "namespace/pod/container".
	Containers map[string]ContainerTruth
	// GPUs is keyed by GPU UUID.
	GPUs           map[string]GPUTruth
	InstanceGroups []InstanceGroup
	// ExpectFlags and ForbidFlags come from the scenario's flags.yaml sidecar:
	// each map is matched against flags.csv columns (kind, namespace, pod, ...).
	ExpectFlags, ForbidFlags []map[string]string
}

// ContainerTruth is what one container should be charged over the scenario.
type ContainerTruth struct {
	Allocated, Used float64
	// EdgeTol is the absolute tolerance on Allocated: one poll interval of
	// the container's share per pod edge inside the scenario, plus 1e-6.
	EdgeTol float64
	// Method is "" (measured) or MethodEstimated.
	Method      string
	SharingMode string
	Team        string
}

// GPUTruth is one physical GPU's residuals; nil means zero.
type GPUTruth struct {
	Model        string
	Unallocated  *float64
	Unattributed *float64
}

// InstanceGroup is a set of containers whose individual usage is only
// estimated (replicas of one MIG instance, clients of an MPS server that
// hides them); only their summed usage is exact.
type InstanceGroup struct {
	Members []string
	Used    float64
}
