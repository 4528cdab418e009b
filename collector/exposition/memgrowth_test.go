package exposition

import (
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestMemoryGrowthGauges: a memory_growth finding shows as a flag, its
// rate in bytes per second and its projection; a projection unknown (-1)
// is left out, and the series go when the finding does.
func TestMemoryGrowthGauges(t *testing.T) {
	e := New(node, Options{})
	s, end := window(0)
	mig := "MIG-00000000-0000-4000-8000-000000000001"
	leak := attribution.Finding{Kind: attribution.FindingMemoryGrowth, GPUUUID: gpuB, Namespace: "ml", Pod: "infer-1", Container: "server", Team: "ml-team",
		Memory: &attribution.MemoryGrowth{Scope: attribution.MemoryScopeGPU, Severity: attribution.SeverityWarning, Device: gpuB,
			RateMiBPerMin: 120, DeviceMiB: 81920, UsedMiB: 40000, ExhaustionSeconds: 3600}}
	unknown := attribution.Finding{Kind: attribution.FindingMemoryGrowth, GPUUUID: gpuC, Namespace: "ml", Pod: "tts", Container: "server", Team: "ml-team",
		Memory: &attribution.MemoryGrowth{Scope: attribution.MemoryScopeMIGInstance, Severity: attribution.SeverityInfo, Device: mig,
			RateMiBPerMin: 6, ExhaustionSeconds: -1}}
	e.Update(attribution.CycleResult{Start: s, End: end, Active: []attribution.Finding{leak, unknown}}, CycleMeta{})
	mfs := gather(t, e)
	l := map[string]string{"node": node, "gpu": gpuB, "namespace": "ml", "pod": "infer-1", "container": "server", "team": "ml-team",
		"device": gpuB, "scope": "gpu", "severity": "warning"}
	if got := mustValue(t, mfs, "gpuledger_memory_growth", l); got != 1 {
		t.Errorf("memory_growth = %v, want 1", got)
	}
	// 120 MiB/min = 2 MiB/s = 2,097,152 B/s.
	assertClose(t, "rate", mustValue(t, mfs, "gpuledger_memory_growth_bytes_per_second", l), 2*1048576)
	assertClose(t, "exhaustion", mustValue(t, mfs, "gpuledger_memory_exhaustion_seconds", l), 3600)
	info := map[string]string{"pod": "tts", "device": mig, "scope": "mig_instance", "severity": "info"}
	if got := mustValue(t, mfs, "gpuledger_memory_growth", info); got != 1 {
		t.Errorf("MIG memory_growth = %v, want 1", got)
	}
	assertClose(t, "MIG rate", mustValue(t, mfs, "gpuledger_memory_growth_bytes_per_second", info), 0.1*1048576)
	assertAbsent(t, mfs, "gpuledger_memory_exhaustion_seconds", map[string]string{"pod": "tts"})

	s, end = window(1)
	e.Update(attribution.CycleResult{Start: s, End: end}, CycleMeta{})
	mfs = gather(t, e)
	for _, name := range []string{"gpuledger_memory_growth", "gpuledger_memory_growth_bytes_per_second", "gpuledger_memory_exhaustion_seconds"} {
		assertAbsent(t, mfs, name, nil)
	}
}
