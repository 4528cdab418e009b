package scenario

import (
	"strings"
	"testing"
)

// baseYAML is a small valid scenario the table tests break one rule at a
// time. GPU 0 is time-sliced by two pods and a host process whose busy
// fractions add up to exactly 1 over [1m,2m); GPU 1 is in MIG mode.
const baseYAML = `apiVersion: gpuledger/v1
kind: Scenario
name: base
start: 2026-11-01T00:00:00Z
duration: 10m
pollInterval: 1s
ledgerInterval: 60s
driverSamplePeriod: 166ms
detection: {idleWindow: 10m, idleThreshold: 0.05, noisyWindow: 1m}
node:
  name: sim-node-a
  labels: {nvidia.com/gpu.replicas: "2"}
namespaces:
  - name: team-a
    labels: {team: search}
  - name: team-c
gpus:
  - index: 0
    uuid: GPU-6f1f0f5e-0000-4000-8000-000000000000
    model: A100-SXM4-80GB
    mode: timeslicing
    power: {idleWatts: 60, maxWatts: 400}
  - index: 1
    uuid: GPU-6f1f0f5e-0000-4000-8000-000000000001
    model: A100-SXM4-80GB
    mode: mig
    migInstances:
      - uuid: MIG-1c2d0000-0000-4000-8000-000000000001
        profile: 3g.40gb
      - uuid: MIG-1c2d0000-0000-4000-8000-000000000002
        profile: 1g.10gb
pods:
  - uid: 0b5c6d2e-0000-4000-8000-000000000001
    namespace: team-a
    name: infer-0
    start: 0s
    end: 10m
    containers:
      - name: server
        devices:
          - resource: nvidia.com/gpu.shared
            ids: ["GPU-6f1f0f5e-0000-4000-8000-000000000000::0"]
        processes:
          - pid: 10001
            device: GPU-6f1f0f5e-0000-4000-8000-000000000000
            memoryMiB: 2048
            busy:
              - {from: 0s, to: 2m, fraction: 0.6}
              - {from: 2m, to: 4m, fraction: 0.2}
  - uid: 0b5c6d2e-0000-4000-8000-000000000002
    namespace: team-b
    name: infer-1
    start: 30s
    end: 5m
    containers:
      - name: server
        devices:
          - resource: nvidia.com/gpu.shared
            ids: ["GPU-6f1f0f5e-0000-4000-8000-000000000000::1"]
        processes:
          - pid: 10002
            device: GPU-6f1f0f5e-0000-4000-8000-000000000000
            memoryMiB: 1024
            start: 40s
            busy:
              - {from: 1m, to: 2m, fraction: 0.4}
      - name: sidecar
        devices:
          - resource: nvidia.com/mig-3g.40gb
            ids: ["MIG-1c2d0000-0000-4000-8000-000000000001"]
        processes:
          - pid: 10003
            device: MIG-1c2d0000-0000-4000-8000-000000000001
            busy: [{from: 30s, to: 5m, fraction: 1}]
hostProcesses:
  - pid: 500
    device: GPU-6f1f0f5e-0000-4000-8000-000000000000
    memoryMiB: 300
    busy: [{from: 0s, to: 10m, fraction: 0}]
`

// edit applies literal replacements to baseYAML, failing the test if one
// does not apply, so that a stale case cannot pass by testing nothing.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	return editText(t, baseYAML, pairs...)
}

// editText applies literal replacements to any scenario text, like edit.
func editText(t testing.TB, s string, pairs ...string) string {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatalf("edit needs old/new pairs, got %d strings", len(pairs))
	}
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("edit: %q is not in the scenario", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}
