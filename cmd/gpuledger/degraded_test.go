package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/internal/groundtruth"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// With the kubelet's pod-resources socket missing, collection goes on: no
// container holds anything, so the whole capacity is unallocated, while the
// processes (resolved through procfs and metadata) are still charged for
// what they used, and both partitions stay exact.
func TestMissingKubeletSocketDegradesToUnallocated(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "..", "testdata", "scenarios", "timeslicing-hostile", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	truth, err := groundtruth.Compute(sc)
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	opt := simOptions{TeamLabel: "team", PodResourcesSocket: filepath.Join(t.TempDir(), "no-kubelet.sock")}
	if err := simulateScenario(context.Background(), sc, opt, []collector.Sink{&sink}, nil); err != nil {
		t.Fatalf("collection must go on without the kubelet: %v", err)
	}
	checkPartitions(t, sc, sink.rows)
	used := map[string]float64{}
	var unallocated, allocated float64
	for _, r := range sink.rows {
		switch r.Kind {
		case attribution.KindContainer:
			used[r.Namespace+"/"+r.Pod+"/"+r.Container] += r.UsedGPUSeconds
			allocated += r.AllocatedGPUSeconds
		case attribution.KindUnallocated:
			unallocated += r.AllocatedGPUSeconds
		}
	}
	if allocated != 0 {
		t.Errorf("containers were allocated %.3f GPU-s with no kubelet to say so", allocated)
	}
	if want := sc.Duration.Seconds() * float64(len(sc.GPUs)); unallocated < want-1e-6 {
		t.Errorf("unallocated %.3f, want the whole %.3f", unallocated, want)
	}
	for key, want := range truth.Containers {
		if d := used[key] - want.Used; d > 0.01*want.Used+0.5 || d < -(0.01*want.Used+0.5) {
			t.Errorf("%s used %.3f, truth %.3f", key, used[key], want.Used)
		}
	}
}
