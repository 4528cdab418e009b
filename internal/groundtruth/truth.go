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
	// Method is "" (measured) or MethodEstimated, one per container: it
	// is estimated when any of its ledger rows must be (a share estimated,
	// usage split among replicas, a HAMi process on a GPU its annotation
	// does not name), so a container with rows on two GPUs, one of them
	// estimated, is estimated as a whole. Where its usage is nonetheless
	// exact it also gets an InstanceGroup of its own.
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
// hides them); only their summed usage is exact. A group of one is an
// estimated container whose usage is exact (only its share, or the GPU a
// HAMi process ran on, is in doubt): checkers skip the used check of
// estimated containers but check every group, so its used stays checked.
type InstanceGroup struct {
	Members []string
	Used    float64
}
