package groundtruth

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

func FuzzParseHAMi(f *testing.F) {
	f.Add(gpuA + ",NVIDIA,20000,25:;")
	f.Add(gpuA + ",NVIDIA,0,30:" + gpuB + ",NVIDIA,1000,0:;" + gpuB + ",NVIDIA,5,5:")
	f.Add(";;,,,:::")
	f.Add(gpuA + ",NVIDIA,-1,101:")
	f.Fuzz(func(t *testing.T, annotation string) {
		parts := parseHAMi(annotation)
		// Each entry ends with ";": blank text after the last one is none.
		want := strings.Count(annotation, ";") + 1
		if i := strings.LastIndexByte(annotation, ';'); i >= 0 && strings.TrimSpace(annotation[i+1:]) == "" {
			want--
		}
		if len(parts) != want {
			t.Fatalf("%d parts for %q, want %d", len(parts), annotation, want)
		}
		for _, p := range parts {
			for _, e := range p {
				if e.cores < 0 || e.cores > 100 || e.memMiB < 0 || strings.ContainsAny(e.uuid, ",:;") {
					t.Fatalf("accepted entry %q %+v", e.uuid, e)
				}
			}
		}
	})
}

// FuzzReadJSON: any input either fails cleanly or survives a write/read
// round trip unchanged.
func FuzzReadJSON(f *testing.F) {
	entries, _ := filepath.Glob(filepath.Join(corpusDir, "*", "truth.json"))
	for _, path := range entries {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"containers":{"a/b/c":{"method":null}},"gpus":{"g":{"unallocated":0}},"instance_groups":[{"members":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := tr.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(&buf)
		if err != nil {
			t.Fatalf("cannot read what was written: %v\n%s", err, buf.String())
		}
		norm := func(x *Truth) {
			x.ExpectFlags, x.ForbidFlags = nonNilFlags(x.ExpectFlags), nonNilFlags(x.ForbidFlags)
		}
		norm(tr)
		norm(back)
		if !reflect.DeepEqual(tr, back) {
			t.Fatalf("round trip changed the truth:\n%+v\n%+v", tr, back)
		}
	})
}

// FuzzCompute: whatever the parser accepts, Compute answers without
// panicking, and its allocation never exceeds a GPU's capacity.
func FuzzCompute(f *testing.F) {
	// Small seeds: the fuzzer minimises every interesting input, which is
	// slow on the corpus's full files (run with -fuzzminimizetime=1s: the
	// YAML parser finds new coverage often).
	for _, mode := range []string{"mps", "timeslicing", "hami"} {
		f.Add([]byte(strings.ReplaceAll(tinyScenario, "MODE", mode)))
	}
	f.Add([]byte(tinyMIGScenario))
	f.Add([]byte(tinyShapesScenario))
	f.Add([]byte(tinyMemoryScenario))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenario.Parse(data, t.TempDir())
		if err != nil || sc.Duration > 3600e9 || len(sc.Pods) > 50 {
			return
		}
		tr, err := Compute(sc)
		if err != nil {
			return
		}
		for uuid, g := range tr.GPUs {
			if g.Unallocated != nil && (*g.Unallocated < 0 || *g.Unallocated > tr.Duration*(1+1e-9)) {
				t.Fatalf("GPU %s: unallocated %v outside [0, %v]", uuid, *g.Unallocated, tr.Duration)
			}
		}
	})
}

const tinyScenario = `apiVersion: gpuledger/v1
kind: Scenario
name: tiny
start: 2026-11-01T00:00:00Z
duration: 10s
node: {name: n, labels: {nvidia.com/gpu.replicas: "2"}}
gpus:
- {index: 0, uuid: GPU-aaaaaaaa-0000-4000-8000-000000000000, model: H100-SXM5-80GB, mode: MODE}
pods:
- uid: 00000000-0000-4000-8000-000000000001
  namespace: ns
  name: p
  start: 1.5s
  annotations: {hami.io/vgpu-devices-allocated: "GPU-aaaaaaaa-0000-4000-8000-000000000000,NVIDIA,100,50:;"}
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: ["GPU-aaaaaaaa-0000-4000-8000-000000000000::0", "GPU-aaaaaaaa-0000-4000-8000-000000000000-0"]}]
    processes:
    - {pid: 1, device: GPU-aaaaaaaa-0000-4000-8000-000000000000, busy: [{from: 2s, to: 5s, fraction: 0.7}]}
hostProcesses:
- {pid: 2, device: GPU-aaaaaaaa-0000-4000-8000-000000000000, busy: [{from: 0s, to: 10s, fraction: 0.2}]}
`

