package filestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/coveragetest"

	"github.com/gpuledger/gpuledger/ledger"

	"github.com/gpuledger/gpuledger/attribution"
)

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

func TestFileCoverageMatchesASecondBySecondWalk(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	rows := gappyRows(1, start, true)
	s := openTemp(t, FileOptions{})
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ from, to time.Time }{
		{start, start.Add(3 * time.Hour)},
		{start.Add(30 * time.Minute), start.Add(90 * time.Minute)},
	} {
		cov, err := s.Coverage(ctx, r.from, r.to)
		if err != nil {
			t.Fatal(err)
		}
		want := coveragetest.WalkHoles(rows, r.from, r.to)
		got := map[string]ledger.DeviceCoverage{}
		for _, d := range cov.Devices {
			if d.Holes == nil {
				d.Holes = []ledger.Hole{}
			}
			got[d.Node+"/"+d.GPUUUID] = d
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("[%s, %s): holes\n got %v\nwant %v", r.from, r.to, got, want)
		}
		if cov.Truncated {
			t.Error("truncated")
		}
	}
}

// A day of minute rows in which almost every slot is whole, so Coverage
// reads only the slots around the few holes: one lost three minutes, one
// restarted mid-minute, one stopped early, and one whose intervals are
// offset by 30 s from the slots (they cross every slot boundary) with one
// minute lost. The holes are the walk's, to the second.
func TestFileCoverageReadsAroundWholeSlots(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	add := func(node, gpu string, s, e time.Time) {
		rows = append(rows, attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: s, IntervalEnd: e, Node: node, GPUUUID: gpu, SliceID: gpu, GPUModel: "A100-SXM4-80GB",
			SharingMode: "exclusive", Kind: attribution.KindUnallocated, AllocatedGPUSeconds: e.Sub(s).Seconds(), Method: attribution.MethodMeasured})
	}
	for m := 0; m < 1440; m++ {
		s := start.Add(time.Duration(m) * time.Minute)
		e := s.Add(time.Minute)
		if m < 300 || m > 302 {
			add("node-0", "GPU-A", s, e)
		}
		if m == 700 {
			add("node-0", "GPU-B", s, s.Add(20*time.Second))
			add("node-0", "GPU-B", s.Add(35*time.Second), e)
		} else {
			add("node-0", "GPU-B", s, e)
		}
		if m < 1000 {
			add("node-1", "GPU-C", s, e)
		}
		if m != 500 && m < 1439 {
			add("node-1", "GPU-D", s.Add(30*time.Second), e.Add(30*time.Second))
		}
	}
	st := openTemp(t, FileOptions{})
	for i := 0; i < len(rows); i += 400 { // batches, as a collector writes: the rollup is built behind them
		if err := st.Append(ctx, rows[i:min(i+400, len(rows))], nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct{ from, to time.Time }{
		{start, start.Add(24 * time.Hour)},
		{start.Add(7 * time.Minute), start.Add(20*time.Hour + 3*time.Second)},
	} {
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
		if want := coveragetest.WalkHoles(rows, r.from, r.to); !reflect.DeepEqual(got, want) {
			t.Errorf("[%s, %s):\n got %v\nwant %v", r.from, r.to, got, want)
		}
	}
}
