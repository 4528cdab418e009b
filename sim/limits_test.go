package sim

import (
	"maps"
	"path/filepath"
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// A container's limits reach the metadata as the scenario writes them,
// known; a container without limits in the scenario is unknown.
func TestMetadataCarriesContainerLimits(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("..", "testdata", "scenarios", "hami-edit-before-start", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, sc)
	advanceShapes(t, n, sc, 0)
	p, _ := snapshotPod(t, n, "trainer")
	want := map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "25", "nvidia.com/gpumem": "20000"}
	if c := p.Containers[0]; !c.LimitsKnown || !maps.Equal(c.Limits, want) {
		t.Errorf("model: limits %v known %v, want %v known", c.Limits, c.LimitsKnown, want)
	}
	if c := p.InitContainers[0]; c.LimitsKnown || c.Limits != nil {
		t.Errorf("fetch-weights: limits %v known %v, want none unknown", c.Limits, c.LimitsKnown)
	}
}
