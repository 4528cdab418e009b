package clickhouse

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// TestFinerGroupingsReadTheDeviceRollups: per-container, per-device and
// per-node aggregates equal the stored rows summed here per key (the
// fleet's numbers are multiples of 1/64, so any order of summation gives
// the same), over windows with whole days, whole hours and partial hours,
// in UTC and Los Angeles; whole current periods come from the per-device
// rollups, not raw rows. A forged rollup row under a current build, or a
// build written before the per-device rollups existed, sends its hour
// back to the raw rows with the same sums; the old build's hour counts as
// stale, and a rebuild brings it back to the rollups.
func TestFinerGroupingsReadTheDeviceRollups(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rows := fleet(11, 2, 2, 3*24*60, from)
	appendAll(t, s, rows, 20000)
	appendAll(t, s, rows[:3000], 3000) // a replay: counted once
	var again []attribution.Row
	for i := 0; i < len(rows); i += 89 { // replaced rows: the new values count
		rows[i].AllocatedGPUSeconds, rows[i].UsedGPUSeconds = rows[i].AllocatedGPUSeconds/4, 2
		again = append(again, rows[i])
	}
	appendAll(t, s, again, 20000)
	if err := s.RebuildRollups(ctx, from, from.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		bucket                                       int64
		team, ns, model, mode, kind, gpu, slice, pod string
		container, node                              string
	}
	// truth sums the rows of q per bucket and key; keep says which fields
	// the grain has.
	truth := func(q ledger.AggregateQuery, keep func(*key)) map[key]ledger.Aggregate {
		out := map[key]ledger.Aggregate{}
		for _, r := range rows {
			if r.IntervalStart.Before(q.From) || !r.IntervalStart.Before(q.To) {
				continue
			}
			t := r.IntervalStart.In(q.Location)
			b := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, q.Location)
			if q.Bucket == ledger.BucketHour {
				b = t.Truncate(time.Hour)
			}
			k := key{b.Unix(), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind), r.GPUUUID, r.SliceID, r.Pod, r.Container, r.Node}
			keep(&k)
			a := out[k]
			a.AllocatedSeconds += r.AllocatedGPUSeconds
			a.UsedSeconds += r.UsedGPUSeconds
			a.MemoryMiBSeconds += r.MemoryMiBSeconds
			a.EnergyJoules += r.EnergyJoules
			a.Rows++
			out[k] = a
		}
		return out
	}
	grains := []struct {
		name string
		run  func(q ledger.AggregateQuery) ([]ledger.Aggregate, aggPlan, error)
		keep func(*key)
		// energyOnly: ByNode sums only energy and rows.
		energyOnly bool
	}{
		{"container", func(q ledger.AggregateQuery) ([]ledger.Aggregate, aggPlan, error) {
			return aggregateFine(ctx, s, q, &containerGrain)
		}, func(*key) {}, false},
		{"device", func(q ledger.AggregateQuery) ([]ledger.Aggregate, aggPlan, error) {
			return aggregateFine(ctx, s, q, &deviceGrain)
		}, func(k *key) { k.container, k.node = "", "" }, false},
		{"node", func(q ledger.AggregateQuery) ([]ledger.Aggregate, aggPlan, error) {
			return aggregateFine(ctx, s, q, &nodeGrain)
		}, func(k *key) { k.gpu, k.slice, k.pod, k.container = "", "", "", "" }, true},
	}
	check := func(t *testing.T, q ledger.AggregateQuery, wantPlan func(aggPlan) bool) {
		t.Helper()
		for _, g := range grains {
			got, plan, err := g.run(q)
			if err != nil {
				t.Fatalf("%s: %v", g.name, err)
			}
			if !wantPlan(plan) {
				t.Errorf("%s %s..%s %s: plan %+v", g.name, q.From.Format(time.RFC3339), q.To.Format(time.RFC3339), q.Location, plan)
			}
			want := truth(q, g.keep)
			for _, a := range got {
				k := key{a.BucketStart.Unix(), a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind), a.GPUUUID, a.SliceID, a.Pod, a.Container, a.Node}
				w, ok := want[k]
				if !ok {
					t.Fatalf("%s: unexpected group %+v", g.name, k)
				}
				if g.energyOnly {
					w.AllocatedSeconds, w.UsedSeconds, w.MemoryMiBSeconds = a.AllocatedSeconds, a.UsedSeconds, a.MemoryMiBSeconds
				}
				if a.AllocatedSeconds != w.AllocatedSeconds || a.UsedSeconds != w.UsedSeconds || a.MemoryMiBSeconds != w.MemoryMiBSeconds ||
					a.EnergyJoules != w.EnergyJoules || a.Rows != w.Rows {
					t.Fatalf("%s %+v:\n got  %+v\n want %+v", g.name, k, a, w)
				}
				delete(want, k)
			}
			if len(want) > 0 {
				t.Fatalf("%s: %d groups missing", g.name, len(want))
			}
		}
	}
	day := func(q ledger.AggregateQuery) ledger.AggregateQuery { q.Bucket = ledger.BucketDay; return q }
	window := ledger.AggregateQuery{From: from.Add(5 * time.Hour), To: from.Add(53 * time.Hour), Location: time.UTC}
	// 19 + 5 whole hours around one whole day, nothing raw.
	check(t, day(window), func(p aggPlan) bool { return p.days == 1 && p.hours == 24 && p.raw == 0 })
	lq := day(window)
	lq.Location = la
	check(t, lq, func(p aggPlan) bool { return p.days == 0 && p.hours == 48 && p.raw == 0 })
	hq := window
	hq.Bucket, hq.From, hq.To = ledger.BucketHour, from.Add(5*time.Hour+17*time.Minute), from.Add(9*time.Hour+41*time.Minute)
	check(t, hq, func(p aggPlan) bool { return p.hours == 3 && p.raw == 2 })

	// (Literal rows go in as INSERT ... SELECT: the driver sends VALUES
	// as a data block it expects from Append.)
	// A forged row under the current build of hour 6: more rows than the
	// build wrote, so the hour is read raw, with the true sums.
	forged := from.Add(6 * time.Hour)
	b := currentBuild(t, s, grainHour, forged)
	if err := s.conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (hour, version, build, cluster, team, namespace, gpu_model, sharing_mode, kind,
	node, gpu_uuid, slice_id, pod, container, mig_profile, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows)
