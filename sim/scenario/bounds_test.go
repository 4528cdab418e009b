package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileCases are inputs a careless operator or a hostile scenario
// author writes: each was accepted before and made the simulator hang,
// grow without bound, write wrong dates or log megabytes. Each must now be
// refused with the field's path and the bound. FuzzParse seeds from them
// too.
var hostileCases = []struct {
	name  string
	edits []string
	want  []string
}{
	{"ledgerInterval 1ns", []string{"ledgerInterval: 60s", "ledgerInterval: 1ns"}, []string{"ledgerInterval: 1ns is outside [1s,24h0m0s]"}},
	{"ledgerInterval a year", []string{"ledgerInterval: 60s", "ledgerInterval: 8760h"}, []string{"ledgerInterval: 8760h0m0s is outside [1s,24h0m0s]"}},
	{"pollInterval 1ns", []string{"pollInterval: 1s", "pollInterval: 1ns"}, []string{"pollInterval: 1ns is outside [100ms,1h0m0s]"}},
	{"poll longer than the ledger interval", []string{"pollInterval: 1s", "pollInterval: 2m"}, []string{"pollInterval: 2m0s is longer than ledgerInterval 1m0s"}},
	{"driverSamplePeriod 1ns", []string{"driverSamplePeriod: 166ms", "driverSamplePeriod: 1ns"}, []string{"driverSamplePeriod: 1ns is outside [10ms,1h0m0s]"}},
	{"idleWindow 1ns", []string{"idleWindow: 10m", "idleWindow: 1ns"}, []string{"detection.idleWindow: 1ns is outside [1s,8784h0m0s]"}},
	{"noisyWindow 1ns", []string{"noisyWindow: 1m", "noisyWindow: 1ns"}, []string{"detection.noisyWindow: 1ns is outside"}},
	{"memoryWindow ten years", []string{"noisyWindow: 1m}", "noisyWindow: 1m, memoryWindow: 87600h}"}, []string{"detection.memoryWindow: 87600h0m0s is outside"}},
	{"start in 9999", []string{"start: 2026-11-01T00:00:00Z", "start: 9999-12-31T23:55:00Z"},
		[]string{"start: 9999-12-31T23:55:00Z is outside [1970-01-01T00:00:00Z,2200-01-01T00:00:00Z)"}},
	{"start before 1970", []string{"start: 2026-11-01T00:00:00Z", "start: 1969-12-31T23:59:00Z"}, []string{"start: 1969-12-31T23:59:00Z is outside"}},
	{"start year 1", []string{"start: 2026-11-01T00:00:00Z", "start: 0001-01-01T00:00:00Z"}, []string{"start: 0001-01-01T00:00:00Z is outside"}},
	{"start in 2200", []string{"start: 2026-11-01T00:00:00Z", "start: 2200-01-01T00:00:00Z"}, []string{"start: 2200-01-01T00:00:00Z is outside"}},
	{"duration over a leap year", []string{"duration: 10m", "duration: 8785h"}, []string{"duration: 8785h0m0s is longer than 8784h0m0s"}},
	{"duration scalar a kilobyte long", []string{"duration: 10m", "duration: " + strings.Repeat("9", 1024)},
		[]string{`duration: "` + strings.Repeat("9", 32) + `..." is 1024 bytes long`}},
	{"scenario name", []string{"name: base", "name: " + strings.Repeat("n", 254)}, []string{`name: "` + strings.Repeat("n", 32) + `..." is 254 bytes long, more than the 253`}},
	{"node name", []string{"name: sim-node-a", "name: " + strings.Repeat("n", 254)}, []string{"node.name:", "254 bytes long, more than the 253"}},
	{"node label value", []string{`nvidia.com/gpu.replicas: "2"`, `nvidia.com/gpu.replicas: "` + strings.Repeat("2", 64) + `"`},
		[]string{"node.labels.nvidia.com/gpu.replicas:", "64 bytes long, more than the 63 of a label value"}},
	{"namespace name", []string{"- name: team-c", "- name: " + strings.Repeat("c", 64)}, []string{"namespaces[1].name:", "64 bytes long, more than the 63 of a namespace name"}},
	{"namespace label value", []string{"labels: {team: search}", "labels: {team: " + strings.Repeat("s", 64) + "}"}, []string{"namespaces[0].labels.team:", "64 bytes long"}},
	{"namespace label key", []string{"labels: {team: search}", "labels: {" + strings.Repeat("k", 318) + ": search}"}, []string{"namespaces[0].labels:", "318 bytes long, more than the 317 of a label key"}},
	{"pod name", []string{"name: infer-1", "name: " + strings.Repeat("p", 254)}, []string{"pods[1].name:", "254 bytes long"}},
	{"pod namespace", []string{"namespace: team-b", "namespace: " + strings.Repeat("b", 64)}, []string{"pods[1].namespace:", "64 bytes long"}},
	{"pod uid", []string{"uid: 0b5c6d2e-0000-4000-8000-000000000002", "uid: " + strings.Repeat("u", 254)}, []string{"pods[1].uid:", "254 bytes long"}},
	{"pod annotations over 256 KiB", []string{"    name: infer-0\n", "    name: infer-0\n    annotations: {a: " + strings.Repeat("v", 256<<10) + "}\n"},
		[]string{"pods[0].annotations: 262145 bytes of keys and values, more than Kubernetes's 262144"}},
	{"container name", []string{"- name: sidecar", "- name: " + strings.Repeat("s", 64)}, []string{"pods[1].containers[1].name:", "64 bytes long, more than the 63 of a container name"}},
	{"device id", []string{`ids: ["GPU-6f1f0f5e-0000-4000-8000-000000000000::0"]`, `ids: ["` + strings.Repeat("i", 254) + `"]`},
		[]string{"pods[0].containers[0].devices[0].ids[0]:", "254 bytes long"}},
	{"process name", []string{"memoryMiB: 300", "memoryMiB: 300\n    comm: " + strings.Repeat("c", 254)}, []string{"hostProcesses[0].comm:", "254 bytes long"}},
	{"gpu uuid a megabyte long", []string{"uuid: GPU-6f1f0f5e-0000-4000-8000-000000000001", "uuid: GPU-" + strings.Repeat("f", 1<<20)},
		[]string{`gpus[1].uuid: "GPU-` + strings.Repeat("f", 28) + `..." is not GPU-<8-4-4-4-12 hex>`}},
	{"65 GPUs", []string{"gpus:\n", "gpus:\n" + strings.Repeat("  - {uuid: GPU-6f1f0f5e-0000-4000-8000-000000000009, model: A100-SXM4-80GB, mode: exclusive}\n", 63)},
		[]string{"gpus: 65 GPUs, more than 64"}},
	{"10,001 pods", []string{"pods:\n", "pods:\n" + strings.Repeat("  - {uid: x, namespace: x, name: x}\n", 9999)}, []string{"pods: 10001 pods, more than 10000"}},
	{"65 containers", []string{"    containers:\n", "    containers:\n" + strings.Repeat("      - {name: x}\n", 64)}, []string{"pods[0].containers: 65 containers, more than 64"}},
	{"100,001 processes", []string{"hostProcesses:\n", "hostProcesses:\n" + strings.Repeat("  - {pid: 1}\n", 99997)},
		[]string{"processes: 100001 processes in pods and hostProcesses together, more than 100000"}},
}

