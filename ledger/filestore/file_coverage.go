package filestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// The file ledger's coverage search reads raw rows only where it must.
// The per-device rollup (ledger_rollup_device) gives each GPU's held
// partition per 15-minute slot: its containers' allocated seconds plus
// its unallocated seconds, which closes to the seconds its rows cover
// (README: both partitions close for every GPU and interval). A clean slot
// in which every GPU that has rows covers the slot's 900 seconds has no
// hole, and is not read. The rest (dirty slots, each GPU's first and last
// slot, the range's edges, slots where a GPU covers less or more, or has
// no rows between two slots that have) is read raw with one slot of
// context on each side, and the holes are found there between the GPU's
// intervals. A gap between two raw intervals that spans a whole unread
// slot of the GPU is not a hole. A month of a minute-interval fleet with
// no gap reads a few slots per GPU instead of every row.

// coverageIntervalsSQL is each GPU's distinct intervals of [?1, ?2): the
// longest end of each start.
const coverageIntervalsSQL = `SELECT %[1]s, node, gpu_uuid, interval_start_ns, max(interval_end_ns)
FROM ledger_rows WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY interval_start_ns, %[1]s, node, gpu_uuid`

// coverageSlotsSQL is each GPU's held partition per clean slot of
// [?1, ?2] (slot numbers), from the per-device rollup; a GPU is named by
// its cluster, a NUL and its UUID (gpuName).
const coverageSlotsSQL = `SELECT d.slot, %[1]s || char(0) || d.gpu_uuid,
	total(CASE WHEN g.kind IN ('container', 'unallocated') THEN d.allocated_gpu_seconds ELSE 0 END)
FROM ledger_rollup_device d JOIN row_groups g ON g.id = d.grp
WHERE d.slot >= ?1 AND d.slot <= ?2
GROUP BY d.slot, %[1]s, d.gpu_uuid`

// wholeSlotTolerance is how far a slot's held seconds may be from 900 and
// still be whole: float sums of a slot's rows, not a second of time.
const wholeSlotTolerance = 1e-3

type covKey struct{ cluster, node, gpu string }

// gpuName names a GPU of the fleet in the maps of Coverage: two clusters
// may each have a GPU of one UUID.
func gpuName(cluster, gpu string) string { return cluster + "\x00" + gpu }

type span struct{ s, e int64 }

