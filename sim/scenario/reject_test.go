package scenario

import "testing"

// TestParseRejects breaks one rule per case and checks that the error names
// the field path and the offending value.
func TestParseRejects(t *testing.T) {
	const (
		gpu0 = "GPU-6f1f0f5e-0000-4000-8000-000000000000"
		gpu1 = "GPU-6f1f0f5e-0000-4000-8000-000000000001"
		mig1 = "MIG-1c2d0000-0000-4000-8000-000000000001"
		mig2 = "MIG-1c2d0000-0000-4000-8000-000000000002"
		p0   = "pods[0].containers[0].processes[0]"
		p1   = "pods[1].containers[0].processes[0]"
	)
	cases := []struct {
		name  string
		edits []string
		want  []string
	}{
		{"apiVersion", []string{"gpuledger/v1", "gpuledger/v2"}, []string{"apiVersion", `"gpuledger/v2"`}},
		{"kind", []string{"kind: Scenario", "kind: Scenaro"}, []string{"kind", `"Scenaro"`}},
		{"start not RFC 3339", []string{"start: 2026-11-01T00:00:00Z", "start: yesterday"}, []string{"start", `"yesterday"`, "RFC 3339"}},
		{"start missing", []string{"start: 2026-11-01T00:00:00Z\n", ""}, []string{"start", "is required"}},
		{"duration missing", []string{"duration: 10m\n", ""}, []string{"duration", "is required"}},
		{"duration zero", []string{"duration: 10m", "duration: 0s"}, []string{"duration", "0s must be greater than zero"}},
		{"duration negative", []string{"duration: 10m", "duration: -10m"}, []string{"duration", `"-10m" is negative`}},
		{"pollInterval zero", []string{"pollInterval: 1s", "pollInterval: 0"}, []string{"pollInterval", "0s must be greater than zero"}},
		{"ledgerInterval garbage", []string{"ledgerInterval: 60s", "ledgerInterval: abc"}, []string{"ledgerInterval", `"abc"`}},
		{"driverSamplePeriod zero", []string{"driverSamplePeriod: 166ms", "driverSamplePeriod: 0ms"}, []string{"driverSamplePeriod", "0s must be greater than zero"}},
		{"idleWindow zero", []string{"idleWindow: 10m", "idleWindow: 0"}, []string{"detection.idleWindow", "0s"}},
		{"idleThreshold", []string{"idleThreshold: 0.05", "idleThreshold: 1.5"}, []string{"detection.idleThreshold", "1.5 is outside [0,1]"}},
		{"node name", []string{"name: sim-node-a", "name: ''"}, []string{"node.name", "is required"}},
		{"namespace name", []string{"- name: team-c", "- name: ''"}, []string{"namespaces[1].name", "is required"}},
		{"namespace duplicate", []string{"- name: team-c", "- name: team-a"}, []string{"namespaces[1].name", `"team-a" is already declared by namespaces[0]`}},
		{"gpu uuid", []string{"uuid: " + gpu1, "uuid: GPU-xyz"}, []string{"gpus[1].uuid", `"GPU-xyz"`}},
		{"gpu uuid duplicate", []string{"uuid: " + gpu1, "uuid: " + gpu0}, []string{"gpus[1].uuid", `"` + gpu0 + `" is already used by gpus[0]`}},
		{"gpu index duplicate", []string{"index: 1", "index: 0"}, []string{"gpus[1].index", "0 is already used by gpus[0]"}},
		{"gpu index negative", []string{"index: 1", "index: -1"}, []string{"gpus[1].index", "-1 is outside [0,2147483647]"}},
		{"model", []string{"model: A100-SXM4-80GB\n    mode: timeslicing", "model: V100\n    mode: timeslicing"}, []string{"gpus[0].model", `"V100"`}},
		{"mode", []string{"mode: timeslicing", "mode: foo"}, []string{"gpus[0].mode", `"foo" is not one of exclusive|timeslicing|mps|mig|hami`}},
		{"processView", []string{"mode: timeslicing", "mode: mps\n    mps: {processView: both}"}, []string{"gpus[0].mps.processView", `"both"`}},
		{"power idle above max", []string{"idleWatts: 60", "idleWatts: 500"}, []string{"gpus[0].power.idleWatts", "500 is above maxWatts 400"}},
		{"power negative", []string{"maxWatts: 400", "maxWatts: -1"}, []string{"gpus[0].power.maxWatts", "-1"}},
		{"migInstances without mig", []string{"mode: mig", "mode: exclusive"}, []string{"gpus[1].migInstances", `"exclusive"`}},
		{"mig uuid", []string{"uuid: " + mig2, "uuid: MIG-bad"}, []string{"gpus[1].migInstances[1].uuid", `"MIG-bad"`}},
		{"mig uuid duplicate", []string{"uuid: " + mig2, "uuid: " + mig1}, []string{"gpus[1].migInstances[1].uuid", `"` + mig1 + `" is already used by gpus[1].migInstances[0]`}},
		{"mig profile of another model", []string{"profile: 1g.10gb", "profile: 1g.5gb"}, []string{"gpus[1].migInstances[1].profile", `"1g.5gb" is not a MIG profile of A100-SXM4-80GB`}},
		{"mig slices", []string{"profile: 3g.40gb", "profile: 7g.80gb"}, []string{"gpus[1].migInstances", "8 compute slices"}},
		// A compute instance takes its GPU instance's slices: 1c.7g.80gb
		// beside a 1g.10gb fills 8.
		{"mig compute instance slices", []string{"profile: 3g.40gb", "profile: 1c.7g.80gb"}, []string{"gpus[1].migInstances", "8 compute slices"}},
		{"mig compute instance of no GPU instance", []string{"profile: 1g.10gb", "profile: 1c.2g.40gb"}, []string{"gpus[1].migInstances[1].profile", `"1c.2g.40gb" is not a MIG profile of A100-SXM4-80GB`}},
		{"mig compute instance above its GPU instance", []string{"profile: 1g.10gb", "profile: 4c.3g.40gb"}, []string{"gpus[1].migInstances[1].profile", `"4c.3g.40gb" is not a MIG profile`}},
		{"pod uid", []string{"uid: 0b5c6d2e-0000-4000-8000-000000000002", "uid: ''"}, []string{"pods[1].uid", "is required"}},
		{"pod uid duplicate", []string{"uid: 0b5c6d2e-0000-4000-8000-000000000002", "uid: 0b5c6d2e-0000-4000-8000-000000000001"}, []string{"pods[1].uid", `"0b5c6d2e-0000-4000-8000-000000000001" is already used by pods[0]`}},
		{"pod namespace", []string{"namespace: team-b", "namespace: ''"}, []string{"pods[1].namespace", "is required"}},
		{"pod name", []string{"name: infer-1", "name: ''"}, []string{"pods[1].name", "is required"}},
		{"pod start after end", []string{"start: 30s\n    end: 5m", "start: 6m\n    end: 5m"}, []string{"pods[1].start", "6m0s is not before the pod's end 5m0s"}},
		{"pod end after duration", []string{"end: 10m", "end: 11m"}, []string{"pods[0].end", "11m0s is after the scenario's duration 10m0s"}},
		{"pod start garbage", []string{"start: 30s", "start: soon"}, []string{"pods[1].start", `"soon"`}},
		{"container name", []string{"- name: sidecar", "- name: ''"}, []string{"pods[1].containers[1].name", "is required"}},
		{"container name duplicate", []string{"- name: sidecar", "- name: server"}, []string{"pods[1].containers[1].name", `"server" is already used by containers[0]`}},
		{"container id", []string{"- name: sidecar", "- name: sidecar\n        id: ABC"}, []string{"pods[1].containers[1].id", `"ABC" is not 64 lowercase hex`}},
		{"container id duplicate",
			[]string{"- name: sidecar", "- name: sidecar\n        id: 935b3562f6f61f4178d3582841c22fd2705a303cb15dcd1752d7f7b2e1fd2872"},
			[]string{"pods[1].containers[1].id", `"935b3562f6f61f4178d3582841c22fd2705a303cb15dcd1752d7f7b2e1fd2872" is already used by pods[0].containers[0]`}},
		{"device resource", []string{"resource: nvidia.com/mig-3g.40gb", "resource: ''"}, []string{"pods[1].containers[1].devices[0].resource", "is required"}},
		{"device ids", []string{`ids: ["` + mig1 + `"]`, "ids: []"}, []string{"pods[1].containers[1].devices[0].ids", "at least one"}},
		{"device id empty", []string{`ids: ["` + mig1 + `"]`, `ids: [""]`}, []string{"pods[1].containers[1].devices[0].ids[0]", `""`}},
		{"pid zero", []string{"pid: 10001", "pid: 0"}, []string{p0 + ".pid", "0 is outside [1,4294967295]"}},
		{"pid too large", []string{"pid: 10001", "pid: 4294967296"}, []string{p0 + ".pid", "4294967296"}},
		{"memory negative", []string{"memoryMiB: 2048", "memoryMiB: -5"}, []string{p0 + ".memoryMiB", "-5 is outside [0,"}},
		{"device missing", []string{"device: " + gpu0 + "\n            memoryMiB: 2048", "memoryMiB: 2048"}, []string{p0 + ".device", "is required"}},
		{"device unknown", []string{"device: " + gpu0, "device: GPU-6f1f0f5e-0000-4000-8000-000000000999"}, []string{p0 + ".device", `"GPU-6f1f0f5e-0000-4000-8000-000000000999" is not a GPU or MIG instance`}},
		{"device whole mig GPU", []string{"device: " + mig1, "device: " + gpu1}, []string{"pods[1].containers[1].processes[0].device", `"` + gpu1 + `" is a GPU in mig mode`}},
		{"process before pod", []string{"start: 40s", "start: 20s"}, []string{p1 + ".start", "20s is before the pod's start 30s"}},
		{"process after pod", []string{"start: 40s", "start: 40s\n            end: 6m"}, []string{p1 + ".end", "6m0s is after the pod's end 5m0s"}},
		{"process empty lifetime", []string{"start: 40s", "start: 40s\n            end: 40s"}, []string{p1 + ".start", "40s is not before the process's end 40s"}},
		{"host process after scenario", []string{"memoryMiB: 300", "memoryMiB: 300\n    end: 11m"}, []string{"hostProcesses[0].end", "11m0s is after the scenario's end 10m0s"}},
		{"busy and busyTrace", []string{"start: 40s", "start: 40s\n            busyTrace: traces/x.csv"}, []string{p1 + ".busyTrace", `"traces/x.csv" given together with busy`}},
		{"busyTrace missing", []string{"busy: [{from: 30s, to: 5m, fraction: 1}]", "busyTrace: traces/none.csv"}, []string{"pods[1].containers[1].processes[0].busyTrace", `"traces/none.csv"`, "no such file"}},
		{"fraction above 1", []string{"fraction: 0.2", "fraction: 1.3"}, []string{p0 + ".busy[1].fraction", "1.3 is outside [0,1]"}},
		{"fraction negative", []string{"fraction: 0.2", "fraction: -0.1"}, []string{p0 + ".busy[1].fraction", "-0.1 is outside [0,1]"}},
		{"fraction NaN", []string{"fraction: 0.2", "fraction: .nan"}, []string{p0 + ".busy[1].fraction", "NaN is outside [0,1]"}},
		{"fraction missing", []string{"fraction: 0.2", "fractoin: 0.2"}, []string{p0 + ".busy[1].fractoin", `unknown field "fractoin"`}},
		{"segment empty", []string{"{from: 2m, to: 4m", "{from: 4m, to: 2m"}, []string{p0 + ".busy[1].from", "4m0s is not before to 2m0s"}},
		{"segment from missing", []string{"{from: 2m, to: 4m", "{to: 4m"}, []string{p0 + ".busy[1].from", "is required"}},
		{"segment garbage", []string{"{from: 2m, to: 4m", "{from: 2m, to: later"}, []string{p0 + ".busy[1].to", `"later"`}},
		{"segments overlap", []string{"{from: 2m, to: 4m", "{from: 1m, to: 4m"}, []string{p0 + ".busy[1]", "[1m0s,4m0s) overlaps " + p0 + ".busy[0] [0s,2m0s)"}},
		{"segment outside lifetime", []string{"{from: 1m, to: 2m, fraction: 0.4}", "{from: 20s, to: 2m, fraction: 0.4}"}, []string{p1 + ".busy[0]", "[20s,2m0s) lies outside the process lifetime [40s,5m0s]"}},
		{"pid alive twice on a device", []string{"pid: 10002", "pid: 10001"}, []string{p1 + ".pid", "10001 on gpus[0] is alive during [40s,5m0s], overlapping " + p0}},
		{"physics time-slicing", []string{"fraction: 0}]", "fraction: 0.01}]"}, []string{"gpus[0]", gpu0, "sum to 1.01 at 1m0s", p0 + " pid 10001: 0.6", p1 + " pid 10002: 0.4", "hostProcesses[0] pid 500: 0.01"}},
		{"physics hami", []string{"mode: timeslicing", "mode: hami", "fraction: 0}]", "fraction: 0.5}]"}, []string{"gpus[0]", "sum to 1.1 at 0s", "hami"}},
		{"physics mig instance",
			[]string{"    busy: [{from: 0s, to: 10m, fraction: 0}]\n", "    busy: [{from: 0s, to: 10m, fraction: 0}]\n  - pid: 501\n    device: " + mig1 + "\n    busy: [{from: 4m, to: 6m, fraction: 0.25}]\n"},
			[]string{"gpus[1].migInstances[0]", mig1, "sum to 1.25 at 4m0s", "hostProcesses[1] pid 501: 0.25"}},
		{"unknown field", []string{"memoryMiB: 2048", "memoryMib: 2048"}, []string{p0 + ".memoryMib", `unknown field "memoryMib"`}},
		{"unknown top-level field", []string{"pollInterval: 1s", "pollIntervall: 1s"}, []string{"pollIntervall", "unknown field"}},
		{"pid missing", []string{"- pid: 10001\n            device:", "- device:"}, []string{p0 + ".pid", "is required"}},
		{"pid not an integer", []string{"pid: 10001", "pid: abc"}, []string{p0 + ".pid", `"abc" is not an integer`}},
		{"pid fractional", []string{"pid: 10001", "pid: 10001.5"}, []string{p0 + ".pid", `"10001.5" is not an integer`}},
		{"gpu index not an integer", []string{"index: 1", "index: one"}, []string{"gpus[1].index", `"one" is not an integer`}},
		{"wrong type", []string{"fraction: 0.2", "fraction: lots"}, []string{p0 + ".busy[1].fraction", `"lots"`, "a number"}},
		{"wrong type long value", []string{"fraction: 0.2", "fraction: abcdefghijklmnop"}, []string{p0 + ".busy[1].fraction", `"abcdefg..."`, "a number"}},
		{"wrong type for a string", []string{"name: infer-1", "name: {first: infer}"}, []string{"pods[1].name", "map", "a string"}},
		{"wrong kind", []string{"labels: {team: search}", "labels: [search]"}, []string{"namespaces[0].labels", "seq", "a mapping of strings"}},
		{"duplicate key", []string{"kind: Scenario", "kind: Scenario\nkind: Scenario"}, []string{"kind", `"kind" given twice`}},
		{"duration not scalar", []string{"duration: 10m", "duration: {minutes: 10}"}, []string{"duration", "expected a scalar, got a mapping"}},
		{"second document", []string{"name: base", "name: base\n---\nname: other"}, []string{"one YAML document"}},
		{"bad yaml", []string{"name: base", "name: [base"}, []string{"cannot parse YAML"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(edit(t, tc.edits...)), t.TempDir())
			wantErr(t, err, tc.want...)
		})
	}
}

func TestParseRejectsEmpty(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n"} {
		_, err := Parse([]byte(in), "")
		wantErr(t, err, "empty scenario")
	}
}