// TestParseRejectsHostile: every hostile input is refused with its path
// and bound, and no message quotes more than a few dozen bytes of the
// input.
func TestParseRejectsHostile(t *testing.T) {
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(edit(t, tc.edits...)), t.TempDir())
			wantErr(t, err, tc.want...)
			if err != nil && len(err.Error()) > 2000 {
				t.Errorf("error of %d bytes: %.300s...", len(err.Error()), err)
			}
		})
	}
}

// TestBoundsAcceptTheirEdges: the bounds themselves are accepted.
func TestBoundsAcceptTheirEdges(t *testing.T) {
	y := edit(t, "start: 2026-11-01T00:00:00Z", "start: 1970-01-01T00:00:00Z",
		"duration: 10m", "duration: 8784h",
		"pollInterval: 1s", "pollInterval: 100ms",
		"ledgerInterval: 60s", "ledgerInterval: 100ms",
		"driverSamplePeriod: 166ms", "driverSamplePeriod: 10ms",
		"name: infer-1", "name: "+strings.Repeat("p", 253),
		"- name: sidecar", "- name: "+strings.Repeat("s", 63))
	// ledgerInterval 100ms is below its bound: only that is refused.
	_, err := Parse([]byte(y), "")
	wantErr(t, err, "ledgerInterval: 100ms is outside [1s,24h0m0s]")
	if strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("more than the ledger interval refused: %v", err)
	}
	y = strings.Replace(y, "ledgerInterval: 100ms", "ledgerInterval: 1s", 1)
	s, err := Parse([]byte(y), "")
	if err != nil {
		t.Fatalf("the bounds' edges refused: %v", err)
	}
	if got := s.End().UnixNano(); got != int64(8784)*3600e9 {
		t.Errorf("end %d ns after the epoch, want %d", got, int64(8784)*3600e9)
	}
}

// TestFileSizeBounds: Parse refuses more than MaxFileBytes, Load stops
// reading a larger file at the bound, and a busy trace larger than
// MaxTraceBytes is refused without being read.
func TestFileSizeBounds(t *testing.T) {
	big := baseYAML + "#" + strings.Repeat("x", MaxFileBytes) + "\n"
	if _, err := Parse([]byte(big), ""); err == nil || !strings.Contains(err.Error(), "larger than 16777216 (16 MiB)") {
		t.Errorf("Parse of %d bytes: %v", len(big), err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than 16777216 bytes (16 MiB)") || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of %d bytes: %v", len(big), err)
	}
	// A sparse trace file: the size alone refuses it.
	trace := filepath.Join(dir, "traces", "t.csv")
	if err := os.MkdirAll(filepath.Dir(trace), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(trace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(f, traceHeader); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxTraceBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	y := edit(t, "busy: [{from: 30s, to: 5m, fraction: 1}]", "busyTrace: traces/t.csv")
	_, err = Parse([]byte(y), dir)
	wantErr(t, err, "pods[1].containers[1].processes[0].busyTrace", "67108865 bytes, larger than 67108864 (64 MiB)")
}

// TestOneProblemPerBadInterval: a ledger interval below its bound is one
// problem, not also a poll "longer" than it.
func TestOneProblemPerBadInterval(t *testing.T) {
	_, err := Parse([]byte(edit(t, "ledgerInterval: 60s", "ledgerInterval: 1ns")), "")
	wantErr(t, err, "ledgerInterval: 1ns is outside")
	if strings.Contains(err.Error(), "longer than ledgerInterval") {
		t.Errorf("the poll compared with an interval already refused: %v", err)
	}
}
