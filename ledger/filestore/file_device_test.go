package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// aggregateDevicesRaw is the ByDevice reference: each bucket summed from
// the raw rows only, one deviceAggregateSQL read per 15-minute piece
// (found with time.Truncate), added in time order. It never reads
// ledger_rollup_device or rollup_dirty.
func aggregateDevicesRaw(t *testing.T, s *FileStore, q ledger.AggregateQuery) []ledger.Aggregate {
	t.Helper()
	ctx := context.Background()
	bs, err := queryBuckets(q)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[accKey[deviceKey]]int{}
	var out []ledger.Aggregate
	var grps []int64
	for bi, b := range bs {
		for _, p := range rawPieces(t, s, b.lo, b.hi) {
			rs, err := s.r.QueryContext(ctx, deviceAggregateSQL, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			for rs.Next() {
				var g deviceSums
				if err := rs.Scan(&g.key.grp, &g.key.gpu, &g.key.slice, &g.key.pod, &g.profile, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
					t.Fatal(err)
				}
				k := accKey[deviceKey]{bi, g.key}
				i, ok := idx[k]
				if !ok {
					i = len(out)
					idx[k] = i
					out = append(out, ledger.Aggregate{BucketStart: b.start, GPUUUID: g.key.gpu, SliceID: g.key.slice, Pod: g.key.pod})
					grps = append(grps, g.key.grp)
				}
				a := &out[i]
				a.AllocatedSeconds += g.alloc
				a.UsedSeconds += g.used
				a.MemoryMiBSeconds += g.mem
				a.EnergyJoules += g.energy
				a.Rows += g.rows
				a.MIGProfile = max(a.MIGProfile, g.profile)
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
			rs.Close()
		}
	}
	for i := range out {
		g, err := s.groups.key(ctx, s.w, grps[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i].Team, out[i].Namespace, out[i].GPUModel, out[i].Mode, out[i].Kind = g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
	}
	ledger.SortDeviceAggregates(out)
	return out
}

type devKey struct {
	aggKey
	gpu, slice, pod string
}

// checkDevices compares ByDevice aggregates with the rows summed in Go
// per device group (to rounding), and their sums per report group with
// the plain Aggregate.
func checkDevices(t *testing.T, got, plain []ledger.Aggregate, rows map[rowKey]attribution.Row, q ledger.AggregateQuery) {
	t.Helper()
	want := map[devKey]aggSum{}
	for _, r := range rows {
		if !q.From.IsZero() && r.IntervalStart.Before(q.From) || !q.To.IsZero() && !r.IntervalStart.Before(q.To) {
			continue
		}
		k := devKey{aggKey{label(r.IntervalStart, q.Location, q.Bucket), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind)}, r.GPUUUID, r.SliceID, r.Pod}
		s := want[k]
		s.alloc += r.AllocatedGPUSeconds
		s.used += r.UsedGPUSeconds
		s.mem += r.MemoryMiBSeconds
		s.energy += r.EnergyJoules
		s.n++
		want[k] = s
	}
	up := map[aggKey]aggSum{}
	for _, a := range got {
		k := devKey{aggKey{label(a.BucketStart, q.Location, q.Bucket), a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind)}, a.GPUUUID, a.SliceID, a.Pod}
		w, ok := want[k]
		if !ok {
			t.Fatalf("query %s: unexpected device group %+v", describe(q), k)
		}
		if a.Rows != w.n || !near(a.AllocatedSeconds, w.alloc) || !near(a.UsedSeconds, w.used) ||
			!near(a.MemoryMiBSeconds, w.mem) || !near(a.EnergyJoules, w.energy) {
			t.Fatalf("query %s device group %+v: got %+v, want %+v", describe(q), k, a, w)
		}
		delete(want, k)
		s := up[k.aggKey]
		s.alloc += a.AllocatedSeconds
		s.used += a.UsedSeconds
		s.mem += a.MemoryMiBSeconds
		s.energy += a.EnergyJoules
		s.n += a.Rows
		up[k.aggKey] = s
	}
	if len(want) > 0 {
		t.Fatalf("query %s: %d device groups missing", describe(q), len(want))
	}
	checkModel(t, plain, up, q)
}

func (l *randomLedger) checkDevices(n int) {
	l.t.Helper()
	for range n {
		q := l.randomQuery()
		plain := l.aggregate(q)
		dq := q
		dq.ByDevice = true
		got := l.aggregate(dq)
		if want := aggregateDevicesRaw(l.t, l.s, q); !reflect.DeepEqual(got, want) {
			l.t.Fatalf("query %s: device rollup and raw scan differ:\n got %d aggregates\nwant %d aggregates", describe(q), len(got), len(want))
		}
		checkDevices(l.t, got, plain, l.model, q)
	}
}

// TestDeviceRollupMatchesRawScan is TestRollupMatchesRawScan for ByDevice:
// after out-of-order writes, replays, corrections (some moving a row to
// another group) and prunes, every random query equals the raw reference
// bit for bit and the rows summed in Go to rounding, and its device groups
// add up to the plain aggregate.
func TestDeviceRollupMatchesRawScan(t *testing.T) {
	seeds := len(rollupAnchors)
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			l := newRandomLedger(t, seed+100)
			l.fill()
			l.checkDevices(4)
			l.churn(5, func() { l.checkDevices(2) })
			checkDeviceRollupTable(t, l.s)
		})
	}
}

