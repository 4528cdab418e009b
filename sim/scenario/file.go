package scenario

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// File is the scenario file, field for field as docs/scenario-format.md
// gives it: the one schema that everything reading or writing scenario
// YAML uses. Parse decodes into it, then converts it into the clean
// Scenario of types.go (defaults applied, every value checked where its
// field path is known); the corpus generator
// (internal/groundtruth/cmd/genscenarios) and the demo's fleet
// (cmd/gpuledger) build it and marshal it with go.yaml.in/yaml/v3.
//
// Fields that are optional in the file are pointers, Values or omitempty,
// so that an absent field can be told apart from an explicit zero when
// defaults are applied, and so that a file written from a File leaves out
// what was not set. The field order is the order the YAML is written in.
type File struct {
	APIVersion         string          `yaml:"apiVersion"`
	Kind               string          `yaml:"kind"`
	Name               string          `yaml:"name"`
	Start              Value           `yaml:"start"`
	Duration           Value           `yaml:"duration"`
	PollInterval       Value           `yaml:"pollInterval"`
	LedgerInterval     Value           `yaml:"ledgerInterval"`
	DriverSamplePeriod Value           `yaml:"driverSamplePeriod"`
	Detection          FileDetection   `yaml:"detection"`
	Node               FileNode        `yaml:"node"`
	Namespaces         []FileNamespace `yaml:"namespaces"`
	GPUs               []*FileGPU      `yaml:"gpus"`
	Pods               []*FilePod      `yaml:"pods"`
	HostProcesses      []*FileProcess  `yaml:"hostProcesses,omitempty"`
}

// FileDetection is `detection`.
type FileDetection struct {
	IdleWindow    Value    `yaml:"idleWindow"`
	IdleThreshold *float64 `yaml:"idleThreshold"`
	NoisyWindow   Value    `yaml:"noisyWindow"`
	MemoryWindow  Value    `yaml:"memoryWindow,omitempty"`
}

// FileNode is `node`.
type FileNode struct {
	Name           string               `yaml:"name"`
	Labels         map[string]string    `yaml:"labels"`
	ResourceSlices []*FileResourceSlice `yaml:"resourceSlices,omitempty"`
}

// FileResourceSlice is one resource.k8s.io ResourceSlice a DRA driver
// publishes.
type FileResourceSlice struct {
	Driver  string            `yaml:"driver"`
	Pool    string            `yaml:"pool"`
	Devices []FileSliceDevice `yaml:"devices"`
}

// FileSliceDevice keeps attribute values as Values: Kubernetes attributes
// are strings, ints, bools or versions, and the scenario keeps the text as
// written whatever YAML type the scalar resolves to.
type FileSliceDevice struct {
	Name       string           `yaml:"name"`
	Attributes map[string]Value `yaml:"attributes,omitempty"`
}

// FileNamespace is one of `namespaces`.
type FileNamespace struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

// FileGPU is one of `gpus`.
type FileGPU struct {
	Index        Value      `yaml:"index"`
	Minor        Value      `yaml:"minor,omitempty"`
	UUID         string     `yaml:"uuid"`
	Model        string     `yaml:"model"`
	Mode         string     `yaml:"mode"`
	MPS          *FileMPS   `yaml:"mps,omitempty"`
	Power        FilePower  `yaml:"power,omitempty"`
	MIGInstances []*FileMIG `yaml:"migInstances,omitempty"`
}

// FileMPS is a GPU's `mps`.
type FileMPS struct {
	ProcessView string `yaml:"processView"`
}

// FilePower is a GPU's `power`.
type FilePower struct {
	IdleWatts *float64 `yaml:"idleWatts,omitempty"`
	MaxWatts  *float64 `yaml:"maxWatts,omitempty"`
}

// FileMIG is one of a GPU's `migInstances`.
type FileMIG struct {
	UUID    string `yaml:"uuid"`
	Profile string `yaml:"profile"`
	GI      Value  `yaml:"gi,omitempty"`
}

// FilePod is one of `pods`. InitContainers and AnnotationChanges are
// "shapes of real clusters".
type FilePod struct {
	UID               string                 `yaml:"uid"`
	Namespace         string                 `yaml:"namespace"`
	Name              string                 `yaml:"name"`
	Labels            map[string]string      `yaml:"labels,omitempty"`
	Annotations       map[string]string      `yaml:"annotations,omitempty"`
	Start             Value                  `yaml:"start,omitempty"`
	End               Value                  `yaml:"end,omitempty"`
	AnnotationChanges []FileAnnotationChange `yaml:"annotationChanges,omitempty"`
	InitContainers    []*FileInitContainer   `yaml:"initContainers,omitempty"`
	Containers        []*FileContainer       `yaml:"containers"`
}

// FileAnnotationChange is an edit of a pod's annotations while it runs.
type FileAnnotationChange struct {
	At          Value             `yaml:"at"`
	Annotations map[string]string `yaml:"annotations"`
}

// FileContainer is one of a pod's `containers`.
type FileContainer struct {
	Name              string `yaml:"name"`
	FileContainerSpec `yaml:",inline"`
}

// FileInitContainer is one of a pod's `initContainers`: a container with
// the two fields only init containers have, kept off FileContainer so
// that strict decoding still rejects them on regular containers.
type FileInitContainer struct {
	Name              string `yaml:"name"`
	RestartPolicy     string `yaml:"restartPolicy,omitempty"`
	End               Value  `yaml:"end,omitempty"`
	FileContainerSpec `yaml:",inline"`
}

