package web

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// gapLedger: in November 2026 to the 15th (testNow), node n1's GPU sends
// every hour; n2's two GPUs stop on the 10th at 00:00 and say nothing
// more (a crash-looping collector); n3's GPU stops on the 12th after a
// clean leave. By hand: one gap, n2's 2 GPUs from 10 Nov to 15 Nov
// 00:00 (the data's end), 2 x 120 h = 240 GPU-hours = 864,000
// GPU-seconds; n2 silent for 5 days, 432,000 s; n3 has none.
func gapLedger(t *testing.T) (db, prices string) {
	t.Helper()
	dir := t.TempDir()
	db, prices = filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte(testBook), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	gpu := func(node, uuid string, until time.Time) {
		for h := start; h.Before(until); h = h.Add(time.Hour) {
			r := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: node, GPUUUID: uuid, GPUModel: "A100-SXM4-80GB",
				SliceID: uuid, SharingMode: "exclusive", Method: "measured", Kind: attribution.KindContainer, AllocatedGPUSeconds: 3600,
				UsedGPUSeconds: 3600, Namespace: "ml", Pod: "trainer-" + uuid, PodUID: "uid-" + uuid, Container: "main", Team: "ml"}
			rows = append(rows, r)
		}
	}
	gpu("n1", "GPU-1", start.AddDate(0, 0, 14))
	gpu("n2", "GPU-2", start.AddDate(0, 0, 9))
	gpu("n2", "GPU-3", start.AddDate(0, 0, 9))
	gpu("n3", "GPU-4", start.AddDate(0, 0, 11))
	left := start.AddDate(0, 0, 11)
	if err := st.Append(context.Background(), rows, []attribution.Finding{{Kind: ledger.FindingNodeLeft, Node: "n3", Start: left, End: left}}); err != nil {
		t.Fatal(err)
	}
	return db, prices
}

func TestEveryServePageListsTheGaps(t *testing.T) {
	db, prices := gapLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	row := "<b>n2</b></td><td class=\"num\">2</td><td>2026-11-10 00:00:00 UTC</td><td>2026-11-15 00:00:00 UTC</td><td class=\"num\">240.00</td>"
	for path, wants := range map[string][]string{
		"/":                     {`id="gaps-2026-11"`, row},
		"/reports/2026-11":      {`id="coverage-gaps"`, row, "1 node stopped sending on 2026-11-10 (n2)"},
		"/advice/2026-11":       {`id="coverage-gaps"`, row},
		"/reports/2026-11.csv":  {"# coverage_gap node=n2 gpus=2 from=2026-11-10T00:00:00Z to=2026-11-15T00:00:00Z gpu_hours=240.000000", "# coverage_gaps_total count=1 gpu_hours=240.000000"},
		"/reports/2026-11.json": {`"coverage_gaps": {`, `"node": "n2"`, `"gpu_hours": 240.000000`},
		"/advice/2026-11.json":  {"1 node stopped sending on 2026-11-10 (n2)"},
		"/metrics":              {`gpuledger_coverage_gap_gpu_seconds{node="n2"} 864000`, `gpuledger_coverage_node_silent_seconds{node="n2"} 432000`},
	} {
		resp, body := fetch(t, hs.URL+path)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
		if strings.Contains(body, "n3") {
			t.Errorf("%s names n3, which left cleanly", path)
		}
	}
}
