package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/coveragetest"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// gapDay is one day (2026-11-02, UTC) of five-minute rows on four nodes:
//
//   - node-a: two GPUs, every interval (no gap);
//   - node-b: two GPUs that stop at 10:00 and say nothing (a crash): a
//     gap of 14 h on 2 GPUs, 28 GPU-hours, to the data's end;
//   - node-c: one GPU whose collector was SIGTERMed at 12:00 (a node_left
//     finding at its last row's end): no gap;
//   - node-d: one GPU with a hole from 03:00 to 04:30 (a crash: 1.5
//     GPU-hours) and one from 06:00 to 07:00 after a clean leave at 06:00
//     (a rolling update: no gap).
//
// By hand: 2 gaps, 29.5 GPU-hours.
func gapDay() (rows []attribution.Row, findings []attribution.Finding, from, to time.Time) {
	from = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	to = from.Add(24 * time.Hour)
	at := func(h, m int) time.Time { return from.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	gpu := func(node, uuid string, skip func(s time.Time) bool) {
		for s := from; s.Before(to); s = s.Add(5 * time.Minute) {
			if skip(s) {
				continue
			}
			rows = append(rows, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(5 * time.Minute), Node: node, GPUUUID: uuid, SliceID: uuid,
				GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindUnallocated, AllocatedGPUSeconds: 300,
				Method: attribution.MethodMeasured}, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(5 * time.Minute), Node: node,
				GPUUUID: uuid, SliceID: uuid, GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindIdle,
				UsedGPUSeconds: 300, Method: attribution.MethodMeasured})
		}
	}
	never := func(time.Time) bool { return false }
	gpu("node-a", "GPU-a0", never)
	gpu("node-a", "GPU-a1", never)
	gpu("node-b", "GPU-b0", func(s time.Time) bool { return !s.Before(at(10, 0)) })
	gpu("node-b", "GPU-b1", func(s time.Time) bool { return !s.Before(at(10, 0)) })
	gpu("node-c", "GPU-c0", func(s time.Time) bool { return !s.Before(at(12, 0)) })
	gpu("node-d", "GPU-d0", func(s time.Time) bool {
		return !s.Before(at(3, 0)) && s.Before(at(4, 30)) || !s.Before(at(6, 0)) && s.Before(at(7, 0))
	})
	leave := func(node string, t time.Time) attribution.Finding {
		return attribution.Finding{Kind: ledger.FindingNodeLeft, Node: node, Start: t, End: t}
	}
	findings = []attribution.Finding{leave("node-c", at(12, 0)), leave("node-d", at(6, 0))}
	return rows, findings, from, to
}

func TestCoverageGapsMatchAWalkAndAreNeverBilled(t *testing.T) {
	rows, findings, from, to := gapDay()
	b := bookFor(t, "USD", "UTC", "allocation", "platform", map[string]string{"A100-SXM4-80GB": "2.00"}, "2.00")
	r := mustBuild(t, fileLedger(t, rows, findings), b, from, to)

	c := r.Coverage
	if c == nil {
		t.Fatal("no coverage on the file ledger")
	}
	walk := coveragetest.WalkGapSeconds(rows, findings)
	got := map[string]int64{}
	for _, g := range c.Gaps {
		got[g.Node] += int64(g.GPUs) * int64(g.To.Sub(g.From)/time.Second)
	}
	for _, node := range []string{"node-a", "node-b", "node-c", "node-d"} {
		if got[node] != walk[node] {
			t.Errorf("%s: %d gap GPU-seconds, the walk finds %d", node, got[node], walk[node])
		}
	}
	// By hand: 28 + 1.5 GPU-hours in 2 gaps.
	if c.Count != 2 || c.GPUHours.Cmp(big.NewRat(59, 2)) != 0 {
		t.Fatalf("coverage: %d gaps, %s GPU-hours; want 2 and 29.5: %+v", c.Count, c.GPUHours.FloatString(6), c.Gaps)
	}
	if g := c.Gaps[1]; g.Node != "node-b" || g.GPUs != 2 || !g.Trailing || g.From.Hour() != 10 || !g.To.Equal(to) {
		t.Errorf("node-b's gap: %+v", g)
	}
	// Never billed: the bill is the rows' 6 GPUs x ... capacity as stored:
	// (2 x 24 + 2 x 10 + 12 + 21.5) h x 2.00 = 203.00.
	if r.Total != 20300 {
		t.Errorf("total %d cents, want 20300: the rows' hours alone", r.Total)
	}
	if !r.Partial() {
		t.Error("a period with gaps is not marked partial")
	}
	wantNote := "coverage: 2 gaps without data (29.50 GPU-hours), not billed: 1 node stopped sending on 2026-11-02 (node-b); 1 gap between rows"
	if !strings.Contains(r.PartialNote(), wantNote) {
		t.Errorf("partial note %q\nwant it to hold %q", r.PartialNote(), wantNote)
	}

	// Every format lists each gap and the total.
	var cb bytes.Buffer
	if err := WriteCSV(&cb, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# coverage_gap node=node-d gpus=1 from=2026-11-02T03:00:00Z to=2026-11-02T04:30:00Z gpu_hours=1.500000,",
		"# coverage_gap node=node-b gpus=2 from=2026-11-02T10:00:00Z to=2026-11-03T00:00:00Z gpu_hours=28.000000,",
		"# coverage_gaps_total count=2 gpu_hours=29.500000 omitted=0 truncated=false not_billed=true,",
	} {
		if !strings.Contains(cb.String(), want) {
			t.Errorf("CSV lacks %q:\n%s", want, cb.String())
		}
	}
	strict, err := csv.NewReader(bytes.NewReader(cb.Bytes())).ReadAll()
	if err != nil {
		t.Fatalf("a strict CSV reader fails on the gap records: %v", err)
	}
	skipping := csv.NewReader(bytes.NewReader(cb.Bytes()))
	skipping.Comment = '#'
	lines, err := skipping.ReadAll()
	if err != nil || len(strict)-len(lines) != 3 {
		t.Errorf("a reader skipping '#' reads %d records (%v), a strict one %d: want 3 fewer", len(lines), err, len(strict))
	}
	var jb bytes.Buffer
	if err := WriteJSON(&jb, r); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Gaps struct {
			Count    int         `json:"count"`
			GPUHours json.Number `json:"gpu_hours"`
			Gaps     []struct {
				Node string `json:"node"`
				GPUs int    `json:"gpus"`
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"gaps"`
		} `json:"coverage_gaps"`
	}
	if err := json.Unmarshal(jb.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.Gaps.Count != 2 || j.Gaps.GPUHours != "29.500000" || len(j.Gaps.Gaps) != 2 || j.Gaps.Gaps[1].Node != "node-b" || j.Gaps.Gaps[1].GPUs != 2 {
		t.Errorf("JSON coverage_gaps: %+v", j.Gaps)
	}
	var hb bytes.Buffer
	if err := WriteHTML(&hb, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="coverage-gaps"`, "<b>node-b</b></td><td class=\"num\">2</td><td>2026-11-02 10:00:00 UTC</td><td>2026-11-03 00:00:00 UTC</td><td class=\"num\">28.00</td>", ">29.50<"} {
		if !strings.Contains(hb.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// The clean leaves are not findings of the report.
	for _, f := range r.Findings {
		if f.Kind == ledger.FindingNodeLeft {
			t.Errorf("a clean leave is listed as a finding: %+v", f)
		}
	}
}
