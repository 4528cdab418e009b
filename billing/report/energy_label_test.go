package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/nodelabel"
)

const labelBookYAML = `currency: USD
policy: allocation
idle: platform
rates: {A100-SXM4-80GB: 2.40, H100-SXM5-80GB: 4.10}
defaultRate: 2
energy:
  rate: 0.1234
  carbonIntensity: 400
  carbonIntensityByNodeLabel:
    label: topology.kubernetes.io/region
    intensities: {eu-north-1: 30, us-east-1: 0.38 kgCO2e/kWh}
`

// energyDayThreeNodes is energyDay plus a third A100 on node n3 that team
// c holds all day at 0.2 kWh an hour: 4.8 kWh.
func energyDayThreeNodes() []attribution.Row {
	rows := energyDay()
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for h := 0; h < 24; h++ {
		s := day.Add(time.Duration(h) * time.Hour)
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n3", GPUUUID: "GPU-3",
			GPUModel: "A100-SXM4-80GB", SliceID: "GPU-3", SharingMode: "exclusive", Method: "measured"}
		c := base
		c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container, c.Team = attribution.KindContainer, "ns-c", "p-c", "u-c", "c", "c"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds, c.EnergyJoules = 3600, 3600, 0.72e6
		rows = append(rows, c, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 0))
	}
	return rows
}

// TestEnergyByNodeLabelByHand: n1 (the A100 of a and the platform's idle
// energy) recorded in eu-north-1 at 30 gCO2e/kWh; n2 (b's H100) recorded in
// eu-north-1, then relabelled us-east-1 on 5 March, so us-east-1 (380) at
// the period's end; n3 (c's A100) never labelled within the period
// (labelled on 2 April, after it), so the default 400; n4 has a label
// and no energy:
//
//	a         3 kWh    x 30  =   90 g
//	b         16.8 kWh x 380 = 6384 g
//	c         4.8 kWh  x 400 = 1920 g
//	platform  1.4 kWh  x 30  =   42 g
//	total                      8436 g, 1 node without a recorded region
//
// A ledger that records no labels (the test's memory source) prices every
// node at 400: 1200 + 6720 + 1920 + 560 = 10400 g, 3 nodes without.
func TestEnergyByNodeLabelByHand(t *testing.T) {
	ctx := context.Background()
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	rows := energyDayThreeNodes()
	st := fileLedger(t, rows, nil)
	const key = "topology.kubernetes.io/region"
	ch := func(y int, m time.Month, d int, node, value string) nodelabel.Change {
		return nodelabel.Change{Node: node, Key: key, Value: value, At: time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
	}
	if err := st.AppendNodeLabels(ctx, []nodelabel.Change{
		ch(2026, 2, 1, "n1", "eu-north-1"), ch(2026, 2, 1, "n2", "eu-north-1"), ch(2026, 3, 5, "n2", "us-east-1"),
		ch(2026, 4, 2, "n3", "us-east-1"), ch(2026, 2, 1, "n4", "us-east-1"),
		{Node: "n1", Key: "topology.kubernetes.io/zone", Value: "z9", At: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		src        Source
		want       map[string]int64
		total      int64
		unlabelled int
	}{
		{"ledger with labels", st, map[string]int64{"a/charge": 90, "b/charge": 6384, "c/charge": 1920, "/platform": 42}, 8436, 1},
		{"ledger without labels", &memSource{rows: rows}, map[string]int64{"a/charge": 1200, "b/charge": 6720, "c/charge": 1920, "/platform": 560}, 10400, 3},
	} {
		r := mustBuild(t, c.src, book(t, labelBookYAML), from, to)
		got := map[string]int64{}
		var sum int64
		for _, l := range r.Lines {
			if l.Type != LineRounding {
				got[l.Team+"/"+string(l.Type)] += l.Co2eGrams
				sum += l.Co2eGrams
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || r.Energy.Co2eGrams != c.total || sum != c.total {
			t.Errorf("%s: %v, total %d g (lines %d)\nwant %v, %d g", c.name, got, r.Energy.Co2eGrams, sum, c.want, c.total)
		}
		if r.Energy.UnlabelledNodes != c.unlabelled || r.Energy.NodeLabel != key {
			t.Errorf("%s: %d nodes without %q, want %d", c.name, r.Energy.UnlabelledNodes, r.Energy.NodeLabel, c.unlabelled)
		}
		// The money and the energy cost do not depend on the regions:
		// energyDay's 156.00 and c's 24 A100-hours at 2.40; 26 kWh x 0.1234 = 3.2084.
		if r.Money(r.Total) != "213.60" || r.Energy.Cost != 321 {
			t.Errorf("%s: total %s, energy cost %d", c.name, r.Money(r.Total), r.Energy.Cost)
		}
		line := fmt.Sprintf("nodes without a recorded %s: %d", key, c.unlabelled)
		var h, j bytes.Buffer
		if err := WriteHTML(&h, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&j, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.String(), line) {
			t.Errorf("%s: the HTML lacks %q", c.name, line)
		}
		if want := fmt.Sprintf(`"carbon_node_label": "%s",
    "nodes_without_recorded_label": %d`, key, c.unlabelled); !strings.Contains(j.String(), want) {
			t.Errorf("%s: the JSON lacks\n%s\nin\n%s", c.name, want, j.String())
		}
	}
	// A name's own figure wins over its region; n2 is then not counted
	// without a region even in a ledger without labels.
	y := strings.Replace(labelBookYAML, "  carbonIntensity: 400\n", "  carbonIntensity: 400\n  carbonIntensityByNode: {n2: 10}\n", 1)
	r := mustBuild(t, &memSource{rows: rows}, book(t, y), from, to)
	if r.Energy.Co2eGrams != 1200+168+1920+560 || r.Energy.UnlabelledNodes != 2 {
		t.Errorf("by name over by label: %d g, %d unlabelled; want 3848 g, 2", r.Energy.Co2eGrams, r.Energy.UnlabelledNodes)
	}
}