// Coverage implements CoverageReader on the file's rows.
func (s *FileStore) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	fail := func(err error) (ledger.Coverage, error) {
		return ledger.Coverage{}, fmt.Errorf("cannot read the ledger's coverage in %s: %w", s.path, s.describe(err))
	}
	lo, hi := nsBound(from, math.MinInt64), nsBound(to, math.MaxInt64)
	if lo >= hi {
		return ledger.Coverage{}, nil
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	first, last := slotOf(lo), slotOf(hi-1)
	if last-first > 1<<22 { // an open range: read it raw
		return s.coverageRead(ctx, tx, []span{{lo, hi}}, nil)
	}
	dirty, err := dirtySlots(ctx, tx, first, last+1, false)
	if err != nil {
		return fail(err)
	}
	candidate := map[int64]bool{first: true, last: true}
	for _, d := range dirty {
		candidate[d] = true
	}
	held := map[string]map[int64]float64{} // GPU -> slot -> seconds
	gcol := "'" + attribution.DefaultCluster + "'"
	if s.hasCluster {
		gcol = "g.cluster"
	}
	rs, err := tx.QueryContext(ctx, fmt.Sprintf(coverageSlotsSQL, gcol), first, last)
	if err != nil {
		return fail(err)
	}
	for rs.Next() {
		var slot int64
		var gpu string
		var secs float64
		if err := rs.Scan(&slot, &gpu, &secs); err != nil {
			rs.Close()
			return fail(err)
		}
		if held[gpu] == nil {
			held[gpu] = map[int64]float64{}
		}
		held[gpu][slot] = secs
	}
	if err := rs.Err(); err != nil {
		rs.Close()
		return fail(err)
	}
	rs.Close()
	whole := map[string]map[int64]bool{}
	for gpu, slots := range held {
		ks := make([]int64, 0, len(slots))
		for k := range slots {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		candidate[ks[0]], candidate[ks[len(ks)-1]] = true, true
		whole[gpu] = map[int64]bool{}
		for i, k := range ks {
			if math.Abs(slots[k]-float64(slotNS/int64(time.Second))) > wholeSlotTolerance {
				candidate[k] = true
			} else {
				whole[gpu][k] = true
			}
			if i > 0 && k > ks[i-1]+1 {
				for m := ks[i-1]; m <= k; m++ {
					candidate[m] = true // no rows between two slots that have
				}
			}
		}
	}
	// Read the candidate slots and one slot each side, as ranges.
	read := map[int64]bool{}
	for k := range candidate {
		for _, m := range []int64{k - 1, k, k + 1} {
			if m >= first && m <= last {
				read[m] = true
			}
		}
	}
	ks := make([]int64, 0, len(read))
	for k := range read {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var ranges []span
	for _, k := range ks {
		a, b := max(slotStart(k), lo), min(slotStart(k+1), hi)
		if n := len(ranges); n > 0 && ranges[n-1].e == a {
			ranges[n-1].e = b
		} else {
			ranges = append(ranges, span{a, b})
		}
	}
	unread := func(gpu string, a, b int64) bool {
		for k := slotOf(a); k <= slotOf(b-1); k++ {
			if !read[k] && whole[gpu][k] {
				return true
			}
		}
		return false
	}
	return s.coverageRead(ctx, tx, ranges, unread)
}

// coverageRead finds the holes from the raw intervals of ranges; a gap
// for which sealed says a whole unread slot lies between is not one.
func (s *FileStore) coverageRead(ctx context.Context, tx *sql.Tx, ranges []span, sealed func(gpu string, a, b int64) bool) (ledger.Coverage, error) {
	fail := func(err error) (ledger.Coverage, error) {
		return ledger.Coverage{}, fmt.Errorf("cannot read the ledger's coverage in %s: %w", s.path, s.describe(err))
	}
	ivs := map[covKey][]span{}
	for _, r := range ranges {
		rs, err := tx.QueryContext(ctx, fmt.Sprintf(coverageIntervalsSQL, s.clusterCol()), r.s, r.e)
		if err != nil {
			return fail(err)
		}
		for rs.Next() {
			var k covKey
			var iv span
			if err := rs.Scan(&k.cluster, &k.node, &k.gpu, &iv.s, &iv.e); err != nil {
				rs.Close()
				return fail(err)
			}
			ivs[k] = append(ivs[k], iv)
		}
		if err := rs.Err(); err != nil {
			rs.Close()
			return fail(err)
		}
		rs.Close()
	}
	keys := make([]covKey, 0, len(ivs))
	for k := range ivs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b covKey) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.node, b.node), cmp.Compare(a.gpu, b.gpu))
	})
	var out ledger.Coverage
	n := 0
	for _, k := range keys {
		iv := ivs[k]
		slices.SortFunc(iv, func(a, b span) int { return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.e, b.e)) })
		d := ledger.DeviceCoverage{Cluster: k.cluster, Node: k.node, GPUUUID: k.gpu, First: time.Unix(0, iv[0].s).UTC()}
		end := iv[0].e
		for _, x := range iv[1:] {
			if x.s > end && (sealed == nil || !sealed(gpuName(k.cluster, k.gpu), end, x.s)) {
				if n++; n > ledger.MaxCoverageHoles {
					out.Truncated = true
				} else {
					d.Holes = append(d.Holes, ledger.Hole{From: time.Unix(0, end).UTC(), To: time.Unix(0, x.s).UTC()})
				}
			}
			end = max(end, x.e)
		}
		d.Last = time.Unix(0, end).UTC()
		out.Devices = append(out.Devices, d)
	}
	return out, nil
}

var _ ledger.CoverageReader = (*FileStore)(nil)
