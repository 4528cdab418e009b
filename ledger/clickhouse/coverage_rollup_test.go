package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/coveragetest"
	"github.com/gpuledger/gpuledger/ledger"
)

// rollupLedger is a random ledger over hours hours from start: two
// clusters with the same node names, two nodes of two GPUs each, back to
// back intervals of 20 s to 5 min (whole seconds, so the walk is exact)
// with intervals lost at random (holes inside hours) and, now and then, a
// run of up to 90 minutes lost (holes across hour boundaries). It returns
// the rows kept and the rows lost.
func rollupLedger(seed uint64, start time.Time, hours int) (kept, lost []attribution.Row) {
	rng := rand.New(rand.NewPCG(seed, 11))
	end := start.Add(time.Duration(hours) * time.Hour)
	for _, cluster := range []string{attribution.DefaultCluster, "east"} {
		for n := 0; n < 2; n++ {
			for g := 0; g < 2; g++ {
				node, gpu := fmt.Sprintf("node-%d", n), fmt.Sprintf("GPU-%d-%d", n, g)
				// Some GPUs start late or stop early, off the hour.
				s := start.Add(time.Duration(rng.IntN(3)*rng.IntN(5000)) * time.Second)
				stop := end.Add(-time.Duration(rng.IntN(2)*rng.IntN(7000)) * time.Second)
				var lostUntil time.Time
				for s.Before(stop) {
					e := s.Add(time.Duration(20+rng.IntN(281)) * time.Second)
					r := attribution.Row{Cluster: cluster, IntervalStart: s, IntervalEnd: e, Node: node, GPUUUID: gpu, SliceID: gpu,
						GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Kind: attribution.KindUnallocated,
						AllocatedGPUSeconds: e.Sub(s).Seconds(), Method: attribution.MethodMeasured}
					switch {
					case s.Before(lostUntil), rng.IntN(12) == 0:
						lost = append(lost, r)
					case rng.IntN(150) == 0:
						lostUntil = s.Add(time.Duration(10+rng.IntN(80)) * time.Minute)
						lost = append(lost, r)
					default:
						kept = append(kept, r)
					}
					s = e
				}
			}
		}
	}
	return kept, lost
}

