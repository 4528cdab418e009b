package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// TestCoverageInTheServerMatchesASecondBySecondWalk: ClickHouse finds
// each GPU's holes in the server (coverageSQL), and they are the walk's
// and the file ledger's, to the second, over the whole range and a window
// that cuts the rows. The rows are stored twice (a replayed batch) and
// not merged yet.
func TestCoverageInTheServerMatchesASecondBySecondWalk(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	start := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	rows := gappyRows(3, start, false)
	appendAll(t, ch, rows, 5000)
	appendAll(t, ch, rows, 5000)
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ from, to time.Time }{
		{start, start.Add(3 * time.Hour)},
		{start.Add(30 * time.Minute), start.Add(90 * time.Minute)},
	} {
		want := walkHoles(rows, r.from, r.to)
		for name, st := range map[string]ledger.CoverageReader{"clickhouse": ch, "file": file} {
			cov, err := st.Coverage(ctx, r.from, r.to)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]ledger.DeviceCoverage{}
			for _, d := range cov.Devices {
				if d.Holes == nil {
					d.Holes = []ledger.Hole{}
				}
				got[d.Node+"/"+d.GPUUUID] = d
			}
			if !reflect.DeepEqual(got, want) || cov.Truncated {
				t.Errorf("%s [%s, %s): holes (truncated %v)\n got %v\nwant %v", name, r.from, r.to, cov.Truncated, got, want)
			}
		}
	}
}

// gappyRows is two nodes of two GPUs each over three hours of minute
// intervals, with what goes wrong on a cluster: a GPU that stops early, a
// collector restart mid-minute (an interval closed at the instant, the
// next opened seconds later), minutes lost at random and, when nested, a
// long interval holding the next two minutes, one of them lost.
func gappyRows(seed uint64, start time.Time, nested bool) []attribution.Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	var rows []attribution.Row
	add := func(node, gpu string, s, e time.Time) {
		d := e.Sub(s).Seconds()
		for _, k := range []attribution.Kind{attribution.KindUnallocated, attribution.KindIdle} {
			r := attribution.Row{IntervalStart: s, IntervalEnd: e, Node: node, GPUUUID: gpu, SliceID: gpu, GPUModel: "A100-SXM4-80GB",
				SharingMode: "exclusive", Kind: k, Method: attribution.MethodMeasured}
			if k == attribution.KindIdle {
				r.UsedGPUSeconds = d
			} else {
				r.AllocatedGPUSeconds = d
			}
			rows = append(rows, r)
		}
	}
	for n := 0; n < 2; n++ {
		for g := 0; g < 2; g++ {
			node, gpu := fmt.Sprintf("node-%d", n), fmt.Sprintf("GPU-%d-%d", n, g)
			minutes := 180
			if n == 1 && g == 1 {
				minutes = 100 // stops early
			}
			for m := 0; m < minutes; m++ {
				s := start.Add(time.Duration(m) * time.Minute)
				e := s.Add(time.Minute)
				switch {
				case n == 0 && m == 40: // a restart: closed at :20, reopened at :35
					add(node, gpu, s, s.Add(20*time.Second))
					add(node, gpu, s.Add(35*time.Second), e)
					continue
				case rng.IntN(15) == 0:
					continue // lost
				case nested && n == 1 && m == 62:
					continue // inside the long interval: no hole
				case nested && n == 1 && m == 60:
					add(node, gpu, s, e.Add(2*time.Minute)) // a long interval holding the next two
					continue
				}
				add(node, gpu, s, e)
			}
		}
	}
	return rows
}

