package attribution

import (
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// Defaults of Config.
const (
	DefaultLedgerInterval = time.Minute
	DefaultIdleWindow     = 10 * time.Minute
	DefaultIdleThreshold  = 0.05
	DefaultNoisyWindow    = time.Minute
)

// Config sets up an Engine. Zero values take the defaults above.
type Config struct {
	// Node names the node in rows and findings; empty: Observation.Node.
	Node string
	// LedgerInterval is the length of the ledger intervals, aligned to the
	// Unix epoch.
	LedgerInterval time.Duration
	// TeamLabel is the namespace label naming the team.
	TeamLabel string
	// IgnorePodTeamLabel stops a pod's own TeamLabel from naming its team
	// where its namespace has none (then the namespace name pays). By
	// default the pod's label counts there, as the ledger format says, but
	// never when it names a team some namespace bills: pod labels are set
	// by whoever deploys and are forgeable.
	IgnorePodTeamLabel bool

	IdleWindow    time.Duration
	IdleThreshold float64
	NoisyWindow   time.Duration
	// MemoryGrowth sets the memory-growth detector (memgrowth_config.go).
	MemoryGrowth MemoryGrowthConfig
	// PollInterval is the collector's cycle length; it bounds the detector
	// bucket size from below. Zero: the first non-empty window observed.
	PollInterval time.Duration
	// DRAGPUDrivers are the DRA drivers whose claims are GPUs or MIG
	// devices; nil: DefaultDRAGPUDrivers.
	DRAGPUDrivers []string
}

// DefaultDRAGPUDrivers is NVIDIA's DRA driver for GPUs
// (NVIDIA/k8s-dra-driver-gpu).
var DefaultDRAGPUDrivers = []string{"gpu.nvidia.com"}

func (c Config) withDefaults() Config {
	if c.LedgerInterval <= 0 {
		c.LedgerInterval = DefaultLedgerInterval
	}
	if c.TeamLabel == "" {
		c.TeamLabel = tenancy.DefaultTeamLabel
	}
	if c.IdleWindow <= 0 {
		c.IdleWindow = DefaultIdleWindow
	}
	if c.IdleThreshold <= 0 {
		c.IdleThreshold = DefaultIdleThreshold
	}
	if c.NoisyWindow <= 0 {
		c.NoisyWindow = DefaultNoisyWindow
	}
	c.MemoryGrowth = c.MemoryGrowth.withDefaults()
	if c.DRAGPUDrivers == nil {
		c.DRAGPUDrivers = DefaultDRAGPUDrivers
	}
	return c
}

// Node labels that say how GPUs are shared.
const (
	LabelSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	LabelReplicas        = "nvidia.com/gpu.replicas"
)

// Resource names of NVIDIA's device plugin (k8s-device-plugin): whole
// GPUs, MIG profiles under the mixed strategy, and the suffix
// renameByDefault appends to shared resources
// (api/config/v1/consts.go, DefaultSharedResourceNameSuffix).
const (
	ResourceGPU       = "nvidia.com/gpu"
	migResourcePrefix = "nvidia.com/mig-"
	sharedSuffix      = ".shared"
)

// mpsServerComm is the process name of the MPS control daemon's server,
// whose samples carry its clients' work.
const mpsServerComm = "nvidia-cuda-mps-server"

// Anomaly kinds.
const (
	AnomalyBadDeviceID    = "bad_device_id"
	AnomalyUnknownDevice  = "unknown_device"
	AnomalyHAMiMismatch   = "hami_mismatch"
	AnomalyBadAnnotation  = "bad_annotation"
	AnomalyUnknownOwner   = "unknown_owner"
	AnomalyUnknownGPU     = "unknown_gpu"
	AnomalyEnergyBackward = "energy_counter_backwards"
	AnomalyBadWindow      = "bad_window"
	// AnomalyHAMiUnlistedGPU: a container charged by its HAMi annotation
	// runs processes on a GPU the annotation does not name.
	AnomalyHAMiUnlistedGPU = "hami_unlisted_gpu"
	// AnomalyAnnotationChanged: an allocation annotation differs from the
	// value pinned for a running container; the pinned value still rules.
	AnomalyAnnotationChanged = "annotation_changed"
	// AnomalyNonGPUClaim: a DRA claim device of a driver that is not one
	// of Config.DRAGPUDrivers; ignored.
	AnomalyNonGPUClaim = "non_gpu_claim"
	// AnomalyUnmappedClaim: a GPU driver's claim device missing from the
	// ResourceSlices, without a uuid attribute, or whose uuid is not on
	// this node; its capacity stays unallocated.
	AnomalyUnmappedClaim = "unmapped_claim"
	// AnomalyBadReplicas: a replica-count node label (nvidia.com/gpu.replicas,
	// nvidia.com/<resource>.replicas, GKE's max shared clients) that is not
	// a positive integer; the slices it would divide stay unallocated.
	AnomalyBadReplicas = "bad_replicas"
	// AnomalyForgedTeam: a pod's team label, in a namespace without one,
	// names a team some namespace bills; refused, the namespace name pays.
	AnomalyForgedTeam = "forged_team"
)
