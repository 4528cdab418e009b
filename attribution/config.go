package attribution

import "time"

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
	// TeamLabel is the namespace (then pod) label naming the team.
	TeamLabel string

	IdleWindow    time.Duration
	IdleThreshold float64
	NoisyWindow   time.Duration
	// PollInterval is the collector's cycle length; it bounds the detector
	// bucket size from below. Zero: the first non-empty window observed.
	PollInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.LedgerInterval <= 0 {
		c.LedgerInterval = DefaultLedgerInterval
	}
	if c.TeamLabel == "" {
		c.TeamLabel = DefaultTeamLabel
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
	return c
}

// Node labels that say how GPUs are shared.
const (
	LabelSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	LabelReplicas        = "nvidia.com/gpu.replicas"
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
)
