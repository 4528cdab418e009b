package groundtruth

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteJSONShape(t *testing.T) {
	free := 12.5
	tr := &Truth{
		Scenario: "s", Duration: 60, LedgerInterval: 60,
		Containers: map[string]ContainerTruth{
			"ns/p/c": {Allocated: 30, Used: 10, EdgeTol: 1e-6, SharingMode: "mps", Team: "t"},
			"ns/q/c": {Allocated: 17.5, Used: 2, EdgeTol: 0.5, Method: MethodEstimated, SharingMode: "mps", Team: "t"},
		},
		GPUs: map[string]GPUTruth{"GPU-1": {Model: "A100-SXM4-80GB", Unallocated: &free}, "GPU-2": {Model: "H200-141GB"}},
	}
	var buf bytes.Buffer
	if err := tr.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(buf.Bytes(), &generic); err != nil {
		t.Fatal(err)
	}
	p := generic["containers"].(map[string]any)["ns/p/c"].(map[string]any)
	if m, ok := p["method"]; !ok || m != nil {
		t.Errorf("measured method = %v (present %v), want null", m, ok)
	}
	if q := generic["containers"].(map[string]any)["ns/q/c"].(map[string]any); q["method"] != "estimated" {
		t.Errorf("estimated method = %v", q["method"])
	}
	if g2 := generic["gpus"].(map[string]any)["GPU-2"].(map[string]any); len(g2) != 1 {
		t.Errorf("GPU without residuals = %v, want only its model", g2)
	}
	for _, key := range []string{"expect_flags", "forbid_flags"} {
		if l, ok := generic[key].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %v, want []", key, generic[key])
		}
	}
	if _, ok := generic["instance_groups"]; ok {
		t.Error("instance_groups written with no groups")
	}
	if !strings.Contains(buf.String(), "\n \"containers\": {") {
		t.Errorf("want one-space indentation, got:\n%s", buf.String())
	}

	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	back.ExpectFlags, back.ForbidFlags = nil, nil
	if !reflect.DeepEqual(back, tr) {
		t.Errorf("round trip = %+v, want %+v", back, tr)
	}
}

func TestReadJSONRejectsGarbage(t *testing.T) {
	if _, err := ReadJSON(strings.NewReader("{not json")); err == nil {
		t.Fatal("want an error")
	}
}

func TestLoadFlags(t *testing.T) {
	dir := t.TempDir()
	if f, err := LoadFlags(dir); err != nil || f.Expect != nil || f.Forbid != nil {
		t.Fatalf("missing sidecar = %+v, %v; want empty", f, err)
	}
	yaml := "expect_flags:\n- {kind: noisy_neighbour, namespace: a, pod: p}\nforbid_flags:\n- {kind: idle_allocation}\n"
	if err := os.WriteFile(filepath.Join(dir, FlagsFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFlags(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Flags{
		Expect: []map[string]string{{"kind": "noisy_neighbour", "namespace": "a", "pod": "p"}},
		Forbid: []map[string]string{{"kind": "idle_allocation"}},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("flags = %+v, want %+v", f, want)
	}
	for name, body := range map[string]string{"no kind": "expect_flags:\n- {pod: p}\n", "not yaml": "expect_flags: [\n"} {
		if err := os.WriteFile(filepath.Join(dir, FlagsFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadFlags(dir); err == nil || !strings.Contains(err.Error(), FlagsFile) {
			t.Errorf("%s: error = %v, want one naming %s", name, err, FlagsFile)
		}
	}
}