// FileContainerSpec is what regular and init containers share.
type FileContainerSpec struct {
	ID        string         `yaml:"id,omitempty"`
	Devices   []FileDevice   `yaml:"devices,omitempty"`
	Claims    []FileClaim    `yaml:"claims,omitempty"`
	Processes []*FileProcess `yaml:"processes,omitempty"`
	// Limits are the container's extended-resource limits (pod spec).
	Limits map[string]string `yaml:"limits,omitempty"`
}

// FileClaim is one DRA claim device kubelet lists for a container.
type FileClaim struct {
	Claim   string `yaml:"claim"`
	Request string `yaml:"request,omitempty"`
	Driver  string `yaml:"driver"`
	Pool    string `yaml:"pool"`
	Device  string `yaml:"device"`
}

// FileDevice is one of a container's device-plugin `devices`.
type FileDevice struct {
	Resource string   `yaml:"resource"`
	IDs      []string `yaml:"ids,flow"`
}

// FileProcess is a GPU process of a container, or one of
// `hostProcesses`.
type FileProcess struct {
	PID       Value         `yaml:"pid"`
	Device    string        `yaml:"device"`
	MemoryMiB Value         `yaml:"memoryMiB"`
	Start     Value         `yaml:"start,omitempty"`
	End       Value         `yaml:"end,omitempty"`
	Busy      []FileSegment `yaml:"busy,flow"`
	BusyTrace string        `yaml:"busyTrace,omitempty"`
	// Memory and MemoryTrace give framebuffer over time (memory.go).
	Memory      []FileMemorySegment `yaml:"memory,flow,omitempty"`
	MemoryTrace string              `yaml:"memoryTrace,omitempty"`
	// Comm is an extension to the contract: a process name for procfs.
	Comm string `yaml:"comm,omitempty"`
}

// FileSegment is one stretch of a process's busy fraction.
type FileSegment struct {
	From     Value    `yaml:"from"`
	To       Value    `yaml:"to"`
	Fraction *float64 `yaml:"fraction"`
}

// FileMemorySegment is one stretch of a process's framebuffer use.
type FileMemorySegment struct {
	From Value `yaml:"from"`
	To   Value `yaml:"to"`
	MiB  Value `yaml:"mib"`
}

// Value is a scalar whose Go type depends on its field: a duration, a
// time, an integer, a device attribute. Decoded, it keeps the YAML node,
// so that it is parsed where the field path is known, giving errors that
// name the field (and integers are not silently truncated from 1.5, as
// yaml.v3 does); an absent or null field leaves it unset. Made by
// TextValue or IntValue, it is written as that string or integer is.
type Value struct {
	node *yaml.Node
	made any // string or int
}

// TextValue is s as a field's value ("90s", "2026-11-03T00:00:00Z").
func TextValue(s string) Value { return Value{made: s} }

// IntValue is i as a field's value.
func IntValue(i int) Value { return Value{made: i} }

// UnmarshalYAML implements yaml.Unmarshaler.
func (v *Value) UnmarshalYAML(n *yaml.Node) error {
	*v = Value{node: n}
	return nil
}

// MarshalYAML implements yaml.Marshaler: a decoded value as it was read,
// a made one as its string or integer.
func (v Value) MarshalYAML() (any, error) {
	if v.node != nil {
		return v.node, nil
	}
	return v.made, nil
}

// IsZero is true for a value neither read nor made, which omitempty
// leaves out.
func (v Value) IsZero() bool { return v.node == nil && v.made == nil }

var (
	_ yaml.Unmarshaler = (*Value)(nil)
	_ yaml.Marshaler   = Value{}
	_ yaml.IsZeroer    = Value{}
)

func (v Value) set() bool { return v.node != nil }

// dropNulls removes the null items of f's lists of pointers, as yaml.v3
// drops a null item of a list of structs: `pods: [~, {...}]` is one pod,
// as it was when the lists held structs.
func dropNulls(f *File) {
	f.GPUs = slices.DeleteFunc(f.GPUs, func(g *FileGPU) bool { return g == nil })
	for _, g := range f.GPUs {
		g.MIGInstances = slices.DeleteFunc(g.MIGInstances, func(m *FileMIG) bool { return m == nil })
	}
	f.Node.ResourceSlices = slices.DeleteFunc(f.Node.ResourceSlices, func(r *FileResourceSlice) bool { return r == nil })
	f.HostProcesses = slices.DeleteFunc(f.HostProcesses, func(p *FileProcess) bool { return p == nil })
	f.Pods = slices.DeleteFunc(f.Pods, func(p *FilePod) bool { return p == nil })
	for _, p := range f.Pods {
		p.InitContainers = slices.DeleteFunc(p.InitContainers, func(c *FileInitContainer) bool { return c == nil })
		for _, c := range p.InitContainers {
			c.Processes = slices.DeleteFunc(c.Processes, func(p *FileProcess) bool { return p == nil })
		}
		p.Containers = slices.DeleteFunc(p.Containers, func(c *FileContainer) bool { return c == nil })
		for _, c := range p.Containers {
			c.Processes = slices.DeleteFunc(c.Processes, func(p *FileProcess) bool { return p == nil })
		}
	}
}
