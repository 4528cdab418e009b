package web

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestReportPageEnergy: with an energy section in the price book the
// month's page shows each team's kWh, energy cost and kgCO2e: team ml's
// trainer draws 0.25 kWh every hour of October (744 h: 186 kWh), at 0.20
// USD per kWh (37.20) and 300 gCO2e/kWh (55.800 kg); the CSV carries the
// same in its appended columns.
func TestReportPageEnergy(t *testing.T) {
	dir := t.TempDir()
	db, prices := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte(testBook+"energy: {rate: 0.20, carbonIntensity: 300}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []attribution.Row
	for h := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC); h.Before(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); h = h.Add(time.Hour) {
		c := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", GPUModel: "A100-SXM4-80GB",
			SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured", Kind: attribution.KindContainer, Namespace: "ml",
			Pod: "trainer-0", PodUID: "uid-1", Container: "main", Team: "ml", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600, EnergyJoules: 0.9e6}
		rows = append(rows, c)
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	hs := newTestServer(t, fileOpener(db), prices)
	resp, page := fetch(t, hs.URL+"/reports/2026-10")
	if resp.StatusCode != 200 {
		t.Fatalf("%d\n%.400s", resp.StatusCode, page)
	}
	for _, want := range []string{"<h2>Energy and carbon</h2>",
		`<td><b>ml</b></td><td class="num">186.000000</td><td class="num">37.20</td><td class="num">55.800</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report page lacks %q", want)
		}
	}
	_, csv := fetch(t, hs.URL+"/reports/2026-10.csv")
	if !strings.Contains(csv, ",energy_cost,co2e_kg\n") || !strings.Contains(csv, ",37.20,55.800\n") {
		t.Errorf("CSV:\n%s", csv)
	}
}