// TestCoverageRollupMatchesRawSearchAndAWalk: Coverage read from the
// coverage rollup where hours are current equals the raw search and a
// second-by-second walk over the rows, over random ledgers with holes in
// hours, across hours and at the edges of windows that cut hours; with
// stale hours (rows written after the rebuild, some filling holes the
// rollup still has) mixed in, replayed rows with new values, and two
// clusters with the same node names.
func TestCoverageRollupMatchesRawSearchAndAWalk(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	start := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	const hours = 12
	kept, lost := rollupLedger(5, start, hours)
	appendAll(t, s, kept, 700)
	// A replayed batch with new values: the same keys under a newer version.
	replay := append([]attribution.Row(nil), kept[100:400]...)
	for i := range replay {
		replay[i].UsedGPUSeconds = 1
	}
	appendAll(t, s, replay, 1000)
	if err := s.RebuildRollups(ctx, start, start.Add(hours*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.StaleHours(ctx, start, start.Add(hours*time.Hour)); err != nil || n != 0 {
		t.Fatalf("stale hours after the rebuild: %d, %v", n, err)
	}
	// Written after the rebuild, so hours 3 and 7 are stale: lost rows
	// found again (the rollup still has their holes) and a replay.
	rows := append([]attribution.Row(nil), kept...)
	var late []attribution.Row
	for _, r := range lost {
		if h := r.IntervalStart.Sub(start) / time.Hour; (h == 3 || h == 7) && len(late)%3 != 2 {
			late = append(late, r)
		}
	}
	rows = append(rows, late...)
	for _, r := range kept {
		if r.IntervalStart.Sub(start)/time.Hour == 7 {
			r.UsedGPUSeconds = 2
			late = append(late, r) // a replay
			break
		}
	}
	appendAll(t, s, late, 1000)
	if n, err := s.StaleHours(ctx, start, start.Add(hours*time.Hour)); err != nil || n != 2 {
		t.Fatalf("stale hours after late writes: %d, %v, want 2", n, err)
	}

	windows := []window{
		{start, start.Add(hours * time.Hour)},
		{start.Add(-time.Hour), start.Add((hours + 1) * time.Hour)},
		{start.Add(17*time.Minute + 31*time.Second), start.Add(8*time.Hour + 5*time.Minute)},
		{start.Add(2 * time.Hour), start.Add(5 * time.Hour)},
		{start.Add(5*time.Hour + 10*time.Minute), start.Add(5*time.Hour + 50*time.Minute)},
	}
	check := func(name string) {
		t.Helper()
		checkCoverage(t, s, name, walks(rows, windows), windows)
	}
	// The rollup is read at all: the full window has rollup parts with
	// builds, and raw parts for the stale hours.
	parts, err := s.coverageParts(ctx, start, start.Add(hours*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	rollupHours, rawParts := 0, 0
	for _, p := range parts {
		if p.builds == nil {
			rawParts++
		}
		rollupHours += len(p.builds)
	}
	if rollupHours != hours-2 || rawParts != 2 {
		t.Fatalf("coverage parts: %d rollup hours and %d raw parts, want %d and 2: %+v", rollupHours, rawParts, hours-2, parts)
	}
	check("stale hours mixed in")

	// Rebuilt: every hour from the rollup.
	if err := s.RebuildRollups(ctx, start, start.Add(hours*time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("all current")

	// A rebuild cut off after its coverage rows, before its header: once
	// merged they replace the current build's rows of hour 4, which then
	// reads from raw rows.
	h4 := start.Add(4 * time.Hour)
	err = s.insert(ctx, tableCovHourly, []string{"hour", "version", "build", "cluster", "node", "gpu_uuid", "first_ns", "last_ns", "tail_ns", "hole_from", "hole_to"},
		[]any{[]time.Time{h4}, []uint64{uint64(time.Now().Add(time.Hour).UnixNano())}, []uint64{7}, []string{attribution.DefaultCluster}, []string{"node-0"}, []string{"GPU-0-0"},
			[]uint64{uint64(h4.UnixNano())}, []uint64{uint64(h4.UnixNano())}, []uint64{uint64(h4.UnixNano())}, [][]uint64{{}}, [][]uint64{{}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.exec(ctx, "OPTIMIZE TABLE "+s.table(tableCovHourly)+" FINAL"); err != nil {
		t.Fatal(err)
	}
	check("a torn build")
}

// TestBuildsBeforeTheCoverageRollupAreStale: an hour whose build has no
// coverage rows (built before migration 9) counts as stale, so the upkeep
// rebuilds it, and its coverage is read from raw rows meanwhile.
func TestBuildsBeforeTheCoverageRollupAreStale(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	start := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	kept, _ := rollupLedger(9, start, 3)
	appendAll(t, s, kept, 5000)
	if err := s.RebuildRollups(ctx, start, start.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Hour 1's newest header as an older binary wrote it: no coverage.
	h1 := start.Add(time.Hour)
	if err := s.exec(ctx, fmt.Sprintf(`INSERT INTO %s (grain, period, version, build, groups)
SELECT grain, period, version + 1, build, groups FROM %s WHERE grain = 'h' AND period = %s ORDER BY version DESC LIMIT 1`,
		s.table(tableBuilds), s.table(tableBuilds), dt(h1.Unix()))); err != nil {
		t.Fatal(err)
	}
	if n, err := s.StaleHours(ctx, start, start.Add(3*time.Hour)); err != nil || n != 1 {
		t.Fatalf("stale hours: %d, %v, want 1", n, err)
	}
	parts, err := s.coverageParts(ctx, start, start.Add(3*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || parts[1].builds != nil || !parts[1].from.Equal(h1) {
		t.Fatalf("coverage parts %+v, want hour 1 from raw rows between two rollup hours", parts)
	}
	want := coveragetest.WalkHoles(kept, start, start.Add(3*time.Hour))
	got, err := s.Coverage(ctx, start, start.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range got.Devices {
		if d.Holes == nil {
			d.Holes = []ledger.Hole{}
		}
		if w := want[ledger.NodeKey(d.Cluster, d.Node)+"/"+d.GPUUUID]; !reflect.DeepEqual(d, w) {
			t.Errorf("%s/%s/%s: coverage %+v, want %+v", d.Cluster, d.Node, d.GPUUUID, d, w)
		}
	}
	if len(got.Devices) != len(want) {
		t.Errorf("%d devices, want %d", len(got.Devices), len(want))
	}
	if err := s.RebuildRollups(ctx, start, start.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.StaleHours(ctx, start, start.Add(3*time.Hour)); err != nil || n != 0 {
		t.Fatalf("stale hours after the rebuild: %d, %v, want 0", n, err)
	}
}

type window struct{ from, to time.Time }

// walks are the second-by-second walks over rows of each window.
func walks(rows []attribution.Row, windows []window) []map[string]ledger.DeviceCoverage {
	out := make([]map[string]ledger.DeviceCoverage, len(windows))
	for i, w := range windows {
		out[i] = coveragetest.WalkHoles(rows, w.from, w.to)
	}
	return out
}

// checkCoverage compares Coverage of each window with the raw search and
// with the walk over its rows (wants, from walks).
func checkCoverage(t *testing.T, s *Store, name string, wants []map[string]ledger.DeviceCoverage, windows []window) {
	t.Helper()
	ctx := context.Background()
	for i, w := range windows {
		want := wants[i]
		got, err := s.Coverage(ctx, w.from, w.to)
		if err != nil {
			t.Fatal(err)
		}
		raw, _, err := s.coverageOf(ctx, []coveragePart{{from: w.from, to: w.to}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, raw) {
			t.Errorf("%s [%s, %s): rollup-backed coverage\n got %+v\nraw %+v", name, w.from, w.to, got, raw)
		}
		byKey := map[string]ledger.DeviceCoverage{}
		for _, d := range got.Devices {
			if d.Holes == nil {
				d.Holes = []ledger.Hole{}
			}
			byKey[ledger.NodeKey(d.Cluster, d.Node)+"/"+d.GPUUUID] = d
		}
		if !reflect.DeepEqual(byKey, want) || got.Truncated {
			t.Errorf("%s [%s, %s): coverage (truncated %v)\n got %v\nwant %v", name, w.from, w.to, got.Truncated, byKey, want)
		}
	}
}

// partsOf counts the periods of each grain a coverage search of [from, to)
// reads from rollups, and its raw parts.
func partsOf(t *testing.T, s *Store, from, to time.Time) (days, hours, raw int) {
	t.Helper()
	parts, err := s.coverageParts(context.Background(), from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		switch p.grain {
		case grainDay:
			days += len(p.builds)
		case grainHour:
			hours += len(p.builds)
		default:
			raw++
		}
	}
	return days, hours, raw
}

// TestCoverageDailyRollupMatchesRawSearchAndAWalk: over three days, whole
// UTC days read from the daily coverage rollup, a day with a stale hour
// hour by hour (its stale hour raw), the edges of windows that cut days
// and hours raw; and a daily build whose rows a newer one replaced in a
// merge is read hour by hour. Each equals the raw search and the walk.
func TestCoverageDailyRollupMatchesRawSearchAndAWalk(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	start := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	const hours = 72
	end := start.Add(hours * time.Hour)
	kept, lost := rollupLedger(17, start, hours)
	appendAll(t, s, kept, 5000)
	if err := s.RebuildRollups(ctx, start, end); err != nil {
		t.Fatal(err)
	}
	if days, hrs, raw := partsOf(t, s, start, end); days != 3 || hrs != 0 || raw != 0 {
		t.Fatalf("after the rebuild: %d days, %d hours, %d raw parts from the coverage rollups, want 3, 0, 0", days, hrs, raw)
	}
	windows := []window{
		{start, end},
		{start.Add(-2 * time.Hour), end.Add(time.Hour)},
		{start.Add(5*time.Hour + 13*time.Minute + 7*time.Second), end.Add(-3*time.Hour - 59*time.Second)},
		{start.Add(23 * time.Hour), start.Add(49 * time.Hour)},
	}
	checkCoverage(t, s, "all current", walks(kept, windows), windows)

	// Lost rows of hour 30 found again after the rebuild: day 1 is read
	// hour by hour, hour 30 from raw rows.
	rows := append([]attribution.Row(nil), kept...)
	var late []attribution.Row
	for _, r := range lost {
		if r.IntervalStart.Sub(start)/time.Hour == 30 {
			late = append(late, r)
		}
	}
	if len(late) == 0 {
		t.Fatal("no lost rows in hour 30")
	}
	rows = append(rows, late...)
	appendAll(t, s, late, 1000)
	if days, hrs, raw := partsOf(t, s, start, end); days != 2 || hrs != 23 || raw != 1 {
		t.Fatalf("with hour 30 stale: %d days, %d hours, %d raw parts, want 2, 23, 1", days, hrs, raw)
	}
	wants := walks(rows, windows)
	checkCoverage(t, s, "a stale hour", wants, windows)
	if err := s.RebuildRollups(ctx, start, end); err != nil {
		t.Fatal(err)
	}
	if days, hrs, raw := partsOf(t, s, start, end); days != 3 || hrs != 0 || raw != 0 {
		t.Fatalf("rebuilt: %d days, %d hours, %d raw parts, want 3, 0, 0", days, hrs, raw)
	}
	checkCoverage(t, s, "rebuilt", wants, windows)

	// Day 2's current rows of one GPU replaced by a newer build's whose
	// header never came.
	d2 := start.Add(48 * time.Hour)
	err := s.insert(ctx, tableCovDaily, []string{"day", "version", "build", "cluster", "node", "gpu_uuid", "first_ns", "last_ns", "tail_ns", "hole_from", "hole_to"},
		[]any{[]time.Time{d2}, []uint64{uint64(time.Now().Add(time.Hour).UnixNano())}, []uint64{7}, []string{"east"}, []string{"node-1"}, []string{"GPU-1-1"},
			[]uint64{uint64(d2.UnixNano())}, []uint64{uint64(d2.UnixNano())}, []uint64{uint64(d2.UnixNano())}, [][]uint64{{}}, [][]uint64{{}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.exec(ctx, "OPTIMIZE TABLE "+s.table(tableCovDaily)+" FINAL"); err != nil {
		t.Fatal(err)
	}
	checkCoverage(t, s, "a torn daily build", wants, windows)
}
