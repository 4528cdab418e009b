package attribution

import "time"

// Observation is everything the collector read from its sources in one
// cycle. It covers the window (Prev, Time]. It is plain data: the collector
// fills it from NVML, DCGM, kubelet pod-resources, Kubernetes metadata and
// procfs (real or simulated) and attribution never reaches back to them.
type Observation struct {
	Node string
	// Prev and Time bound the cycle window (Prev, Time]. On the first cycle
	// Prev equals Time and the window is empty: it only sets baselines.
	Prev, Time time.Time

	GPUs        []GPU
	Allocations []Allocation // kubelet pod-resources, one per (container, resource)
	// AllocatableIDs are the device IDs kubelet advertises as allocatable
	// (pod-resources GetAllocatableResources), allocated or not: every
	// ::<n>, vgpu and HAMi ID counts as seen for the replica estimates.
	// Nil when unknown. The collector passes the same slice while kubelet's
	// list is unchanged; the engine reads it only when it changes and never
	// modifies it.
	AllocatableIDs []string
	Metadata       Metadata
	Processes      []Process       // running compute processes, per device, owners resolved
	Samples        []ProcessSample // per-process utilisation samples read this cycle

	// Degraded names sources that failed this cycle ("nvml", "dcgm",
	// "podresources", "kubemeta", "procfs"). A failed source's data is
	// absent; attribution keeps the partitions closed with what it has.
	Degraded map[string]bool
}

// GPU is one physical GPU.
type GPU struct {
	Index     int
	UUID      string // GPU-<uuid>
	Model     string // normalised product name, e.g. "A100-SXM4-80GB"
	MemoryMiB uint64
	// Minor is the NVML minor number (/dev/nvidia<minor>), which GKE's
	// device plugin IDs name GPUs by; HasMinor says NVML reported it.
	Minor    int
	HasMinor bool

	MIGEnabled bool
	MIG        []MIGInstance

	// SamplePeriod is the driver's utilisation sample period as observed on
	// this GPU (spacing of device samples); zero when unknown.
	SamplePeriod time.Duration
	// DeviceSamples are NVML GetSamples(GPU_UTILIZATION_SAMPLES) read this
	// cycle: each covers (At-SamplePeriod, At]. Empty on MIG-enabled GPUs.
	DeviceSamples []UtilSample
	// DeviceSamplesOK is false when the device could not report samples at
	// all this cycle (unsupported, error), as opposed to "nothing new".
	DeviceSamplesOK bool

	// EnergyMilliJoules is the total energy counter at Time; EnergyOK says
	// whether it was read.
	EnergyMilliJoules uint64
	EnergyOK          bool

	// DCGM holds the DCGM profiling values for the whole GPU, when DCGM is
	// available. Its activity values are means over the cycle window.
	DCGM *DCGMValues
}

// MIGInstance is one MIG GPU instance (with its compute instance).
type MIGInstance struct {
	UUID          string // MIG-<uuid>
	Profile       string // e.g. "3g.40gb"
	Slices        int    // compute slices of the profile (1..7)
	GPUInstanceID int
	DCGM          *DCGMValues // instance-relative activity; nil without DCGM
}

// DCGMValues are one DCGM entity's values for the cycle window.
type DCGMValues struct {
	GrEngineActive float64 // 0..1, mean over the window
	SMActive       float64
	DRAMActive     float64
	FBUsedMiB      uint64
	PowerWatts     float64
	EnergyMilliJ   uint64 // total energy counter (GPU entities only)
}

// UtilSample is one driver utilisation sample: busy percentage of the
// sample period ending at At.
type UtilSample struct {
	At      time.Time
	Percent float64
}

// ProcessSample is one NVML per-process utilisation sample.
type ProcessSample struct {
	GPU    string // GPU UUID it was read from
	PID    uint32
	At     time.Time // end of the sample period
	SMUtil float64   // percent of the period
}

// Process is one running compute process on a device.
type Process struct {
	PID       uint32
	GPU       string // parent GPU UUID
	Device    string // GPU UUID, or MIG UUID when it runs on a MIG instance
	MemoryMiB uint64
	Owner     Owner
	// Exited marks a PID seen only in this cycle's samples: it ran during
	// the window but is gone now, so it does not count as running.
	Exited bool
}

// Owner is what procfs says about a PID.
type Owner struct {
	Resolved    bool   // false: cgroup could not be read
	PodUID      string // empty for host processes
	ContainerID string // 64-hex runtime ID, without runtime prefix
	Comm        string // process name, e.g. "nvidia-cuda-mps-server"
}

// IsHost reports whether the process lives outside any pod.
func (o Owner) IsHost() bool { return o.Resolved && o.PodUID == "" }

// Allocation is what kubelet pod-resources lists for one container and
// one resource name (device plugins), or for one container's DRA claims.
type Allocation struct {
	Namespace, Pod, Container string
	Resource                  string   // e.g. nvidia.com/gpu, nvidia.com/mig-1g.10gb
	DeviceIDs                 []string // e.g. GPU-<uuid>, GPU-<uuid>::3, MIG-<uuid>, GPU-<uuid>-2, nvidia0/gi7/vgpu1
	// Claims are the container's DRA devices, from pod-resources'
	// dynamic_resources (one entry per allocated device). An allocation
	// carrying claims has no Resource and no DeviceIDs.
	Claims []ClaimDevice
}

// ClaimDevice is one allocated device of a DRA ResourceClaim, as kubelet
// pod-resources lists it.
type ClaimDevice struct {
	ClaimNamespace, ClaimName string
	Driver, Pool, Device      string
}

// Metadata is the Kubernetes view of this node.
type Metadata struct {
	NodeLabels map[string]string
	Namespaces map[string]map[string]string // namespace -> labels
	Pods       []PodMeta
	// DRADevices are the devices the node's ResourceSlices
	// (resource.k8s.io) publish, all drivers.
	DRADevices []DRADevice
}

// DRADevice is one device of a ResourceSlice.
type DRADevice struct {
	Driver, Pool, Name string
	// Attributes are the device's attributes with their values as text,
	// keyed by the attribute name without a domain prefix ("uuid",
	// "type", "parentUUID", ...). A qualified name such as
	// "gpu.nvidia.com/uuid" is stored under "uuid" too.
	Attributes map[string]string
}

// PodMeta is one pod bound to this node.
type PodMeta struct {
	UID, Namespace, Name string
	Labels, Annotations  map[string]string
	StartTime            time.Time       // status.startTime; zero when unknown
	Containers           []ContainerMeta // regular containers, in pod spec order
	// InitContainers are the init containers in pod spec order (sidecars,
	// restartPolicy Always, included). HAMi 2.9+ writes its annotation's
	// entries for these first.
	InitContainers []ContainerMeta
}

// ContainerMeta is one container of a pod.
type ContainerMeta struct {
	Name string
	ID   string // runtime container ID without the "containerd://" prefix
	// Sidecar marks an init container with restartPolicy Always.
	Sidecar bool
	// Limits are the container's extended-resource limits from the pod
	// spec (names with a '/', such as nvidia.com/gpucores; a request
	// stands in for a name without a limit), values as decimal integers
	// where they are integers, else the quantity as written. The pod spec
	// is immutable, so unlike annotations a tenant cannot change them
	// after creation: HAMi's share is read from them (hami_limits.go).
	// Nil when the container sets none or the source does not say.
	Limits map[string]string
	// LimitsKnown says the metadata source read the pod spec's resources
	// (Limits empty then means none set, and HAMi's defaults apply).
	LimitsKnown bool
}
