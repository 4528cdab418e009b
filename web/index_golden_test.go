package web

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.html.golden from the current output")

// TestIndexGolden pins the index page, its chart included, byte for byte:
// testLedger's months, and a ledger whose team names must be escaped
// (markup, quotes, ampersand, '+'). The files were written by the page as
// it was before its chart was drawn through support/svgchart.
func TestIndexGolden(t *testing.T) {
	db, prices := testLedger(t)
	_, index := fetch(t, newTestServer(t, fileOpener(db), prices).URL+"/")
	checkIndexGolden(t, "index.html.golden", index)

	dir := t.TempDir()
	db2 := filepath.Join(dir, "ledger.db")
	st, err := filestore.OpenFile(context.Background(), db2, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []attribution.Row
	teams := []string{`<b>"ml"</b> & 'vision'`, "c++ team", "ops"}
	for h := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC); h.Before(time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)); h = h.Add(time.Hour) {
		for i, team := range teams {
			base := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n1", GPUUUID: "GPU-" + team, GPUModel: "A100-SXM4-80GB",
				SliceID: "GPU-" + team, SharingMode: "exclusive", Method: "measured"}
			c := base
			c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container, c.Team = attribution.KindContainer, "ns", "p", "uid-"+team, "main", team
			c.AllocatedGPUSeconds, c.UsedGPUSeconds = float64(1200*(i+1)), 600
			un := base
			un.Kind, un.AllocatedGPUSeconds = attribution.KindUnallocated, 3600-c.AllocatedGPUSeconds
			idle := base
			idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 3000
			rows = append(rows, c, un, idle)
		}
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	prices2 := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices2, []byte(testBook), 0o644); err != nil {
		t.Fatal(err)
	}
	_, index = fetch(t, newTestServer(t, fileOpener(db2), prices2).URL+"/")
	checkIndexGolden(t, "index-labels.html.golden", index)
}

// checkIndexGolden compares got with testdata/name, rewriting it under
// -update.
func checkIndexGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("cannot write %s: %v", path, err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read %s (go test ./web -run TestIndexGolden -update creates it): %v", path, err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("page differs from %s at line %d:\nwant %.600s\ngot  %.600s", path, i+1, w, g)
			}
		}
	}
}
