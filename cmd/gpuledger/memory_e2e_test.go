package main

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/internal/groundtruth"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestMemoryMatchesGroundTruth runs the collector on the memory stories
// (memory changing over time, read through NVML's per-process memory) and
// on two scenarios of constant memory, and compares every container's
// memory_mib_seconds with the independent truth, within what sampling once
// per poll allows (groundtruth.MemoryTruth.Tol). It also checks what the
// memory_growth findings say: severity, scope and figures.
func TestMemoryMatchesGroundTruth(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "memory-*"))
	if len(dirs) < 5 {
		t.Fatalf("want the five memory stories, found %v", dirs)
	}
	dirs = append(dirs, filepath.Join("..", "..", "testdata", "scenarios", "timeslicing-hostile"),
		filepath.Join("..", "..", "testdata", "scenarios", "mig-timeslicing"))
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var sink memSink
			if err := simulateScenario(context.Background(), sc, simOptions{TeamLabel: "team"}, []collector.Sink{&sink}, nil); err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, r := range sink.rows {
				if r.Kind == attribution.KindContainer {
					got[r.Namespace+"/"+r.Pod+"/"+r.Container] += r.MemoryMiBSeconds
				}
			}
			for key, want := range groundtruth.Memory(sc) {
				if d := math.Abs(got[key] - want.MiBSeconds); d > want.Tol {
					t.Errorf("%s: memory %.1f MiB-s, truth %.1f, off by %.1f > tolerance %.1f", key, got[key], want.MiBSeconds, d, want.Tol)
				}
			}
			checkMemoryFindings(t, filepath.Base(dir), sink.findings)
		})
	}
}

// checkMemoryFindings: the leak on a MIG instance is the lower severity
// and says only its own instance is at risk; leaks on shared GPUs warn
// every tenant. Rates are the stories' leaks (see genscenarios'
// stories_memory.go), measured within 15%.
func checkMemoryFindings(t *testing.T, story string, fs []attribution.Finding) {
	t.Helper()
	want := map[string]struct {
		pod, scope, severity, atRisk string
		rate                         float64 // MiB/min
	}{
		"memory-leak-timeslicing": {"chat-api", attribution.MemoryScopeGPU, attribution.SeverityWarning, "every_tenant_of_the_gpu", 200},
		"memory-leak-mps":         {"rag-worker", attribution.MemoryScopeGPU, attribution.SeverityWarning, "every_tenant_of_the_gpu", 384},
		"memory-leak-mig":         {"tts", attribution.MemoryScopeMIGInstance, attribution.SeverityInfo, "own_mig_instance_only", 192},
		"memory-leak-late-pod":    {"late-leaker", attribution.MemoryScopeGPU, attribution.SeverityWarning, "every_tenant_of_the_gpu", 200},
	}
	w, ok := want[story]
	for _, f := range fs {
		if f.Kind != attribution.FindingMemoryGrowth {
			continue
		}
		if !ok || f.Pod != w.pod {
			t.Errorf("unexpected memory finding %+v", f)
			continue
		}
		m := f.Memory
		if m == nil {
			t.Errorf("%s: finding without its figures: %+v", story, f)
			continue
		}
		if m.Scope != w.scope || m.Severity != w.severity || !strings.Contains(f.Detail, "at_risk="+w.atRisk) ||
			math.Abs(m.RateMiBPerMin-w.rate) > 0.15*w.rate || !(m.ExhaustionSeconds > 0) || !(m.DeviceMiB > m.UsedMiB) {
			t.Errorf("%s: finding %+v, want scope %s severity %s rate %v", story, f, w.scope, w.severity, w.rate)
		}
	}
}