SELECT %s, %d, %d, 'default', 'ml', 'ml-ns', 'A100-SXM4-80GB', 'timeslicing', 'container', 'node-00', 'GPU-00-00', 'GPU-00-00::0',
	'pod-0', 'forged', '', 1e9, 1e9, 0., 0., 1`, s.table(tableDevHourly), dt(forged.Unix()), b.version, b.build)); err != nil {
		t.Fatal(err)
	}
	check(t, day(window), func(p aggPlan) bool { return p.days == 1 && p.hours == 23 && p.raw == 1 })

	// A header as builds before migration 10 wrote it (no per-device
	// rows): the hour is stale, read raw, and rebuilt.
	old := from.Add(50 * time.Hour)
	b = currentBuild(t, s, grainHour, old)
	if err := s.conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (grain, period, version, build, groups, coverage_devices, device_groups)
SELECT 'h', %s, %d, %d, %d, %d, -1`, s.table(tableBuilds), dt(old.Unix()), b.version+1, b.build, b.groups, b.devices)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.StaleHours(ctx, old, old.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("StaleHours of an hour without per-device rows = %d, %v; want 1", n, err)
	}
	check(t, day(window), func(p aggPlan) bool { return p.days == 1 && p.hours == 22 && p.raw == 2 })
	if err := s.RebuildRollups(ctx, from, from.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The forged hour is current, so it stays raw: a rebuild of a
	// current hour is never forced by a read.
	check(t, day(window), func(p aggPlan) bool { return p.days == 1 && p.hours == 23 && p.raw == 1 })

	// A day with three hours of rows: its per-device rows wait for all
	// its hours (its finer groupings read the hours), and a second rebuild
	// writes nothing (a day waiting for its hours is not rebuilt again
	// and again).
	partial := from.Add(72 * time.Hour)
	more := fleet(12, 2, 2, 3*60, partial)
	appendAll(t, s, more, 20000)
	rows = append(rows, more...)
	if err := s.RebuildRollups(ctx, partial, partial.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The newest build version of the day and its hours (merges may drop
	// older headers meanwhile, so rows are not counted).
	newest := func() uint64 {
		var v uint64
		q := fmt.Sprintf("SELECT max(version) FROM %s WHERE period >= %s", s.table(tableBuilds), dt(partial.Unix()))
		if err := s.query(ctx, "read the newest build", q, func(rs driver.Rows) error { return rs.Scan(&v) }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := newest()
	if err := s.RebuildRollups(ctx, partial, partial.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if after := newest(); after != before {
		t.Errorf("a second rebuild of current rollups wrote a build (newest version %d, was %d)", after, before)
	}
	pq := ledger.AggregateQuery{From: partial, To: partial.Add(24 * time.Hour), Location: time.UTC, Bucket: ledger.BucketDay}
	// The three hours from their rollups; the empty rest of the day has
	// no build and is one (empty) raw read.
	check(t, pq, func(p aggPlan) bool { return p.days == 0 && p.hours == 3 && p.raw == 1 })
}

// currentBuild is the newest build header of a period.
func currentBuild(t *testing.T, s *Store, grain string, at time.Time) header {
	t.Helper()
	var h header
	q := fmt.Sprintf(`SELECT max(version), argMax(build, version), argMax(groups, version), argMax(coverage_devices, version)
FROM %s WHERE grain = '%s' AND period = %s`, s.table(tableBuilds), grain, dt(at.Unix()))
	err := s.query(context.Background(), "read a build", q, func(rs driver.Rows) error {
		return rs.Scan(&h.version, &h.build, &h.groups, &h.devices)
	})
	if err != nil || h.build == 0 {
		t.Fatalf("no build of %s %s: %v", grain, at, err)
	}
	return h
}

// TestDaySumRefusesACopy: a day's per-device rows are summed from its
// hours' without FINAL, so a retried insert's copy of an hour's row must
// stop the sum, even when another hour comes up one row short and the
// day's count is right again; summed anyway, the copied row would be
// billed twice in the day's finer groupings.
func TestDaySumRefusesACopy(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	appendAll(t, s, fleet(9, 2, 2, 24*60, day), 20000)
	if err := s.RebuildRollups(ctx, day, day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Exec(ctx, "SYSTEM STOP MERGES "+s.table(tableDevHourly)); err != nil {
		t.Fatal(err)
	}
	builds := func() map[int64]header {
		st, err := s.loadState(ctx, day.Unix(), day.Unix()+86400)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]header{}
		for h := day.Unix(); h < day.Unix()+86400; h += 3600 {
			hd, ok := st.clean(period{grainHour, h})
			if !ok || hd.deviceGroups < 0 {
				t.Fatalf("hour %d not clean with per-device rows", h)
			}
			m[h] = hd
		}
		return m
	}
	if got, err := s.dayDevices(ctx, day.Unix(), builds()); err != nil || got == nil {
		t.Fatalf("a clean day was not summed: %v", err)
	}
	copied, short := day.Add(3*time.Hour), day.Add(4*time.Hour)
	if err := s.conn.Exec(ctx, fmt.Sprintf("INSERT INTO %[1]s SELECT * FROM %[1]s WHERE hour = %[2]s LIMIT 1", s.table(tableDevHourly), dt(copied.Unix()))); err != nil {
		t.Fatal(err)
	}
	if got, err := s.dayDevices(ctx, day.Unix(), builds()); err != nil || got != nil {
		t.Fatalf("a day with a copied row was summed (%d groups, %v)", len(got), err)
	}
	hd := builds()[short.Unix()]
	if err := s.conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (grain, period, version, build, groups, coverage_devices, device_groups)
SELECT 'h', %s, %d, %d, %d, %d, %d`, s.table(tableBuilds), dt(short.Unix()), hd.version+1, hd.build, hd.groups, hd.devices, hd.deviceGroups+1)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.dayDevices(ctx, day.Unix(), builds()); err != nil || got != nil {
		t.Fatalf("a day with a copied row and a short hour was summed (%d groups, %v)", len(got), err)
	}
}

// TestHourGroupsWithoutFinalAreFinals: an hour's per-device groups read
// without FINAL are FINAL's, to the bit (the fleet's numbers are
// multiples of 1/64), whenever no two rows share a sorting key; a copy of
// a row not yet merged away (a replay), or a row written again under
// another team (the same key in another group), is seen in the same read
// and sends the hour to FINAL, and the rollup's groups are then FINAL's.
// Merges are stopped so that the copies stay.
func TestHourGroupsWithoutFinalAreFinals(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.conn.Exec(ctx, "SYSTEM STOP MERGES "+s.table(tableRows)); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	rows := fleet(17, 3, 2, 4*60, from)
	appendAll(t, s, rows, 5000)
	hour := func(i int) []segment {
		h := from.Add(time.Duration(i) * time.Hour)
		return []segment{{level: levelRaw, from: h, to: h.Add(time.Hour)}}
	}
	final := func(segs []segment) map[int64]map[devKey]devGroup {
		got, err := s.rawHourGroupsFinal(ctx, segs, "")
		if err != nil {
			t.Fatal(err)
		}
		return byKey(got)
	}
	unique := func(segs []segment) (map[int64]map[devKey]devGroup, bool) {
		got, ok, err := s.rawHourGroupsUnique(ctx, segs)
		if err != nil {
			t.Fatal(err)
		}
		return byKey(got), ok
	}
	// Every hour alone, and all four in one query (a backfill's).
	all := []segment{{level: levelRaw, from: from, to: from.Add(4 * time.Hour)}}
	for _, segs := range [][]segment{hour(0), hour(1), hour(2), hour(3), all} {
		got, ok := unique(segs)
		if !ok {
			t.Fatalf("%s: rows with no copies were sent to FINAL", segs[0].from)
		}
		if want := final(segs); !reflect.DeepEqual(got, want) || len(want) == 0 {
			t.Fatalf("%s: without FINAL\n%v\nFINAL\n%v", segs[0].from, got, want)
		}
	}
	// A replay of part of hour 1: copies of its rows.
	var replay, relabel []attribution.Row
	for _, r := range rows {
		switch h := r.IntervalStart.Sub(from) / time.Hour; {
		case h == 1 && len(replay) < 7:
			replay = append(replay, r)
		case h == 2 && len(relabel) < 5 && r.Kind == attribution.KindContainer:
			r.Team = "relabelled"
			relabel = append(relabel, r)
		}
	}
	if len(replay) == 0 || len(relabel) == 0 {
		t.Fatal("the fleet has no rows to copy or relabel")
	}
	appendAll(t, s, replay, 5000)
	appendAll(t, s, relabel, 5000)
	for i, want := range []bool{true, false, false, true} {
		if _, ok := unique(hour(i)); ok != want {
			t.Errorf("hour %d: read without FINAL %v, want %v", i, ok, want)
		}
	}
	if _, ok := unique(all); ok {
		t.Error("four hours with copies among them were read without FINAL")
	}
	// The rollup's groups are FINAL's either way.
	for i := range 4 {
		b := &build{}
		builds := map[int64]*build{from.Add(time.Duration(i) * time.Hour).Unix(): b}
		var mu sync.Mutex
		if err := s.rawHourGroups(ctx, hour(i), 1, builds, &mu); err != nil {
			t.Fatal(err)
		}
		got := byKey(map[int64][]devGroup{from.Add(time.Duration(i) * time.Hour).Unix(): b.devGroups})
		if want := final(hour(i)); !reflect.DeepEqual(got, want) {
			t.Errorf("hour %d: the rollup's groups are not FINAL's", i)
		}
	}
	relabelled := final(hour(2))
	n := 0
	for k := range relabelled[from.Add(2*time.Hour).Unix()] {
		if k.group.team == "relabelled" {
			n++
		}
	}
	if n == 0 {
		t.Error("FINAL did not keep the relabelled rows: the test proves nothing")
	}
}

// byKey is groups per hour by their key, to compare regardless of order.
func byKey(got map[int64][]devGroup) map[int64]map[devKey]devGroup {
	out := map[int64]map[devKey]devGroup{}
	for h, gs := range got {
		out[h] = map[devKey]devGroup{}
		for _, g := range gs {
			out[h][g.key] = g
		}
	}
	return out
}
