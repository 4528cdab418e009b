package main

import "testing"

// TestCollectTeamFromPodLabelFlag: on a real node a pod's team label
// counts only where the operator turns the fallback on, by flag or
// environment; by default the namespace alone decides.
func TestCollectTeamFromPodLabelFlag(t *testing.T) {
	t.Setenv("GPULEDGER_TEAM_FROM_POD_LABEL", "")
	f, err := parseCollectFlags([]string{"--node", "n"})
	if err != nil || f.teamFromPodLabel {
		t.Fatalf("default: %v, %v; want off", f.teamFromPodLabel, err)
	}
	f, err = parseCollectFlags([]string{"--node", "n", "--team-from-pod-label"})
	if err != nil || !f.teamFromPodLabel {
		t.Errorf("--team-from-pod-label: %v, %v; want on", f.teamFromPodLabel, err)
	}
	t.Setenv("GPULEDGER_TEAM_FROM_POD_LABEL", "true")
	f, err = parseCollectFlags([]string{"--node", "n"})
	if err != nil || !f.teamFromPodLabel {
		t.Errorf("GPULEDGER_TEAM_FROM_POD_LABEL=true: %v, %v; want on", f.teamFromPodLabel, err)
	}
	f, err = parseCollectFlags([]string{"--node", "n", "--team-from-pod-label=false"})
	if err != nil || f.teamFromPodLabel {
		t.Errorf("--team-from-pod-label=false over the environment: %v, %v; want off", f.teamFromPodLabel, err)
	}
}
