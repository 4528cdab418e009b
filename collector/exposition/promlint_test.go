package exposition

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestPromlintClean(t *testing.T) {
	e := runFixture(t, 3, Options{PodLabelAllowlist: []string{"app.kubernetes.io/name"}})
	mfs, err := e.Registry().Gather()
	if err != nil {
		t.Fatalf("cannot gather: %v", err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatalf("cannot lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// Every family of the contract must have been linted.
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, name := range []string{
		"gpuledger_container_gpu_allocated_seconds_total", "gpuledger_container_gpu_used_seconds_total",
		"gpuledger_container_gpu_allocation_ratio", "gpuledger_container_gpu_memory_bytes",
		"gpuledger_container_gpu_energy_joules_total", "gpuledger_gpu_capacity_seconds_total",
		"gpuledger_gpu_idle_seconds_total", "gpuledger_gpu_unallocated_seconds_total",
		"gpuledger_gpu_unattributed_seconds_total", "gpuledger_idle_allocation",
		"go_goroutines",
	} {
		if !seen[name] {
			t.Errorf("registry has no %s", name)
		}
	}
}
