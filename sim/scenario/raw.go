package scenario

import "go.yaml.in/yaml/v3"

// The raw types mirror the YAML file one to one. Decoding goes through them
// so that the clean types in types.go never carry YAML concerns, and so that
// absent fields (nil pointers, empty nodes) can be told apart from explicit
// zero values when defaults are applied.

type rawScenario struct {
	APIVersion         string       `yaml:"apiVersion"`
	Kind               string       `yaml:"kind"`
	Name               string       `yaml:"name"`
	Start              rawValue     `yaml:"start"`
	Duration           rawValue     `yaml:"duration"`
	PollInterval       rawValue     `yaml:"pollInterval"`
	LedgerInterval     rawValue     `yaml:"ledgerInterval"`
	DriverSamplePeriod rawValue     `yaml:"driverSamplePeriod"`
	Detection          rawDetection `yaml:"detection"`
	Node               rawNode      `yaml:"node"`
	Namespaces         []rawNS      `yaml:"namespaces"`
	GPUs               []rawGPU     `yaml:"gpus"`
	Pods               []rawPod     `yaml:"pods"`
	HostProcesses      []rawProcess `yaml:"hostProcesses"`
}

type rawDetection struct {
	IdleWindow    rawValue `yaml:"idleWindow"`
	IdleThreshold *float64 `yaml:"idleThreshold"`
	NoisyWindow   rawValue `yaml:"noisyWindow"`
	MemoryWindow  rawValue `yaml:"memoryWindow"`
}

type rawNode struct {
	Name           string             `yaml:"name"`
	Labels         map[string]string  `yaml:"labels"`
	ResourceSlices []rawResourceSlice `yaml:"resourceSlices"`
}

type rawResourceSlice struct {
	Driver  string           `yaml:"driver"`
	Pool    string           `yaml:"pool"`
	Devices []rawSliceDevice `yaml:"devices"`
}

// rawSliceDevice keeps attribute values as nodes: Kubernetes attributes are
// strings, ints, bools or versions, and the scenario keeps the text as
// written whatever YAML type the scalar resolves to.
type rawSliceDevice struct {
	Name       string              `yaml:"name"`
	Attributes map[string]rawValue `yaml:"attributes"`
}

type rawNS struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type rawGPU struct {
	Index        rawValue `yaml:"index"`
	UUID         string   `yaml:"uuid"`
	Model        string   `yaml:"model"`
	Mode         string   `yaml:"mode"`
	MPS          rawMPS   `yaml:"mps"`
	Power        rawPower `yaml:"power"`
	MIGInstances []rawMIG `yaml:"migInstances"`
	Minor        rawValue `yaml:"minor"`
}

type rawMPS struct {
	ProcessView string `yaml:"processView"`
}

type rawPower struct {
	IdleWatts *float64 `yaml:"idleWatts"`
	MaxWatts  *float64 `yaml:"maxWatts"`
}

type rawMIG struct {
	UUID    string   `yaml:"uuid"`
	Profile string   `yaml:"profile"`
	GI      rawValue `yaml:"gi"`
}

type rawPod struct {
	UID         string            `yaml:"uid"`
	Namespace   string            `yaml:"namespace"`
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
	Start       rawValue          `yaml:"start"`
	End         rawValue          `yaml:"end"`
	Containers  []rawContainer    `yaml:"containers"`
	// InitContainers and AnnotationChanges are "shapes of real clusters".
	InitContainers    []rawInitContainer    `yaml:"initContainers"`
	AnnotationChanges []rawAnnotationChange `yaml:"annotationChanges"`
}

type rawContainer struct {
	Name      string       `yaml:"name"`
	ID        string       `yaml:"id"`
	Devices   []rawDevice  `yaml:"devices"`
	Claims    []rawClaim   `yaml:"claims"`
	Processes []rawProcess `yaml:"processes"`
	// Limits are the container's extended-resource limits (pod spec).
	Limits map[string]string `yaml:"limits"`
}

// rawInitContainer is a container with the two fields only init containers
// have, kept off rawContainer so that strict decoding still rejects them on
// regular containers.
type rawInitContainer struct {
	rawContainer  `yaml:",inline"`
	End           rawValue `yaml:"end"`
	RestartPolicy string   `yaml:"restartPolicy"`
}

type rawClaim struct {
	Claim   string `yaml:"claim"`
	Request string `yaml:"request"`
	Driver  string `yaml:"driver"`
	Pool    string `yaml:"pool"`
	Device  string `yaml:"device"`
}

type rawAnnotationChange struct {
	At          rawValue          `yaml:"at"`
	Annotations map[string]string `yaml:"annotations"`
}

type rawDevice struct {
	Resource string   `yaml:"resource"`
	IDs      []string `yaml:"ids"`
}

type rawProcess struct {
	PID       rawValue     `yaml:"pid"`
	Device    string       `yaml:"device"`
	MemoryMiB rawValue     `yaml:"memoryMiB"`
	Start     rawValue     `yaml:"start"`
	End       rawValue     `yaml:"end"`
	Busy      []rawSegment `yaml:"busy"`
	BusyTrace string       `yaml:"busyTrace"`
	// Memory and MemoryTrace give framebuffer over time (memory.go).
	Memory      []rawMemorySegment `yaml:"memory"`
	MemoryTrace string             `yaml:"memoryTrace"`
	// Comm is an extension to the contract: a process name for procfs.
	Comm string `yaml:"comm"`
}

type rawSegment struct {
	From     rawValue `yaml:"from"`
	To       rawValue `yaml:"to"`
	Fraction *float64 `yaml:"fraction"`
}

type rawMemorySegment struct {
	From rawValue `yaml:"from"`
	To   rawValue `yaml:"to"`
	MiB  rawValue `yaml:"mib"`
}

// rawValue keeps a scalar's YAML node so that durations, times and integers
// are parsed where the field path is known, giving errors that name the
// field (and integers are not silently truncated from 1.5, as yaml.v3 does). An absent
// or null field leaves node nil.
type rawValue struct {
	node *yaml.Node
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (v *rawValue) UnmarshalYAML(n *yaml.Node) error {
	v.node = n
	return nil
}

var _ yaml.Unmarshaler = (*rawValue)(nil)

func (v rawValue) set() bool { return v.node != nil }