// checkDeviceRollupTable compares every clean slot's device rollup rows
// with a raw read of the slot.
func checkDeviceRollupTable(t *testing.T, s *FileStore) {
	t.Helper()
	ctx := context.Background()
	dirty, err := dirtySlots(ctx, s.r, minSlot, maxSlot+1, true)
	if err != nil {
		t.Fatal(err)
	}
	skip := map[int64]bool{}
	for _, d := range dirty {
		skip[d] = true
	}
	got := map[int64]map[deviceKey]deviceSums{}
	rs, err := s.r.Query("SELECT slot, grp, gpu_uuid, slice_id, pod, mig_profile, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows FROM ledger_rollup_device")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var slot int64
		var g deviceSums
		if err := rs.Scan(&slot, &g.key.grp, &g.key.gpu, &g.key.slice, &g.key.pod, &g.profile, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			t.Fatal(err)
		}
		if skip[slot] {
			continue
		}
		if got[slot] == nil {
			got[slot] = map[deviceKey]deviceSums{}
		}
		got[slot][g.key] = g
	}
	rs.Close()
	want := map[int64]map[deviceKey]deviceSums{}
	srs, err := s.r.Query("SELECT DISTINCT " + slotExpr + " FROM ledger_rows")
	if err != nil {
		t.Fatal(err)
	}
	var slots []int64
	for srs.Next() {
		var slot int64
		if err := srs.Scan(&slot); err != nil {
			t.Fatal(err)
		}
		slots = append(slots, slot)
	}
	srs.Close()
	for _, slot := range slots {
		if skip[slot] {
			continue
		}
		rs, err := s.r.Query(deviceAggregateSQL, slotStart(slot), slotEnd(slot))
		if err != nil {
			t.Fatal(err)
		}
		m := map[deviceKey]deviceSums{}
		for rs.Next() {
			var g deviceSums
			if err := rs.Scan(&g.key.grp, &g.key.gpu, &g.key.slice, &g.key.pod, &g.profile, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
				t.Fatal(err)
			}
			g.sums.grp = g.key.grp
			m[g.key] = g
		}
		rs.Close()
		want[slot] = m
	}
	for slot, m := range got {
		for k, v := range m {
			v.sums.grp = k.grp
			m[k] = v
		}
		if !maps.Equal(m, want[slot]) {
			t.Fatalf("device rollup of slot %s differs from its raw rows", slotName(slot))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("device rollup has %d clean slots, raw rows %d", len(got), len(want))
	}
}

// TestMigrateVersion3BuildsDeviceRollup: a version 3 file (no device
// rollup) opened by this build gets the table, built from its rows: every
// clean slot equals a raw read, the ByDevice aggregates are what they were
// and the slot rollup is untouched; opening it again changes nothing.
func TestMigrateVersion3BuildsDeviceRollup(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := fleetRows(t0, 90, time.Minute, 3)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	q := ledger.AggregateQuery{From: t0, To: t0.Add(2 * time.Hour), Location: time.UTC, Bucket: ledger.BucketHour, ByDevice: true}
	before, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	slotRollup := dumpRollup(t, s.r, nil)
	s.Close()

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(undoSchema4and5 + "PRAGMA user_version = 3"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for i := range 2 {
		s, err := OpenFile(ctx, path, FileOptions{MustExist: true})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var v, n int
		if err := s.r.QueryRow("SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM ledger_rollup_device)").Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		if v != FileSchemaVersion || n == 0 {
			t.Fatalf("open %d: schema %d, %d device rollup rows", i, v, n)
		}
		checkDeviceRollupTable(t, s)
		if !reflect.DeepEqual(dumpRollup(t, s.r, nil), slotRollup) {
			t.Fatalf("open %d: the migration changed the slot rollup", i)
		}
		after, err := s.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("open %d: ByDevice aggregates after migration differ from before", i)
		}
		s.Close()
	}
}
