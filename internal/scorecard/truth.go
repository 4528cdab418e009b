package scorecard

import (
	"encoding/json"
	"fmt"
	"os"
)

// Truth is a scenario's truth.json: what a correct ledger says.
type Truth struct {
	Duration       float64                   // seconds every GPU must be covered
	Containers     map[string]ContainerTruth // by "namespace/pod/container"
	GPUs           map[string]GPUTruth       // by GPU UUID
	InstanceGroups []InstanceGroup
	ExpectFlags    []map[string]string // partial flags.csv rows that must match some row
	ForbidFlags    []map[string]string // partial flags.csv rows that must match none
}

// ContainerTruth is one container's expected totals over the scenario.
type ContainerTruth struct {
	Allocated      float64
	Used           float64
	UsedObservable *float64 // the best whole-percent NVML samples allow, when it differs
	EdgeTol        float64  // extra allocated tolerance for pods starting or ending mid-interval
	Method         string   // "" (measured) or "estimated"
	SharingMode    string
	Team           string
}

// GPUTruth holds a GPU's expected residuals; nil means not checked.
type GPUTruth struct {
	Unallocated  *float64
	Unattributed *float64
}

// InstanceGroup is a set of containers whose usage can only be judged
// together (holders of one MIG instance, clients behind one MPS server).
type InstanceGroup struct {
	Members []string
	Used    float64
}

// The wire shape; pointers tell a missing key from a zero.
type truthJSON struct {
	Duration       *float64                 `json:"duration"`
	Containers     map[string]containerJSON `json:"containers"`
	GPUs           map[string]GPUTruth      `json:"gpus"`
	InstanceGroups []groupJSON              `json:"instance_groups"`
	ExpectFlags    *[]map[string]string     `json:"expect_flags"`
	ForbidFlags    *[]map[string]string     `json:"forbid_flags"`
}

type containerJSON struct {
	Allocated      *float64 `json:"allocated"`
	Used           *float64 `json:"used"`
	UsedObservable *float64 `json:"used_observable"`
	EdgeTol        float64  `json:"edge_tol"`
	Method         *string  `json:"method"`
	SharingMode    *string  `json:"sharing_mode"`
	Team           *string  `json:"team"`
}

type groupJSON struct {
	Members []string `json:"members"`
	Used    *float64 `json:"used"`
}

// UnmarshalJSON reads the residuals, which are optional.
func (g *GPUTruth) UnmarshalJSON(b []byte) error {
	var w struct {
		Unallocated  *float64 `json:"unallocated"`
		Unattributed *float64 `json:"unattributed"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	g.Unallocated, g.Unattributed = w.Unallocated, w.Unattributed
	return nil
}

// ReadTruth reads and validates a truth.json file.
func ReadTruth(path string) (*Truth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read truth: %w", err)
	}
	t, err := ParseTruth(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTruth decodes truth.json; every required key that is missing is
// an error naming it.
func ParseTruth(b []byte) (*Truth, error) {
	var w truthJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("cannot parse truth: %w", err)
	}
	switch {
	case w.Duration == nil:
		return nil, fmt.Errorf("duration: missing")
	case *w.Duration <= 0:
		return nil, fmt.Errorf("duration: %v, want > 0", *w.Duration)
	case w.Containers == nil:
		return nil, fmt.Errorf("containers: missing")
	case w.GPUs == nil:
		return nil, fmt.Errorf("gpus: missing")
	case w.ExpectFlags == nil:
		return nil, fmt.Errorf("expect_flags: missing")
	case w.ForbidFlags == nil:
		return nil, fmt.Errorf("forbid_flags: missing")
	}
	t := &Truth{
		Duration:    *w.Duration,
		Containers:  make(map[string]ContainerTruth, len(w.Containers)),
		GPUs:        w.GPUs,
		ExpectFlags: *w.ExpectFlags,
		ForbidFlags: *w.ForbidFlags,
	}
	for key, c := range w.Containers {
		ct, err := c.truth()
		if err != nil {
			return nil, fmt.Errorf("containers[%q].%w", key, err)
		}
		t.Containers[key] = ct
	}
	for i, g := range w.InstanceGroups {
		if len(g.Members) == 0 || g.Used == nil {
			return nil, fmt.Errorf("instance_groups[%d]: want members and used", i)
		}
		t.InstanceGroups = append(t.InstanceGroups, InstanceGroup{Members: g.Members, Used: *g.Used})
	}
	return t, nil
}

func (c containerJSON) truth() (ContainerTruth, error) {
	switch {
	case c.Allocated == nil:
		return ContainerTruth{}, fmt.Errorf("allocated: missing")
	case c.Used == nil:
		return ContainerTruth{}, fmt.Errorf("used: missing")
	case c.SharingMode == nil:
		return ContainerTruth{}, fmt.Errorf("sharing_mode: missing")
	case c.Team == nil:
		return ContainerTruth{}, fmt.Errorf("team: missing")
	}
	ct := ContainerTruth{
		Allocated:      *c.Allocated,
		Used:           *c.Used,
		UsedObservable: c.UsedObservable,
		EdgeTol:        c.EdgeTol,
		SharingMode:    *c.SharingMode,
		Team:           *c.Team,
	}
	if c.Method != nil {
		ct.Method = *c.Method
	}
	return ct, nil
}
