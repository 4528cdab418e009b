package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/coveragetest"

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
	ch, dsn := openTest(t)
	// The same database searched one hour's chunk at a time (the rows are
	// stored twice): holes across an hour's edge are found between chunks.
	hourly, err := Open(ctx, dsn, Options{CoverageChunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hourly.Close() })
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
		want := coveragetest.WalkHoles(rows, r.from, r.to)
		for name, st := range map[string]ledger.CoverageReader{"clickhouse": ch, "clickhouse in hourly chunks": hourly, "file": file} {
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
			r := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: s, IntervalEnd: e, Node: node, GPUUUID: gpu, SliceID: gpu, GPUModel: "A100-SXM4-80GB",
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
	want := coveragetest.WalkGapSeconds(rows, findings)
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

// A GPU's month of minute rows is one search: 44,640 intervals, whose
// holes a lambda indexing the array of intervals found in memory quadratic
// in their number (16 GiB asked for this GPU alone, a failed report). The
// two-week GPU here has 20,160 intervals (6.5 GB that way) and one lost
// minute; the search finds it and nothing else.
func TestCoverageOfALongRangeIsLinear(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const minutes = 14 * 24 * 60
	lost := start.Add(5000 * time.Minute)
	var rows []attribution.Row
	for m := 0; m < minutes; m++ {
		is := start.Add(time.Duration(m) * time.Minute)
		if is.Equal(lost) {
			continue
		}
		rows = append(rows, attribution.Row{IntervalStart: is, IntervalEnd: is.Add(time.Minute), Node: "node-0", GPUUUID: "GPU-0",
			SliceID: "GPU-0", GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindUnallocated,
			AllocatedGPUSeconds: 60, Method: attribution.MethodMeasured})
	}
	appendAll(t, s, rows, 50000)
	end := start.Add(minutes * time.Minute)
	cov, err := s.Coverage(ctx, start, end)
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.Coverage{Devices: []ledger.DeviceCoverage{{Cluster: attribution.DefaultCluster, Node: "node-0", GPUUUID: "GPU-0", First: start, Last: end,
		Holes: []ledger.Hole{{From: lost, To: lost.Add(time.Minute)}}}}}
	if !reflect.DeepEqual(cov, want) {
		t.Errorf("coverage %+v, want %+v", cov, want)
	}
}
