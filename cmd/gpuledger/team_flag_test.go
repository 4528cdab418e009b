package main

import "testing"

// TestCollectTeamFromPodLabelFlag: a pod's team label counts where the
// namespace has none unless the operator turns it off, by flag or
// environment.
func TestCollectTeamFromPodLabelFlag(t *testing.T) {
	t.Setenv("GPULEDGER_TEAM_FROM_POD_LABEL", "")
	f, err := parseCollectFlags([]string{"--node", "n"})
	if err != nil || !f.teamFromPodLabel {
		t.Fatalf("default: %v, %v; want on", f.teamFromPodLabel, err)
	}
	f, err = parseCollectFlags([]string{"--node", "n", "--team-from-pod-label=false"})
	if err != nil || f.teamFromPodLabel {
		t.Errorf("--team-from-pod-label=false: %v, %v; want off", f.teamFromPodLabel, err)
	}
	t.Setenv("GPULEDGER_TEAM_FROM_POD_LABEL", "false")
	f, err = parseCollectFlags([]string{"--node", "n"})
	if err != nil || f.teamFromPodLabel {
		t.Errorf("GPULEDGER_TEAM_FROM_POD_LABEL=false: %v, %v; want off", f.teamFromPodLabel, err)
	}
}
