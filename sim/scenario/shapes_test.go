package scenario

import (
	"os"
	"reflect"
	"testing"
	"time"
)

// shapesPath is a scenario using every "shapes of real clusters" field;
// the simulator's tests read it too.
const shapesPath = "testdata/shapes/scenario.yaml"

func shapesYAML(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(shapesPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func loadShapes(t *testing.T) *Scenario {
	t.Helper()
	s, err := Load(shapesPath)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

// The expected values below are read off testdata/shapes/scenario.yaml by
// hand; derived container IDs come from Python's hashlib.

func TestParseResourceSlices(t *testing.T) {
	s := loadShapes(t)
	want := []ResourceSlice{
		{Driver: "gpu.nvidia.com", Pool: "sim-node-shapes", Devices: []SliceDevice{
			{Name: "gpu-0", Attributes: map[string]string{
				"type": "gpu", "uuid": "GPU-5a000000-0000-4000-8000-000000000000",
				"index": "0", "productName": "NVIDIA A100-SXM4-80GB",
			}},
			{Name: "gpu-1-mig-gi7", Attributes: map[string]string{
				"type": "mig", "uuid": "MIG-5a000000-0000-4000-8000-0000000000b7",
				"parentUUID": "GPU-5a000000-0000-4000-8000-000000000001", "profile": "1g.10gb",
				"gpu.nvidia.com/migCapable": "true", "memorySlices": "1",
			}},
		}},
		{Driver: "dra.example.com", Pool: "other", Devices: []SliceDevice{{Name: "nic-0"}}},
	}
	if !reflect.DeepEqual(s.Node.ResourceSlices, want) {
		t.Errorf("resourceSlices =\n%+v\nwant\n%+v", s.Node.ResourceSlices, want)
	}
}

// typedAttributes is gpu-0's attributes written as resource.k8s.io writes
// them: a one-key mapping naming the value's type.
const typedAttributes = "attributes: {type: {string: gpu}, uuid: {string: GPU-5a000000-0000-4000-8000-000000000000}, index: {int: 0}, productName: {string: NVIDIA A100-SXM4-80GB}, migEnabled: {bool: false}, driverVersion: {version: 1.2.3}}"

const plainAttributes = "attributes: {type: gpu, uuid: GPU-5a000000-0000-4000-8000-000000000000, index: 0, productName: NVIDIA A100-SXM4-80GB}"

func TestParseTypedAttributeValues(t *testing.T) {
	s, err := Parse([]byte(editText(t, shapesYAML(t), plainAttributes, typedAttributes)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"type": "gpu", "uuid": "GPU-5a000000-0000-4000-8000-000000000000",
		"index": "0", "productName": "NVIDIA A100-SXM4-80GB", "migEnabled": "false", "driverVersion": "1.2.3",
	}
	if got := s.Node.ResourceSlices[0].Devices[0].Attributes; !reflect.DeepEqual(got, want) {
		t.Errorf("typed attributes = %v, want %v", got, want)
	}
}

func TestParseRejectsBadTypedAttributeValues(t *testing.T) {
	const at = "node.resourceSlices[0].devices[0].attributes."
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"unknown type", "index: {int: 0}", "index: {float: 0}", []string{at + "index", `"float" is not an attribute type`}},
		{"two keys", "index: {int: 0}", "index: {int: 0, string: x}", []string{at + "index", "exactly one", "2 keys"}},
		{"empty mapping", "index: {int: 0}", "index: {}", []string{at + "index", "0 keys"}},
		{"int not an integer", "index: {int: 0}", "index: {int: zero}", []string{at + "index.int", `"zero" is not an integer`}},
		{"bool not a bool", "migEnabled: {bool: false}", "migEnabled: {bool: maybe}", []string{at + "migEnabled.bool", `"maybe" is not a bool`}},
		{"value not a scalar", "type: {string: gpu}", "type: {string: [gpu]}", []string{at + "type.string", "expected a scalar, got a list"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(editText(t, shapesYAML(t), plainAttributes, typedAttributes, tc.from, tc.to)), t.TempDir())
			wantErr(t, err, tc.want...)
		})
	}
}

func TestParseMinorsAndGIs(t *testing.T) {
	s := loadShapes(t)
	// gpus[2] gives no minor: it is its index, 2.
	for i, want := range []int{3, 0, 2} {
		if got := s.GPUs[i].Minor; got != want {
			t.Errorf("gpus[%d].minor = %d, want %d", i, got, want)
		}
	}
	for i, want := range []int{2, 7, 0} {
		if got := s.GPUs[1].MIGInstances[i].GI; got != want {
			t.Errorf("gpus[1].migInstances[%d].gi = %d, want %d", i, got, want)
		}
	}
	// Without gi, instances are numbered by position from 0 (baseYAML gives none).
	b, err := Parse([]byte(baseYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	if m := b.GPUs[1].MIGInstances; m[0].GI != 0 || m[1].GI != 1 {
		t.Errorf("default gi = %d, %d; want 0, 1", m[0].GI, m[1].GI)
	}
	if b.GPUs[0].Minor != 0 || b.GPUs[1].Minor != 1 {
		t.Errorf("default minors = %d, %d; want 0, 1", b.GPUs[0].Minor, b.GPUs[1].Minor)
	}
}

func TestParseInitContainers(t *testing.T) {
	s := loadShapes(t)
	pod := s.Pods[0] // dra-infer, alive [10s,9m]
	type window struct {
		name, id, policy string
		start, end       time.Duration
	}
	want := []window{
		// Plain: from the pod's start to its end.
		{"fetch-weights", "7eb88019f7483eea2468a02ef7bf91f27e6f86a81cc7b339a8fc1764b926fa1b", "", 10 * time.Second, 40 * time.Second},
		// Sidecar: from its turn (fetch-weights' end) to the pod's end.
		{"proxy", "7e7f296438470d6567b1ff9e40292eec5b24dc82fcf5e4253b094a647f80e413", "Always", 40 * time.Second, 9 * time.Minute},
		// Plain after a sidecar: its turn is still fetch-weights' end.
		{"warmup", "2a169ed0ae3089eecd44019a1afc2d8a5a4e6af61d52553ebe4f119bd0961eb2", "", 40 * time.Second, time.Minute},
	}
	var got []window
	for _, ct := range pod.InitContainers {
		got = append(got, window{ct.Name, ct.ID, ct.RestartPolicy, ct.Start, ct.End})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("init containers =\n%+v\nwant\n%+v", got, want)
	}
	if pod.InitContainers[0].Sidecar() || !pod.InitContainers[1].Sidecar() {
		t.Errorf("Sidecar() = %v, %v; want false, true", pod.InitContainers[0].Sidecar(), pod.InitContainers[1].Sidecar())
	}
	// Regular containers start when the last plain init container ends
	// (fetch-weights at 1m; the sidecar does not delay them).
	server := pod.Containers[0]
	if server.Start != time.Minute || server.End != 9*time.Minute {
		t.Errorf("server window = [%v,%v], want [1m,9m]", server.Start, server.End)
	}
	if got := pod.ContainersStart(); got != time.Minute {
		t.Errorf("ContainersStart = %v, want 1m", got)
	}
	if p := server.Processes[0]; p.Start != time.Minute || p.End != 9*time.Minute {
		t.Errorf("server process = [%v,%v], want [1m,9m]", p.Start, p.End)
	}
	// An init container's process defaults to the container's window.
	p := pod.InitContainers[0].Processes[0]
	if p.PID != 30001 || p.Start != 10*time.Second || p.End != 40*time.Second || p.MemoryMiB != 1000 {
		t.Errorf("fetch-weights process = pid %d [%v,%v] %d MiB, want 30001 [10s,40s] 1000", p.PID, p.Start, p.End, p.MemoryMiB)
	}
	if want := []Segment{{20 * time.Second, 40 * time.Second, 0.5}}; !reflect.DeepEqual(p.Busy, want) {
		t.Errorf("fetch-weights busy = %v, want %v", p.Busy, want)
	}
	// The devices of an init container are kept like a container's.
	setup := s.Pods[2].InitContainers[0]
	if want := []DeviceRequest{{"nvidia.com/gpu", []string{"nvidia0/gi2"}}}; !reflect.DeepEqual(setup.Devices, want) {
		t.Errorf("setup devices = %v, want %v", setup.Devices, want)
	}
	if setup.Start != 0 || setup.End != 5*time.Second {
		t.Errorf("setup window = [%v,%v], want [0s,5s]", setup.Start, setup.End)
	}
}

func TestParseInitContainerWithoutEndExitsAtItsTurn(t *testing.T) {
	s, err := Parse([]byte(editText(t, shapesYAML(t), "      - name: warmup\n        end: 1m\n", "      - name: warmup\n")), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	pod := s.Pods[0]
	if w := pod.InitContainers[2]; w.Start != 40*time.Second || w.End != 40*time.Second {
		t.Errorf("warmup window = [%v,%v], want [40s,40s]", w.Start, w.End)
	}
	if got := pod.ContainersStart(); got != 40*time.Second {
		t.Errorf("ContainersStart = %v, want 40s", got)
	}
}

func TestParseClaims(t *testing.T) {
	s := loadShapes(t)
	gpuClaim := Claim{Claim: "gpu-claim", Request: "gpu", Driver: "gpu.nvidia.com", Pool: "sim-node-shapes", Device: "gpu-0"}
	if got := s.Pods[0].InitContainers[0].Claims; !reflect.DeepEqual(got, []Claim{gpuClaim}) {
		t.Errorf("fetch-weights claims = %+v", got)
	}
	if got := s.Pods[0].Containers[0].Claims; !reflect.DeepEqual(got, []Claim{gpuClaim}) {
		t.Errorf("server claims = %+v", got)
	}
	want := []Claim{
		{Claim: "shared-gpu", Driver: "gpu.nvidia.com", Pool: "sim-node-shapes", Device: "gpu-0"},
		{Claim: "shared-gpu", Driver: "gpu.nvidia.com", Pool: "sim-node-shapes", Device: "gpu-1-mig-gi7"},
	}
	if got := s.Pods[1].Containers[0].Claims; !reflect.DeepEqual(got, want) {
		t.Errorf("worker claims = %+v, want %+v", got, want)
	}
}

func TestParseAnnotationChanges(t *testing.T) {
	s := loadShapes(t)
	pod := s.Pods[3]
	const (
		key     = "hami.io/vgpu-devices-allocated"
		before  = "GPU-5a000000-0000-4000-8000-000000000002,NVIDIA,10000,30:;"
		after   = "GPU-5a000000-0000-4000-8000-000000000002,NVIDIA,10000,90:;"
		nodeKey = "hami.io/vgpu-node"
	)
	want := []AnnotationChange{
		{5 * time.Minute, map[string]string{key: after}},
		{5 * time.Minute, map[string]string{"example.com/edited-by": "tenant"}},
	}
	if !reflect.DeepEqual(pod.AnnotationChanges, want) {
		t.Errorf("annotationChanges = %+v, want %+v", pod.AnnotationChanges, want)
	}
	if got := pod.AnnotationsAt(5*time.Minute - time.Nanosecond); !reflect.DeepEqual(got, map[string]string{key: before, nodeKey: "sim-node-shapes"}) {
		t.Errorf("annotations just before 5m = %v", got)
	}
	wantAfter := map[string]string{key: after, nodeKey: "sim-node-shapes", "example.com/edited-by": "tenant"}
	if got := pod.AnnotationsAt(5 * time.Minute); !reflect.DeepEqual(got, wantAfter) {
		t.Errorf("annotations at 5m = %v, want %v", got, wantAfter)
	}
	if pod.Annotations[key] != before {
		t.Errorf("AnnotationsAt changed the pod's initial annotations: %v", pod.Annotations)
	}
}

func TestParseProcessesIncludeInitContainers(t *testing.T) {
	s := loadShapes(t)
	var pids []uint32
	for _, ref := range s.Processes() {
		pids = append(pids, ref.Process.PID)
	}
	// Pod by pod, init containers' processes first, then host processes.
	want := []uint32{30001, 30002, 30003, 30004, 30005, 30006, 30007, 700}
	if !reflect.DeepEqual(pids, want) {
		t.Errorf("Processes() PIDs = %v, want %v", pids, want)
	}
	if ref := s.Processes()[0]; ref.Container != &s.Pods[0].InitContainers[0] {
		t.Errorf("pid 30001's container = %+v, want fetch-weights", ref.Container)
	}
}

func TestCloneShapes(t *testing.T) {
	s := loadShapes(t)
	c := s.Clone()
	if !reflect.DeepEqual(s, c) {
		t.Errorf("clone differs from the original")
	}
	if path, ok := shared(reflect.ValueOf(s).Elem(), reflect.ValueOf(c).Elem(), "Scenario"); ok {
		t.Errorf("clone shares memory with the original at %s", path)
	}
}

// TestParseRejectsShapes breaks one rule of the new fields per case and
// checks that the error names the field path and the offending value.
func TestParseRejectsShapes(t *testing.T) {
	const (
		fetch  = "pods[0].initContainers[0]"
		warmup = "pods[0].initContainers[2]"
	)
	cases := []struct {
		name  string
		edits []string
		want  []string
	}{
		{"minor negative", []string{"minor: 3", "minor: -1"}, []string{"gpus[0].minor", "-1 is outside [0,"}},
		{"minor not an integer", []string{"minor: 3", "minor: three"}, []string{"gpus[0].minor", `"three" is not an integer`}},
		{"minor duplicate", []string{"minor: 0", "minor: 3"}, []string{"gpus[1].minor", "3 is already the minor number of gpus[0]"}},
		{"minor clashes with a default", []string{"minor: 3", "minor: 2"}, []string{"gpus[2].minor", "2 is already the minor number of gpus[0]", "left out is the GPU's index"}},
		{"gi negative", []string{"gi: 7", "gi: -7"}, []string{"gpus[1].migInstances[1].gi", "-7 is outside [0,"}},
		{"gi not an integer", []string{"gi: 7", "gi: seven"}, []string{"gpus[1].migInstances[1].gi", `"seven" is not an integer`}},
		{"gi duplicate", []string{"gi: 0", "gi: 2"}, []string{"gpus[1].migInstances[2].gi", "2 is already the GPU-instance ID of migInstances[0]"}},
		{"slice driver", []string{"driver: dra.example.com", "driver: ''"}, []string{"node.resourceSlices[1].driver", "is required"}},
		{"slice pool", []string{"pool: other", "pool: ''"}, []string{"node.resourceSlices[1].pool", "is required"}},
		{"slice device name", []string{"- name: nic-0", "- name: ''"}, []string{"node.resourceSlices[1].devices[0].name", "is required"}},
		{"slice device duplicate", []string{"- name: gpu-1-mig-gi7", "- name: gpu-0"},
			[]string{"node.resourceSlices[0].devices[1].name", `"gpu-0" is already published in pool "sim-node-shapes" of driver "gpu.nvidia.com" by node.resourceSlices[0].devices[0]`}},
		{"attribute without value", []string{`memorySlices: "1"`, "memorySlices:"}, []string{"node.resourceSlices[0].devices[1].attributes.memorySlices", "has no value"}},
		{"attribute not a scalar", []string{"profile: 1g.10gb\n", "profile: [1g]\n"}, []string{"node.resourceSlices[0].devices[1].attributes.profile", "expected a scalar, got a list"}},
		{"slice unknown field", []string{"        - name: nic-0", "        - name: nic-0\n          attribute: {}"}, []string{"node.resourceSlices[1].devices[0].attribute", `unknown field "attribute"`}},
		{"restartPolicy", []string{"restartPolicy: Always", "restartPolicy: OnFailure"}, []string{"pods[0].initContainers[1].restartPolicy", `"OnFailure" is not Always`}},
		{"sidecar with end", []string{"restartPolicy: Always", "restartPolicy: Always\n        end: 2m"}, []string{"pods[0].initContainers[1].end", "sidecar"}},
		{"init end before its turn", []string{"end: 1m", "end: 30s"}, []string{warmup + ".end", "30s is before the init container's turn at 40s"}},
		{"init end before pod start", []string{"end: 40s", "end: 5s"}, []string{fetch + ".end", "5s is before the init container's turn at 10s"}},
		{"init end after pod end", []string{"end: 1m", "end: 9m30s"}, []string{warmup + ".end", "9m30s is after the pod's end 9m0s"}},
		{"init end garbage", []string{"end: 40s", "end: soon"}, []string{fetch + ".end", `"soon"`}},
		{"end on a container", []string{"      - name: server\n", "      - name: server\n        end: 1m\n"}, []string{"pods[0].containers[0].end", `unknown field "end"`}},
		{"restartPolicy on a container", []string{"      - name: server\n", "      - name: server\n        restartPolicy: Always\n"}, []string{"pods[0].containers[0].restartPolicy", `unknown field "restartPolicy"`}},
		{"init process after the pod", []string{"memoryMiB: 1000", "memoryMiB: 1000\n            end: 11m"}, []string{fetch + ".processes[0].end", "11m0s is after the pod's end 9m0s"}},
		{"init and container names", []string{"- name: warmup", "- name: server"}, []string{"pods[0].containers[0].name", `"server" is already used by initContainers[2] of this pod`}},
		{"init container id", []string{"- name: warmup", "- name: warmup\n        id: ABC"}, []string{warmup + ".id", `"ABC" is not 64 lowercase hex`}},
		{"init busy outside its process", []string{"{from: 20s, to: 40s, fraction: 0.5}", "{from: 20s, to: 41s, fraction: 0.5}"}, []string{fetch + ".processes[0].busy[0]", "[20s,41s) lies outside the process lifetime [10s,40s]"}},
		{"claim name", []string{"{claim: gpu-claim, request: gpu, driver: gpu.nvidia.com, pool: sim-node-shapes, device: gpu-0}\n        processes", "{request: gpu, driver: gpu.nvidia.com, pool: sim-node-shapes, device: gpu-0}\n        processes"},
			[]string{fetch + ".claims[0].claim", "is required"}},
		{"claim driver", []string{"{claim: shared-gpu, driver: gpu.nvidia.com,", "{claim: shared-gpu, driver: '',"}, []string{"pods[1].containers[0].claims[0].driver", "is required"}},
		{"claim pool", []string{"pool: sim-node-shapes, device: gpu-1-mig-gi7", "pool: '', device: gpu-1-mig-gi7"}, []string{"pods[1].containers[0].claims[1].pool", "is required"}},
		{"claim device", []string{"device: gpu-1-mig-gi7}", "device: ''}"}, []string{"pods[1].containers[0].claims[1].device", "is required"}},
		{"claim listed twice", []string{"device: gpu-1-mig-gi7}", "device: gpu-0}"}, []string{"pods[1].containers[0].claims[1]", `claim "shared-gpu" device gpu.nvidia.com/sim-node-shapes/gpu-0 is already listed by claims[0]`}},
		{"claim unknown field", []string{"{claim: shared-gpu, driver: gpu.nvidia.com,", "{claim: shared-gpu, drvier: x, driver: gpu.nvidia.com,"}, []string{"pods[1].containers[0].claims[0].drvier", `unknown field "drvier"`}},
		{"change at missing", []string{"      - at: 5m\n        annotations: {hami", "      - annotations: {hami"}, []string{"pods[3].annotationChanges[0].at", "is required"}},
		{"change after the pod", []string{"      - at: 5m\n        annotations: {example", "      - at: 11m\n        annotations: {example"}, []string{"pods[3].annotationChanges[1].at", "11m0s is after the pod's end 10m0s"}},
		{"change before the pod", []string{"    name: hami-edit\n", "    name: hami-edit\n    start: 6m\n", "      - at: 5m\n        annotations: {example", "      - at: 7m\n        annotations: {example"},
			[]string{"pods[3].annotationChanges[0].at", "5m0s is before the pod's start 6m0s"}},
		{"changes out of order", []string{"      - at: 5m\n        annotations: {hami", "      - at: 6m\n        annotations: {hami"},
			[]string{"pods[3].annotationChanges[1].at", "5m0s is before pods[3].annotationChanges[0].at 6m0s"}},
		{"change without annotations", []string{"annotations: {example.com/edited-by: tenant}", "annotations: {}"}, []string{"pods[3].annotationChanges[1].annotations", "at least one"}},
		{"change garbage", []string{"      - at: 5m\n        annotations: {hami", "      - at: later\n        annotations: {hami"}, []string{"pods[3].annotationChanges[0].at", `"later"`}},
		{"physics with an init container", []string{"{from: 20s, to: 40s, fraction: 0.5}", "{from: 20s, to: 40s, fraction: 0.9}"},
			[]string{"gpus[0]", "sum to 1.1 at 20s", fetch + ".processes[0] pid 30001: 0.9", "pods[1].containers[0].processes[0] pid 30003: 0.2"}},
		{"pid of an init container alive twice", []string{"pid: 30006", "pid: 30005"},
			[]string{"pods[2].containers[0].processes[0].pid", "30005 on gpus[1].migInstances[0] is alive during [5s,10m0s], overlapping pods[2].initContainers[0].processes[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(editText(t, shapesYAML(t), tc.edits...)), t.TempDir())
			wantErr(t, err, tc.want...)
		})
	}
}

// A process outside its container's run window but inside its pod's
// lifetime is simulated as written: the contract rejects only processes
// outside the pod's lifetime. Its container's window is only the default.
func TestParseKeepsProcessesOutsideTheirContainersWindow(t *testing.T) {
	cases := []struct {
		name        string
		edits       []string
		pick        func(*Scenario) Process
		start, stop time.Duration
	}{
		{"init process after its container", []string{"memoryMiB: 1000", "memoryMiB: 1000\n            end: 50s"},
			func(s *Scenario) Process { return s.Pods[0].InitContainers[0].Processes[0] }, 10 * time.Second, 50 * time.Second},
		{"container process before the init containers end", []string{"memoryMiB: 4000", "memoryMiB: 4000\n            start: 30s"},
			func(s *Scenario) Process { return s.Pods[0].Containers[0].Processes[0] }, 30 * time.Second, 9 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(editText(t, shapesYAML(t), tc.edits...)), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if p := tc.pick(s); p.Start != tc.start || p.End != tc.stop {
				t.Errorf("process window [%v,%v], want [%v,%v]", p.Start, p.End, tc.start, tc.stop)
			}
		})
	}
}
