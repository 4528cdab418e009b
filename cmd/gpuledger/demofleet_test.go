package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestDemoFleetScenarios: the fleet the demo backfills, two days from 1
// November 2026, is exactly the scenarios of testdata/demofleet, the YAML
// the demo wrote for those days when it printed its fleet as text. The
// parsed scenarios are compared, every field.
func TestDemoFleetScenarios(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	got, err := backfillScenarios(start, 2)
	if err != nil {
		t.Fatal(err)
	}
	fleet := demoFleet()
	if len(got) != len(fleet) || len(got) != 4 {
		t.Fatalf("%d scenarios for %d nodes, want 4", len(got), len(fleet))
	}
	for i, n := range fleet {
		path := filepath.Join("testdata", "demofleet", n.name+".yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := scenario.Parse(data, ".")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("node %s: the scenario differs from %s:\ngot  %+v\nwant %+v", n.name, path, got[i], want)
		}
	}
}
