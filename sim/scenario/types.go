// Package scenario reads and validates simulated-node scenario files
// (format: docs/scenario-format.md). The simulator, the ground-truth
// checker and the benchmarks all start from a *Scenario.
package scenario

import "time"

// Scenario is one simulated Kubernetes GPU node, validated. All offsets are
// durations from Start; busy traces are loaded into Process.Busy.
type Scenario struct {
	APIVersion, Kind, Name string
	Start                  time.Time
	Duration               time.Duration
	PollInterval           time.Duration
	LedgerInterval         time.Duration
	DriverSamplePeriod     time.Duration
	Detection              Detection
	Node                   Node
	Namespaces             []Namespace
	GPUs                   []GPU
	Pods                   []Pod
	HostProcesses          []Process
	// Dir is the directory the file was read from (busy traces are relative to it).
	Dir string
}

// Detection holds detector settings; zero values mean product defaults.
type Detection struct {
	IdleWindow    time.Duration
	IdleThreshold float64
	NoisyWindow   time.Duration
	// MemoryWindow is the memory-growth detector's window.
	MemoryWindow time.Duration
}

// Node is the simulated node.
type Node struct {
	Name   string
	Labels map[string]string
	// ResourceSlices are what the node's DRA drivers publish.
	ResourceSlices []ResourceSlice
}

// ResourceSlice is one resource.k8s.io ResourceSlice of the node.
type ResourceSlice struct {
	Driver, Pool string
	Devices      []SliceDevice
}

// SliceDevice is one device of a ResourceSlice with its attributes
// (uuid, type, parentUUID, ...), values as written in the scenario.
type SliceDevice struct {
	Name       string
	Attributes map[string]string
}

// Namespace is one namespace with its labels.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// GPU modes (simulator physics only).
const (
	ModeExclusive   = "exclusive"
	ModeTimeslicing = "timeslicing"
	ModeMPS         = "mps"
	ModeMIG         = "mig"
	ModeHAMi        = "hami"
)

// GPU is one physical GPU of the node.
type GPU struct {
	Index          int
	UUID           string
	Model          string // A100-SXM4-40GB | A100-SXM4-80GB | H100-SXM5-80GB | H200-141GB
	Mode           string
	MPSProcessView string // "clients" (default) or "server"
	IdleWatts      float64
	MaxWatts       float64
	MIGInstances   []MIGInstance
	// Minor is the NVML minor number (/dev/nvidia<minor>); default Index.
	Minor int
}

// MIGInstance is one MIG instance on a GPU.
type MIGInstance struct {
	UUID    string
	Profile string // e.g. 1g.10gb
	// GI is the GPU-instance ID NVML reports; default: its position in
	// the GPU's list.
	GI int
}

// Pod is one pod on the node.
type Pod struct {
	UID, Namespace, Name string
	Labels, Annotations  map[string]string
	Start, End           time.Duration // offsets; End defaults to Duration
	Containers           []Container
	// InitContainers are in pod spec order. Plain ones run one after
	// another from the pod's start, each to its End; sidecars
	// (RestartPolicy "Always") run from their turn to the pod's end.
	InitContainers []Container
	// AnnotationChanges edit the pod's annotations at offsets, in order.
	AnnotationChanges []AnnotationChange
}

// AnnotationChange replaces the given annotation keys at offset At.
type AnnotationChange struct {
	At          time.Duration
	Annotations map[string]string
}

// Container is one container (or init container) of a pod.
type Container struct {
	Name      string
	ID        string // 64-hex; derived from pod uid + name when absent
	Devices   []DeviceRequest
	Claims    []Claim
	Processes []Process
	// RestartPolicy is "Always" for a sidecar init container, else "".
	RestartPolicy string
	// Limits are the container's extended-resource limits as the pod spec
	// gives them (nvidia.com/gpucores: "50"), decimal integers. Nil when
	// the scenario does not give them: the metadata then does not say
	// (ContainerMeta.LimitsKnown false); an empty map says none are set.
	Limits map[string]string
	// Start and End are when the container runs (offsets), computed at
	// load: for regular containers the pod's lifetime; for init
	// containers their turn as described on Pod.InitContainers.
	Start, End time.Duration
}

// Claim is one DRA claim device listed for a container.
type Claim struct {
	Claim, Request       string
	Driver, Pool, Device string
}

// DeviceRequest is what kubelet pod-resources lists for one resource.
type DeviceRequest struct {
	Resource string
	IDs      []string
}

// Process is one GPU process.
type Process struct {
	PID    uint32
	Device string // GPU or MIG UUID
	// MemoryMiB is the framebuffer the process holds outside its Memory
	// intervals (all its life when Memory is empty).
	MemoryMiB uint64
	Start     time.Duration // offsets; default pod start/end (0/Duration for host processes)
	End       time.Duration
	Busy      []Segment // sorted, non-overlapping
	// Memory is framebuffer over time: sorted, non-overlapping intervals
	// inside the process's life, each overriding MemoryMiB (MemoryAt).
	Memory []MemorySegment
	Comm   string // process name; "" means a default
}

// MemorySegment is framebuffer held at a constant size over [From, To).
type MemorySegment struct {
	From, To time.Duration
	MiB      uint64
}

// Segment is one piecewise-constant activity interval [From, To).
type Segment struct {
	From, To time.Duration
	Fraction float64
}
