package attribution

import "time"

// Kind is the kind of a ledger row.
type Kind string

// Row kinds of the ledger contract.
const (
	KindContainer    Kind = "container"
	KindUnallocated  Kind = "unallocated"
	KindUnattributed Kind = "unattributed"
	KindIdle         Kind = "idle"
)

// Methods of the ledger contract.
const (
	MethodMeasured  = "measured"
	MethodEstimated = "estimated"
)

// DefaultCluster is the cluster name of a single-cluster install, and what
// rows, findings, quota changes and node labels stored before the ledger
// recorded clusters read as.
const DefaultCluster = "default"

// Row is one ledger row: the single row type that attribution emits, the
// stores persist and the exports print (contract: ledger.md).
type Row struct {
	IntervalStart, IntervalEnd time.Time
	// Cluster names the Kubernetes cluster the node is in (collect
	// --cluster): a node is identified by (Cluster, Node). Empty is stored
	// as DefaultCluster.
	Cluster  string
	Node     string
	GPUUUID  string
	GPUModel string
	SliceID  string
	// MIGProfile is the profile of the MIG instance a container row's
	// slice lies on ("3g.40gb"); empty for whole GPUs and residual rows.
	// It is not a ledger.csv column: the FOCUS export's SkuId reads it.
	MIGProfile             string
	SharingMode            string
	Kind                   Kind
	Namespace, Pod, PodUID string
	Container              string
	Team                   string
	AllocatedGPUSeconds    float64
	UsedGPUSeconds         float64
	MemoryMiBSeconds       float64
	EnergyJoules           float64
	Method                 string
}

// Finding kinds of the flags export.
const (
	FindingIdleAllocation = "idle_allocation"
	FindingNoisyNeighbour = "noisy_neighbour"
	FindingStarved        = "starved"
	// FindingNodeLeft is appended by a collector that stops on a signal
	// (a drain): its node left cleanly at the finding's Start, so the
	// time until its rows resume is not a coverage gap. It travels
	// through Append like any finding: recording a leave needs no
	// schema change.
	FindingNodeLeft = "node_left"
)

// Finding is one detector episode (flags.csv row).
type Finding struct {
	Start, End time.Time
	Kind       string
	Cluster    string // as Row.Cluster
	Node       string
	GPUUUID    string
	Namespace  string
	Pod        string
	Container  string
	Team       string
	Detail     string // e.g. the noisy pod a starved container names
	NoisyPod   string // for starved rows: namespace/pod of the noisy neighbour
	// Memory is what a memory_growth finding measured (nil otherwise; a
	// pointer so that every other finding stays small, and never changed
	// once set: each evaluation sets a new one).
	Memory *MemoryGrowth
}

// CycleResult is what one Observation produced.
type CycleResult struct {
	Start, End time.Time
	GPUs       []GPUCycle
	// Rows are the ledger rows of intervals that closed with this cycle.
	Rows []Row
	// Findings are detector episodes that ended with this cycle.
	Findings []Finding
	// Active are the findings flagged right now (for gauges).
	Active []Finding
	// Anomalies are input problems seen this cycle (unknown device IDs,
	// HAMi mismatches...). The collector logs each key once and counts them.
	Anomalies []Anomaly
	// NewPins are the annotation values that came into force this cycle
	// (first observed while their container ran). The collector persists
	// them so that a restarted collector charges by the same values
	// (Engine.RestorePins).
	NewPins []AnnotationPin
}

// AnnotationPin is the value of an allocation annotation (HAMi's
// hami.io/vgpu-devices-allocated) in force for one container: the first
// value observed while the container ran. A tenant's later edit of the
// annotation does not move cost.
type AnnotationPin struct {
	PodUID, Container string
	Key, Value        string
	At                time.Time // when it was first observed
}

// GPUCycle is one GPU's two partitions over one cycle window.
type GPUCycle struct {
	UUID, Model  string
	Capacity     float64 // window length in seconds
	Unallocated  float64
	Unattributed float64
	Idle         float64
	EnergyJoules float64 // whole-device energy over the window
	// Residual energy shares of the non-container rows.
	UnallocatedEnergy, UnattributedEnergy, IdleEnergy float64
	Containers                                        []ContainerCycle
}

// ContainerCycle is one (GPU, slice, container) over one cycle window.
type ContainerCycle struct {
	SliceID     string
	MIGProfile  string // profile of the MIG instance, "" for a whole GPU
	SharingMode string
	Namespace   string
	Pod         string
	PodUID      string
	Container   string
	Team        string
	Method      string
	Share       float64 // allocation share a(c) of this slice
	Allocated   float64 // GPU-seconds
	Used        float64 // GPU-seconds
	MemoryMiB   float64 // current framebuffer use (gauge)
	MemoryMiBs  float64 // MiB-seconds over the window
	Energy      float64 // joules
	Running     bool    // has running processes on the device
}

// Anomaly is one problem with the input, keyed for log-once.
type Anomaly struct {
	Kind   string // "bad_device_id", "hami_mismatch", "bad_annotation", "unknown_gpu", ...
	Key    string // stable key for de-duplication
	Detail string
}
