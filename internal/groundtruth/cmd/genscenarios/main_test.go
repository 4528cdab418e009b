package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/groundtruth"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

var checkedIn = filepath.Join("..", "..", "..", "..", "testdata", "scenarios")

// TestCorpusIsUpToDate regenerates the corpus and compares it with the
// checked-in files byte for byte; it fails when the generator and the
// files drift apart (or the generator stops being deterministic).
func TestCorpusIsUpToDate(t *testing.T) {
	out := t.TempDir()
	if err := writeCorpus(out); err != nil {
		t.Fatal(err)
	}
	for _, s := range stories {
		for _, name := range []string{"scenario.yaml", groundtruth.FlagsFile, "truth.json"} {
			got, errGot := os.ReadFile(filepath.Join(out, s.name, name))
			want, errWant := os.ReadFile(filepath.Join(checkedIn, s.name, name))
			if os.IsNotExist(errGot) && os.IsNotExist(errWant) {
				continue
			}
			if errGot != nil || errWant != nil {
				t.Errorf("%s/%s: generated %v, checked in %v", s.name, name, errGot, errWant)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%s differs from the generator's output; run go run ./internal/groundtruth/cmd/genscenarios", s.name, name)
			}
		}
	}
}

func TestCorpusScenariosAreSmall(t *testing.T) {
	for _, s := range stories {
		sc, err := scenario.Load(filepath.Join(checkedIn, s.name, "scenario.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if sc.Duration > 15*time.Minute {
			t.Errorf("%s: %v simulated, want at most 15m", s.name, sc.Duration)
		}
		if sc.Detection.IdleWindow != 5*time.Minute {
			t.Errorf("%s: idleWindow %v, want 5m", s.name, sc.Detection.IdleWindow)
		}
	}
}

func TestDenseShape(t *testing.T) {
	dir := t.TempDir()
	if err := writeScenario(dir, denseNode(600)); err != nil {
		t.Fatal(err) // Load inside enforces the physics, MIG instances included
	}
	sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	procs, migSlices, mpsSlices := 0, 0, 0
	for _, p := range sc.Pods {
		for _, c := range p.Containers {
			procs += len(c.Processes)
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					if strings.HasPrefix(id, "MIG-") {
						migSlices++
					} else {
						mpsSlices++
					}
				}
			}
		}
	}
	instances, modes := 0, map[string]int{}
	for _, g := range sc.GPUs {
		instances += len(g.MIGInstances)
		modes[g.Mode]++
	}
	if len(sc.GPUs) != 8 || modes["mig"] != 4 || modes["mps"] != 4 || instances != 28 {
		t.Errorf("GPUs %d (modes %v), MIG instances %d; want 8 (4 mig, 4 mps), 28", len(sc.GPUs), modes, instances)
	}
	if len(sc.Pods) != 400 || procs != 1000 {
		t.Errorf("%d pods, %d processes; want 400, 1000", len(sc.Pods), procs)
	}
	// Every slot is held by one pod or by two in turn.
	if migSlices < 56 || mpsSlices < 4*48 || migSlices+mpsSlices != 400 {
		t.Errorf("MIG slices %d, MPS slices %d; want at least 56 and 192, 400 in all", migSlices, mpsSlices)
	}
	if _, err := os.Stat(filepath.Join(dir, "truth.json")); err != nil {
		t.Error(err)
	}
}
