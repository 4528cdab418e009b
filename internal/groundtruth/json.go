package groundtruth

import (
	"encoding/json"
	"fmt"
	"io"
)

// The wire shape follows testdata/examples/*/truth.json: keys in
// alphabetical order, method null when measured, residuals only when nonzero.
type jsonTruth struct {
	Containers     map[string]jsonContainer `json:"containers"`
	Duration       float64                  `json:"duration"`
	ExpectFlags    []map[string]string      `json:"expect_flags"`
	ForbidFlags    []map[string]string      `json:"forbid_flags"`
	GPUs           map[string]jsonGPU       `json:"gpus"`
	InstanceGroups []jsonGroup              `json:"instance_groups,omitempty"`
	LedgerInterval float64                  `json:"ledgerInterval"`
	Scenario       string                   `json:"scenario"`
}

type jsonContainer struct {
	Allocated   float64  `json:"allocated"`
	EdgeTol     *float64 `json:"edge_tol,omitempty"`
	Method      *string  `json:"method"`
	SharingMode string   `json:"sharing_mode"`
	Team        string   `json:"team"`
	Used        float64  `json:"used"`
}

type jsonGPU struct {
	Model        string   `json:"model"`
	Unallocated  *float64 `json:"unallocated,omitempty"`
	Unattributed *float64 `json:"unattributed,omitempty"`
}

type jsonGroup struct {
	Members []string `json:"members"`
	Used    float64  `json:"used"`
}

// WriteJSON writes t in the truth.json shape, indented by one space.
func (t *Truth) WriteJSON(w io.Writer) error {
	out := jsonTruth{
		Containers:     make(map[string]jsonContainer, len(t.Containers)),
		Duration:       t.Duration,
		ExpectFlags:    nonNilFlags(t.ExpectFlags),
		ForbidFlags:    nonNilFlags(t.ForbidFlags),
		GPUs:           make(map[string]jsonGPU, len(t.GPUs)),
		LedgerInterval: t.LedgerInterval,
		Scenario:       t.Scenario,
	}
	for k, c := range t.Containers {
		jc := jsonContainer{Allocated: c.Allocated, SharingMode: c.SharingMode, Team: c.Team, Used: c.Used}
		tol := c.EdgeTol
		jc.EdgeTol = &tol
		if c.Method != "" {
			m := c.Method
			jc.Method = &m
		}
		out.Containers[k] = jc
	}
	for k, g := range t.GPUs {
		out.GPUs[k] = jsonGPU{Model: g.Model, Unallocated: g.Unallocated, Unattributed: g.Unattributed}
	}
	for _, g := range t.InstanceGroups {
		out.InstanceGroups = append(out.InstanceGroups, jsonGroup{Members: g.Members, Used: g.Used})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("cannot write truth of scenario %q: %w", t.Scenario, err)
	}
	return nil
}

// ReadJSON reads a truth.json. A missing edge_tol reads as 0 (the contract
// examples omit it where no pod starts or ends inside the scenario).
func ReadJSON(r io.Reader) (*Truth, error) {
	var in jsonTruth
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("cannot read truth.json: %w", err)
	}
	t := &Truth{
		Scenario:       in.Scenario,
		Duration:       in.Duration,
		LedgerInterval: in.LedgerInterval,
		Containers:     make(map[string]ContainerTruth, len(in.Containers)),
		GPUs:           make(map[string]GPUTruth, len(in.GPUs)),
		ExpectFlags:    in.ExpectFlags,
		ForbidFlags:    in.ForbidFlags,
	}
	for k, c := range in.Containers {
		ct := ContainerTruth{Allocated: c.Allocated, Used: c.Used, SharingMode: c.SharingMode, Team: c.Team}
		if c.EdgeTol != nil {
			ct.EdgeTol = *c.EdgeTol
		}
		if c.Method != nil {
			ct.Method = *c.Method
		}
		t.Containers[k] = ct
	}
	for k, g := range in.GPUs {
		t.GPUs[k] = GPUTruth{Model: g.Model, Unallocated: g.Unallocated, Unattributed: g.Unattributed}
	}
	for _, g := range in.InstanceGroups {
		t.InstanceGroups = append(t.InstanceGroups, InstanceGroup{Members: g.Members, Used: g.Used})
	}
	return t, nil
}

func nonNilFlags(f []map[string]string) []map[string]string {
	if f == nil {
		return []map[string]string{}
	}
	return f
}
