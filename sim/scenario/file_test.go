package scenario

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestNullItemsAreDropped: a null item of a list reads as no item, as it
// did when the schema's lists held structs (yaml.v3 drops such an item):
// the scenario equals the one without the nulls, and nothing panics.
func TestNullItemsAreDropped(t *testing.T) {
	want, err := Parse([]byte(baseYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	nulls := baseYAML
	for _, r := range []struct{ old, new string }{
		{"gpus:\n", "gpus:\n  - ~\n"},
		{"      - uuid: MIG-1c2d0000-0000-4000-8000-000000000001", "      - ~\n      - uuid: MIG-1c2d0000-0000-4000-8000-000000000001"},
		{"pods:\n", "pods:\n  - null\n"},
		{"    containers:\n      - name: server\n", "    containers:\n      - ~\n      - name: server\n"},
		{"        processes:\n          - pid: 10001\n", "        processes:\n          - ~\n          - pid: 10001\n"},
		{"hostProcesses:\n", "hostProcesses:\n  - ~\n"},
		{"  name: sim-node-a\n", "  name: sim-node-a\n  resourceSlices: [~]\n"},
		{"    containers:\n", "    initContainers: [~]\n    containers:\n"},
	} {
		if !strings.Contains(nulls, r.old) {
			t.Fatalf("baseYAML lacks %q", r.old)
		}
		nulls = strings.Replace(nulls, r.old, r.new, 1)
	}
	got, err := Parse([]byte(nulls), "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with null items:\n got %+v\nwant %+v", got, want)
	}
}

// TestFileWritesWhatWasSet: a File built in Go is written with only the
// fields that were set, made values as their strings and integers are,
// and reads back through Parse.
func TestFileWritesWhatWasSet(t *testing.T) {
	half := 0.5
	f := File{
		APIVersion: APIVersion, Kind: KindScenario, Name: "made",
		Start: TextValue("2026-11-01T00:00:00Z"), Duration: TextValue("2m"),
		PollInterval: TextValue("1s"), LedgerInterval: TextValue("60s"), DriverSamplePeriod: TextValue("1s"),
		Detection: FileDetection{IdleWindow: TextValue("1m"), IdleThreshold: &half, NoisyWindow: TextValue("1m")},
		Node:      FileNode{Name: "n", Labels: map[string]string{"a": "1"}},
		GPUs:      []*FileGPU{{Index: IntValue(0), UUID: "GPU-6f1f0f5e-0000-4000-8000-000000000000", Model: "A100-SXM4-80GB", Mode: "exclusive"}},
		Pods: []*FilePod{{UID: "u", Namespace: "ns", Name: "p", Containers: []*FileContainer{{Name: "c", FileContainerSpec: FileContainerSpec{
			Devices:   []FileDevice{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-6f1f0f5e-0000-4000-8000-000000000000"}}},
			Processes: []*FileProcess{{PID: IntValue(7), Device: "GPU-6f1f0f5e-0000-4000-8000-000000000000", MemoryMiB: IntValue(100), Busy: []FileSegment{{From: TextValue("0s"), To: TextValue("1m"), Fraction: &half}}}},
		}}}}},
	}
	out, err := yaml.Marshal(&f)
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: gpuledger/v1
kind: Scenario
name: made
start: "2026-11-01T00:00:00Z"
duration: 2m
pollInterval: 1s
ledgerInterval: 60s
driverSamplePeriod: 1s
detection:
    idleWindow: 1m
    idleThreshold: 0.5
    noisyWindow: 1m
node:
    name: "n"
    labels:
        a: "1"
namespaces: []
gpus:
    - index: 0
      uuid: GPU-6f1f0f5e-0000-4000-8000-000000000000
      model: A100-SXM4-80GB
      mode: exclusive
pods:
    - uid: u
      namespace: ns
      name: p
      containers:
        - name: c
          devices:
            - resource: nvidia.com/gpu
              ids: [GPU-6f1f0f5e-0000-4000-8000-000000000000]
          processes:
            - pid: 7
              device: GPU-6f1f0f5e-0000-4000-8000-000000000000
              memoryMiB: 100
              busy: [{from: 0s, to: 1m, fraction: 0.5}]
`
	if string(out) != want {
		t.Errorf("written:\n%s\nwant:\n%s", out, want)
	}
	sc, err := Parse(out, "")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Duration.String() != "2m0s" || len(sc.Pods) != 1 || sc.Pods[0].Containers[0].Processes[0].PID != 7 || sc.GPUs[0].IdleWatts != DefaultIdleWatts {
		t.Errorf("read back: %+v", sc)
	}
}