const tinyMIGScenario = `apiVersion: gpuledger/v1
kind: Scenario
name: tiny-mig
start: 2026-11-01T00:00:00Z
duration: 10s
node: {name: n}
gpus:
- index: 0
  uuid: GPU-aaaaaaaa-0000-4000-8000-000000000000
  model: A100-SXM4-80GB
  mode: mig
  migInstances: [{uuid: MIG-11111111-0000-4000-8000-000000000000, profile: 3g.40gb}]
pods:
- uid: 00000000-0000-4000-8000-000000000001
  namespace: ns
  name: p
  containers:
  - name: c
    devices: [{resource: nvidia.com/mig-3g.40gb, ids: ["MIG-11111111-0000-4000-8000-000000000000::0"]}]
    processes: [{pid: 1, device: MIG-11111111-0000-4000-8000-000000000000, busy: [{from: 0s, to: 5s, fraction: 1}]}]
- uid: 00000000-0000-4000-8000-000000000002
  namespace: ns
  name: q
  containers:
  - name: c
    devices: [{resource: nvidia.com/mig-3g.40gb, ids: ["MIG-11111111-0000-4000-8000-000000000000::1"]}]
`

// tinyShapesScenario has the shapes of real clusters: init containers, a
// DRA claim, GKE IDs and a HAMi annotation edited mid-run.
const tinyShapesScenario = `apiVersion: gpuledger/v1
kind: Scenario
name: tiny-shapes
start: 2026-11-01T00:00:00Z
duration: 10s
node:
  name: n
  labels: {cloud.google.com/gke-max-shared-clients-per-gpu: "2"}
  resourceSlices:
  - driver: gpu.nvidia.com
    pool: n
    devices: [{name: gpu-0, attributes: {uuid: GPU-aaaaaaaa-0000-4000-8000-000000000000}}]
gpus:
- {index: 0, minor: 1, uuid: GPU-aaaaaaaa-0000-4000-8000-000000000000, model: H100-SXM5-80GB, mode: hami}
- {index: 1, minor: 0, uuid: GPU-bbbbbbbb-0000-4000-8000-000000000000, model: H100-SXM5-80GB, mode: timeslicing}
pods:
- uid: 00000000-0000-4000-8000-000000000001
  namespace: ns
  name: p
  annotations: {hami.io/vgpu-devices-allocated: ";GPU-aaaaaaaa-0000-4000-8000-000000000000,NVIDIA,100,50:;"}
  annotationChanges: [{at: 5s, annotations: {hami.io/vgpu-devices-allocated: "x"}}]
  initContainers:
  - {name: i, end: 2s, claims: [{claim: c, driver: gpu.nvidia.com, pool: n, device: gpu-0}]}
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: ["GPU-aaaaaaaa-0000-4000-8000-000000000000-0", "nvidia0/vgpu1"]}]
    processes:
    - {pid: 1, device: GPU-bbbbbbbb-0000-4000-8000-000000000000, busy: [{from: 2s, to: 5s, fraction: 0.7}]}
`

func TestTinyShapesSeedIsValid(t *testing.T) {
	// A seed the parser rejects would fuzz nothing of the new shapes.
	sc, err := scenario.Parse([]byte(tinyShapesScenario), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := mustCompute(t, sc)
	// The claim holds GPU A while the init container runs [0, 2): 2 s.
	// The container starts when i ends and holds, over [2, 10), half of A
	// (entry 1, pinned at its start; the edit at 5s changes nothing) and
	// half of B (nvidia0/vgpu1 with 2 clients per GPU): 4 + 4.
	wantNear(t, "allocated(i)", tr.Containers["ns/p/i"].Allocated, 2)
	wantNear(t, "allocated(c)", tr.Containers["ns/p/c"].Allocated, 0.5*8+0.5*8)
}
