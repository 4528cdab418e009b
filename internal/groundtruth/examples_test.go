package groundtruth

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// examplesDir holds the reference scenarios with the truth.json their
// authors computed (testdata/examples/README.md): matching them validates
// this calculator against numbers it did not produce. GPULEDGER_EXAMPLES
// points the test at another such directory.
func examplesDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GPULEDGER_EXAMPLES")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata", "examples")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("no examples at %s: %v", dir, err)
	}
	return dir
}

func TestComputeMatchesContractExamples(t *testing.T) {
	dir := examplesDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			sc, err := scenario.Load(filepath.Join(dir, e.Name(), "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Compute(sc)
			if err != nil {
				t.Fatal(err)
			}
			want := readRawTruth(t, filepath.Join(dir, e.Name(), "truth.json"))
			compareToExample(t, got, want)
		})
	}
	if n == 0 {
		t.Fatalf("no examples under %s", dir)
	}
}

func readRawTruth(t *testing.T, path string) jsonTruth {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want jsonTruth
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return want
}

// near is 1e-6 relative, with an absolute floor for values near zero.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b))+1e-9
}

func compareToExample(t *testing.T, got *Truth, want jsonTruth) {
	t.Helper()
	if got.Scenario != want.Scenario || got.Duration != want.Duration || got.LedgerInterval != want.LedgerInterval {
		t.Errorf("header = %q %v %v, want %q %v %v", got.Scenario, got.Duration, got.LedgerInterval,
			want.Scenario, want.Duration, want.LedgerInterval)
	}
	if len(got.Containers) != len(want.Containers) {
		t.Errorf("%d containers, want %d", len(got.Containers), len(want.Containers))
	}
	for key, w := range want.Containers {
		g, ok := got.Containers[key]
		if !ok {
			t.Errorf("container %s missing", key)
			continue
		}
		if !near(g.Allocated, w.Allocated) || !near(g.Used, w.Used) {
			t.Errorf("%s: allocated/used = %v/%v, want %v/%v", key, g.Allocated, g.Used, w.Allocated, w.Used)
		}
		wantMethod := ""
		if w.Method != nil {
			wantMethod = *w.Method
		}
		if g.Method != wantMethod || g.SharingMode != w.SharingMode || g.Team != w.Team {
			t.Errorf("%s: method/mode/team = %q/%q/%q, want %q/%q/%q", key,
				g.Method, g.SharingMode, g.Team, wantMethod, w.SharingMode, w.Team)
		}
		// Examples without churn omit edge_tol; ours is then the floor.
		wantTol := edgeTolFloor
		if w.EdgeTol != nil {
			wantTol = *w.EdgeTol
		}
		if !near(g.EdgeTol, wantTol) {
			t.Errorf("%s: edge_tol = %v, want %v", key, g.EdgeTol, wantTol)
		}
	}
	compareGPUs(t, got, want)
	compareGroups(t, got.InstanceGroups, want.InstanceGroups)
}

func compareGPUs(t *testing.T, got *Truth, want jsonTruth) {
	t.Helper()
	if len(got.GPUs) != len(want.GPUs) {
		t.Errorf("%d GPUs, want %d", len(got.GPUs), len(want.GPUs))
	}
	for uuid, w := range want.GPUs {
		g, ok := got.GPUs[uuid]
		if !ok {
			t.Errorf("GPU %s missing", uuid)
			continue
		}
		if g.Model != w.Model {
			t.Errorf("GPU %s: model %q, want %q", uuid, g.Model, w.Model)
		}
		if !sameOptional(g.Unattributed, w.Unattributed) {
			t.Errorf("GPU %s: unattributed %v, want %v", uuid, deref(g.Unattributed), deref(w.Unattributed))
		}
		// The churn example leaves unallocated out where pods come and go;
		// where an example states it, it must match.
		if w.Unallocated != nil && !sameOptional(g.Unallocated, w.Unallocated) {
			t.Errorf("GPU %s: unallocated %v, want %v", uuid, deref(g.Unallocated), *w.Unallocated)
		}
		if w.Unallocated == nil && g.Unallocated != nil && !churned(want) {
			t.Errorf("GPU %s: unallocated %v, want none", uuid, *g.Unallocated)
		}
	}
}

// churned reports whether the example has pods starting or ending inside
// it (edge_tol above the floor), where it states no unallocated seconds.
func churned(want jsonTruth) bool {
	for _, c := range want.Containers {
		if c.EdgeTol != nil && *c.EdgeTol > edgeTolFloor*2 {
			return true
		}
	}
	return false
}

func compareGroups(t *testing.T, got []InstanceGroup, want []jsonGroup) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d instance groups, want %d: %+v", len(got), len(want), got)
		return
	}
	for i := range want {
		if !slices.Equal(got[i].Members, want[i].Members) || !near(got[i].Used, want[i].Used) {
			t.Errorf("instance group %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func sameOptional(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return near(*a, *b)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
