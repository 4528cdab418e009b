package report

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestFindingsGroupedAndClipped: episodes are grouped per container and
// kind, durations count only the part inside the period, and a noisy pod
// lists the pods that named it when starved.
func TestFindingsGroupedAndClipped(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	fs := []attribution.Finding{
		// Starts 2 h before the period: 1 h of it counts.
		{Start: from.Add(-2 * time.Hour), End: from.Add(time.Hour), Kind: attribution.FindingIdleAllocation, Namespace: "nb", Pod: "jl", Container: "c", Team: "r", GPUUUID: "G1"},
		{Start: from.Add(5 * time.Hour), End: from.Add(7 * time.Hour), Kind: attribution.FindingIdleAllocation, Namespace: "nb", Pod: "jl", Container: "c", Team: "r", GPUUUID: "G2"},
		// Entirely after the period: not read.
		{Start: to.Add(time.Hour), End: to.Add(2 * time.Hour), Kind: attribution.FindingIdleAllocation, Namespace: "nb", Pod: "late", Container: "c"},
		{Start: from.Add(time.Hour), End: from.Add(90 * time.Minute), Kind: attribution.FindingNoisyNeighbour, Namespace: "b", Pod: "hog", Container: "c", Team: "data"},
		{Start: from.Add(time.Hour), End: from.Add(90 * time.Minute), Kind: attribution.FindingStarved, Namespace: "f", Pod: "v1", Container: "c", NoisyPod: "b/hog"},
		{Start: from.Add(time.Hour), End: from.Add(90 * time.Minute), Kind: attribution.FindingStarved, Namespace: "g", Pod: "v2", Container: "c", NoisyPod: "b/hog"},
	}
	r := mustBuild(t, &memSource{findings: fs}, bookFor(t, "USD", "UTC", "allocation", "platform", nil, "1"), from, to)
	got := map[string]FindingSummary{}
	for _, f := range r.Findings {
		got[f.Kind+" "+f.PodName()] = f
	}
	if len(got) != 4 {
		t.Fatalf("findings %+v", r.Findings)
	}
	idle := got["idle_allocation nb/jl"]
	if idle.Episodes != 2 || idle.Duration != 3*time.Hour || len(idle.GPUs) != 2 || !idle.First.Equal(from.Add(-2*time.Hour)) {
		t.Errorf("idle allocation %+v: want 2 episodes, 3h inside the period, 2 GPUs", idle)
	}
	hog := got["noisy_neighbour b/hog"]
	if len(hog.Related) != 2 || hog.Related[0] != "f/v1" || hog.Related[1] != "g/v2" {
		t.Errorf("noisy pod's victims %v, want [f/v1 g/v2]", hog.Related)
	}
	if v := got["starved f/v1"]; len(v.Related) != 1 || v.Related[0] != "b/hog" {
		t.Errorf("starved pod names %v, want [b/hog]", v.Related)
	}
}