// walkHoles is the ground truth of Coverage: a second-by-second walk over
// the rows of [from, to). For every (node, GPU), a second is covered when a
// row's interval contains it; the GPU's holes are the runs of uncovered
// seconds between its first covered second and its last; its bounds are
// its rows' earliest start and latest end.
func walkHoles(rows []attribution.Row, from, to time.Time) map[string]ledger.DeviceCoverage {
	covered := map[string]map[int64]bool{}
	out := map[string]ledger.DeviceCoverage{}
	for _, r := range rows {
		if r.IntervalStart.Before(from) || !r.IntervalStart.Before(to) {
			continue
		}
		k := r.Node + "/" + r.GPUUUID
		if covered[k] == nil {
			covered[k] = map[int64]bool{}
			out[k] = ledger.DeviceCoverage{Node: r.Node, GPUUUID: r.GPUUUID, First: r.IntervalStart, Last: r.IntervalEnd}
		}
		d := out[k]
		if r.IntervalStart.Before(d.First) {
			d.First = r.IntervalStart
		}
		if r.IntervalEnd.After(d.Last) {
			d.Last = r.IntervalEnd
		}
		out[k] = d
		for t := r.IntervalStart.Unix(); t < r.IntervalEnd.Unix(); t++ {
			covered[k][t] = true
		}
	}
	for k, c := range covered {
		lo, hi := int64(1<<62), int64(-1)
		for t := range c {
			lo, hi = min(lo, t), max(hi, t)
		}
		holes := []ledger.Hole{}
		for t := lo; t <= hi; t++ {
			if c[t] {
				continue
			}
			if n := len(holes); n > 0 && holes[n-1].To.Unix() == t {
				holes[n-1].To = time.Unix(t+1, 0).UTC()
			} else {
				holes = append(holes, ledger.Hole{From: time.Unix(t, 0).UTC(), To: time.Unix(t+1, 0).UTC()})
			}
		}
		d := out[k]
		d.Holes = holes
		out[k] = d
	}
	return out
}

// TestReportGapsOnClickHouseMatchAWalk: the report's coverage gaps from
// ClickHouse (holes found in the server, a clean leave read back as a
// finding) are the file ledger's and a second-by-second walk's, node by
// node: node-1 left cleanly when GPU-1-1 stopped, so that GPU's time after
// it is no gap, and neither is a hole of GPU-1-0 that the leave opened.
func TestReportGapsOnClickHouseMatchAWalk(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	start := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	rows := gappyRows(5, start, false)
	left := start.Add(100 * time.Minute)
	findings := []attribution.Finding{{Kind: ledger.FindingNodeLeft, Node: "node-1", Start: left, End: left}}
	appendAll(t, ch, rows, 5000)
	if err := ch.Append(ctx, nil, findings); err != nil {
		t.Fatal(err)
	}
	if err := file.Append(ctx, rows, findings); err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", []byte("currency: USD\npolicy: allocation\ndefaultRate: 2.00\n"))
	if err != nil {
		t.Fatal(err)
	}
	from, to := start, start.Add(3*time.Hour)
	want := walkGapSeconds(rows, findings)
	if want["node-0"] == 0 || want["node-1"] == 0 {
		t.Fatalf("the walk finds no gaps on a node: %v", want)
	}
	for name, st := range map[string]report.Source{"clickhouse": ch, "file": file} {
		r, err := report.Build(ctx, st, book, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if r.Coverage == nil {
			t.Fatalf("%s: no coverage", name)
		}
		got := map[string]int64{}
		for _, g := range r.Coverage.Gaps {
			got[g.Node] += int64(g.GPUs) * int64(g.To.Sub(g.From)/time.Second)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: gap GPU-seconds per node %v, the walk %v", name, got, want)
		}
	}
}

// walkGapSeconds is the report's ground truth, second by second: from each
// GPU's first row to the data's end (the latest row end), a second no row
// of the GPU covers is a gap second unless the node left cleanly since the
// GPU's last covered second.
func walkGapSeconds(rows []attribution.Row, findings []attribution.Finding) map[string]int64 {
	type dev struct{ node, gpu string }
	covered := map[dev]map[int64]bool{}
	first := map[dev]int64{}
	var end int64
	for _, r := range rows {
		d := dev{r.Node, r.GPUUUID}
		if covered[d] == nil {
			covered[d], first[d] = map[int64]bool{}, r.IntervalStart.Unix()
		}
		first[d] = min(first[d], r.IntervalStart.Unix())
		for t := r.IntervalStart.Unix(); t < r.IntervalEnd.Unix(); t++ {
			covered[d][t] = true
		}
		end = max(end, r.IntervalEnd.Unix())
	}
	leftAt := map[string]map[int64]bool{}
	for _, f := range findings {
		if leftAt[f.Node] == nil {
			leftAt[f.Node] = map[int64]bool{}
		}
		leftAt[f.Node][f.Start.Unix()] = true
	}
	out := map[string]int64{}
	for d, c := range covered {
		gone := false
		for t := first[d]; t < end; t++ {
			if c[t] {
				gone = false
				continue
			}
			if leftAt[d.node][t] {
				gone = true
			}
			if !gone {
				out[d.node]++
			}
		}
	}
	return out
}
