package filestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
)

// aggregateSQL sums the raw rows of [?1, ?2) per group: the raw path, for
// the slots the rollup cannot answer. Its SELECT is also rollupSQL's, which
// is what makes a rollup row equal a raw read of its slot. Grouping by the
// integer grp keeps SQLite's sort cheap; names come from the group cache.
const aggregateSQL = `SELECT grp, total(allocated_gpu_seconds), total(used_gpu_seconds),
	total(memory_mib_seconds), total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY grp`

// rollupRowsSQL reads the rollup in key order, from its first row or the
// slots of ?1 to ?2: see streamRollup. The first %s is chk, or 0 in a file
// without checksums; the second is "" or the WHERE clause of a seek.
const rollupRowsSQL = `SELECT slot, grp, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows, %s
FROM ledger_rollup %s
ORDER BY slot, grp`

// Aggregate sums the rows of [q.From, q.To) per calendar bucket of
// q.Location (boundaries from calendarBuckets), team, namespace, GPU model,
// sharing mode and kind, ordered by those. With BucketNone a zero From or
// To is open-ended. All buckets are read from one snapshot.
//
// Each bucket is the sum, in slot order, of its 15-minute slots: whole
// slots come from the rollup, slots it holds only in part and slots whose
// rollup is stale from the raw rows. Either way a slot's sums are what
// aggregateSQL gives for it, so the result does not depend on the rollup's
// state. Every rollup row and dirty mark read is checked against its
// checksum, and the raw rows read against theirs and, for a slot that
// has a rollup, against it: a damaged file gives an error naming it
// (ErrCorrupt), never a short sum. Each rollup is walked from its first
// row once per generation of the file and read by seeks, compared with
// that walk, after (readRollup). ByDevice runs the same path on the
// per-device tables (deviceGrain); ByNode sums its result per node
// (aggregateNodes).
func (s *FileStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if err := ledger.CheckAggregateCluster(q); err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	as, err := s.aggregate(ctx, q)
	if err != nil {
		return nil, err
	}
	// The groups carry the cluster, so every grain sums per cluster;
	// the filter and the fleet's sums are taken here.
	return ledger.FoldClusters(as, q), nil
}

func (s *FileStore) aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.ByNode {
		if q.ByDevice {
			return nil, fmt.Errorf("cannot aggregate ledger %s: ByNode and ByDevice together", s.path)
		}
		return s.aggregateNodes(ctx, q)
	}
	if q.ByDevice {
		return aggregateGrain(ctx, s, q, &deviceGrain)
	}
	return aggregateGrain(ctx, s, q, &teamGrain)
}

// aggRow is one group's totals over some rows, a rollup row or a raw read,
// as a grain keys them: K is the group key within a bucket.
type aggRow[K comparable] interface {
	comparable // a raw read of a slot is compared with its rollup rows
	rowKey() K
	rowGrp() int64
	rowSums() sums
	rowProfile() string
}

// grain is what one kind of Aggregate groups by: its raw statement, its
// rollup, the columns they read and the order of its result. Every grain
// shares the slot plan, the rollup/raw stitching and the accumulation.
type grain[K comparable, R aggRow[K]] struct {
	per string // appended to "cannot aggregate ledger <path>" in errors
	// rawSQL sums the raw rows of [?1, ?2) per group; rollupSQL reads the
	// same columns, after the slot and before the checksum, from the
	// rollup rows in key order (a format with two %s: the checksum column
	// and a WHERE clause on the slot, see rollupRowsSQL).
	rawSQL, rollupSQL string
	rollup            string // the rollup's name in errors
	cache             int    // the grain's index in FileStore.rollups
	dest              func(r *R) []any
	// checksum is what chkFunc gives for a rollup row of slot holding r;
	// before says whether (slot, a) sorts strictly before (next, b) in the
	// rollup's key order.
	checksum func(slot int64, r *R) int64
	before   func(slot int64, a *R, next int64, b *R) bool
	// fill sets a new aggregate's fields from the grain's own key columns;
	// the group's names are filled in after.
	fill func(a *ledger.Aggregate, k K)
	sort func([]ledger.Aggregate)
}

// aggregateGrain is Aggregate for one grain.
func aggregateGrain[K comparable, R aggRow[K]](ctx context.Context, s *FileStore, q ledger.AggregateQuery, gr *grain[K, R]) ([]ledger.Aggregate, error) {
	fail := func(err error) ([]ledger.Aggregate, error) {
		return nil, fmt.Errorf("cannot aggregate ledger %s%s: %w", s.path, gr.per, err)
	}
	bs, err := queryBuckets(q)
	if err != nil {
		return fail(err)
	}
	// The generation is read before the snapshot: a commit between the
	// two makes the record newer than its generation, never older.
	rr := &rollupRead{cache: &s.rollups[gr.cache], gen: s.generation()}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	acc, err := aggregateSlots(ctx, tx, bs, gr, s.hasChk, rr)
	if err != nil {
		return fail(s.describe(err))
	}
	if err := s.nameGroups(ctx, acc.out, acc.grps); err != nil {
		return fail(err)
	}
	gr.sort(acc.out)
	return acc.out, nil
}

// aggregateSlots reads the raw pieces, then streams the rollup rows of the
// whole slots, adding both to the buckets in slot order. verify: the file
// has checksums; rr: how to read the rollup (readRollup), nil to walk it.
func aggregateSlots[K comparable, R aggRow[K]](ctx context.Context, tx *sql.Tx, bs []bucket, gr *grain[K, R], verify bool, rr *rollupRead) (*accumulator[K, R], error) {
	marks, err := dirtyMarks(ctx, tx, slotOf(bs[0].lo), slotOf(bs[len(bs)-1].hi)+1, verify)
	if err != nil {
		return nil, err
	}
	dirty := make([]int64, len(marks))
	for i, m := range marks {
		dirty[i] = m.slot
	}
	p := planSlots(bs, dirty)
	raw, err := readRaw(ctx, tx, p.raw, gr)
	if err != nil {
		return nil, err
	}
	if verify {
		if err := checkDirty(ctx, tx, p.raw, marks); err != nil {
			return nil, err
		}
	}
	// The clean slots read raw in part (a bucket's edges) are also read
	// whole and compared with their rollup rows: a damaged raw page that
	// hides rows from the index the raw read walks is found there.
	var edges []int64
	for _, pc := range p.raw {
		if _, isDirty := slices.BinarySearch(dirty, pc.slot); !isDirty {
			edges = append(edges, pc.slot)
		}
	}
	slices.Sort(edges)
	edges = slices.Compact(edges)
	// stream adds the raw pieces and the rollup rows, read as m says, to
	// a new accumulator: a seek that fails its record is read again.
	stream := func(m streamMode) (*accumulator[K, R], map[int64][]R, []slotDigest, error) {
		edgeRollup := map[int64][]R{}
		acc := newAccumulator[K, R](bs, gr.fill)
		next := 0
		// addRaw adds the raw pieces of the slots before slot.
		addRaw := func(slot int64) {
			for ; next < len(p.raw) && p.raw[next].slot < slot; next++ {
				for i := range raw[next] {
					acc.add(p.raw[next].bucket, &raw[next][i])
				}
			}
		}
		seen, err := streamRollup(ctx, tx, &p, gr, m, edges, func(slot int64, bucket int, r *R) {
			addRaw(slot)
			acc.add(bucket, r)
		}, func(slot int64, r *R) { edgeRollup[slot] = append(edgeRollup[slot], *r) })
		if err != nil {
			return nil, nil, nil, err
		}
		addRaw(math.MaxInt64)
		return acc, edgeRollup, seen, nil
	}
	acc, edgeRollup, err := readRollup(ctx, stream, gr, verify, rr)
	if err != nil {
		return nil, err
	}
	if err := checkEdges(ctx, tx, gr, edges, edgeRollup); err != nil {
		return nil, err
	}
	return acc, nil
}

// rollupRead is where a grain's verified record is kept (rollup_verified.go)
// and the file generation read before the read's snapshot began.
type rollupRead struct {
	cache *rollupCache
	gen   fileGen
}

// streamMode says how streamRollup reads: a seek compared with a verified
// record, or a walk from the first row that, with record, goes on to the
// last row and returns what it saw.
type streamMode struct {
	verify bool
	seek   *verifiedRollup
	record bool
}

// errRollupMoved: a seek returned other rows than its record holds. It
// never leaves readRollup.
var errRollupMoved = errors.New("the rollup differs from its verified record")

// readRollup runs stream as the record of rr allows: a seek when the
// record is of this generation (made by another read's walk in flight,
// which it waits for), else (or when the seek disagrees with the record)
// a walk that makes a new one. A seek that disagrees with the walk
// just made in the same snapshot is a damaged index.
func readRollup[K comparable, R aggRow[K]](ctx context.Context, stream func(streamMode) (*accumulator[K, R], map[int64][]R, []slotDigest, error),
	gr *grain[K, R], verify bool, rr *rollupRead) (*accumulator[K, R], map[int64][]R, error) {
	if !verify || rr == nil || !rr.gen.ok {
		acc, edges, _, err := stream(streamMode{verify: verify})
		return acc, edges, err
	}
	moved := false
	v, release := rr.cache.wait(ctx, rr.gen)
	if release != nil {
		defer release()
	}
	if v != nil {
		acc, edges, _, err := stream(streamMode{verify: true, seek: v})
		if !errors.Is(err, errRollupMoved) {
			return acc, edges, err
		}
		moved = true
		rr.cache.moved.Add(1)
	}
	acc, edges, seen, err := stream(streamMode{verify: true, record: true})
	if err != nil || seen == nil {
		return acc, edges, err
	}
	v = &verifiedRollup{gen: rr.gen, slots: seen}
	if moved {
		// The walk passed: either the file changed unseen by its
		// generation, and the seek now agrees, or the seek itself goes
		// astray.
		if _, _, _, err := stream(streamMode{verify: true, seek: v}); errors.Is(err, errRollupMoved) {
			return nil, nil, errDamaged("a seek into the %s by its index returns other rows than a walk of it from its first row", gr.rollup)
		} else if err != nil {
			return nil, nil, err
		}
	}
	rr.cache.put(v)
	return acc, edges, nil
}

// streamRollup calls fn, in slot order, with the rollup rows that answer
// for whole, clean slots of p's buckets, and edge with the rows of the
// slots in edges (sorted).
//
// A walk (m.seek nil) reads the rollup from its first row rather than
// seeking the first slot wanted: a seek follows the keys of the b-tree's
// interior pages, which no check of SQLite's compares, so one flipped bit
// there can land it past rows it should have returned. A walk visits every
// row, each is checked against its checksum and against the key before
// it, and the walk ends at the first row past the last slot wanted,
// checked as well: no row can be skipped or end the walk early without an
// error. With m.record it goes on to the last row and returns each slot's
// digest: nil past maxVerifiedSlots, when nothing was to be read, or when
// a row after that first one past the period is damaged (not this read's
// rows: it answers, and no record is made).
//
// A seek (m.seek set) reads the slots wanted only, checks each row as the
// walk does, and compares each slot's count and digest with the record of
// a walk: errRollupMoved if any slot differs, is missing or is new.
func streamRollup[K comparable, R aggRow[K]](ctx context.Context, tx *sql.Tx, p *slotPlan, gr *grain[K, R], m streamMode, edges []int64,
	fn func(slot int64, bucket int, r *R), edge func(slot int64, r *R)) ([]slotDigest, error) {
	lo, hi := p.whole[0].lo, p.whole[len(p.whole)-1].hi
	if lo >= hi && len(edges) == 0 {
		return nil, nil // nothing to read: no record made either
	}
	if len(edges) > 0 {
		hi = max(hi, edges[len(edges)-1]+1)
		lo = min(lo, edges[0])
	}
	chk, where, args := "0", "", []any(nil)
	if m.verify {
		chk = "chk"
	}
	if m.seek != nil {
		if lo >= hi {
			return nil, nil
		}
		where, args = "WHERE slot >= ?1 AND slot < ?2", []any{lo, hi}
	}
	rs, err := tx.QueryContext(ctx, fmt.Sprintf(gr.rollupSQL, chk, where), args...)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", gr.rollup, err)
	}
	defer rs.Close()
	var (
		slot, sum, prevSlot int64
		r, prev             R
		first               = true
		seen                []slotDigest // the walk's record, or the seek's current slot
		want                int          // the seek: the record's entry of the next slot
	)
	record := m.record
	if m.seek != nil {
		want = m.seek.at(lo)
	}
	// past: a record's walk has verified the first row past the period,
	// where a plain walk ends. Damage found after it is no part of this
	// read: the walk answers as a plain one would, and makes no record.
	past := false
	failed := func(err error) ([]slotDigest, error) {
		if past {
			return nil, nil
		}
		return nil, err
	}
	// done compares the seek's last slot with the record.
	done := func() bool {
		if len(seen) == 0 {
			return true
		}
		ok := want < len(m.seek.slots) && m.seek.slots[want] == seen[0]
		want++
		seen = seen[:0]
		return ok
	}
	dest := append(append([]any{&slot}, gr.dest(&r)...), &sum)
	walk := p.walker()
	nextEdge := 0
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			// The writer stores numbers in the number columns: a
			// text there is a flipped type in the record.
			return failed(errDamaged("cannot read %s: %v", gr.rollup, err))
		}
		if m.verify {
			c := gr.checksum(slot, &r)
			if sum != 0 && sum != c {
				return failed(errDamaged("a row of the %s in slot %s fails its checksum", gr.rollup, slotName(slot)))
			}
			if record || m.seek != nil {
				if len(seen) == 0 || seen[len(seen)-1].slot != slot {
					if m.seek != nil && !done() {
						return nil, errRollupMoved
					}
					if record && len(seen) == maxVerifiedSlots {
						seen, record = nil, false // too many to keep: a plain walk
					} else {
						seen = append(seen, slotDigest{slot: slot})
					}
				}
				if len(seen) > 0 {
					d := &seen[len(seen)-1]
					d.rows, d.sum = d.rows+1, digestAdd(d.sum, c)
				}
			}
		}
		if !first && !gr.before(prevSlot, &prev, slot, &r) {
			return failed(errDamaged("the %s's rows are out of key order at slot %s", gr.rollup, slotName(slot)))
		}
		first, prevSlot, prev = false, slot, r
		if slot >= hi {
			if record {
				past = true
				continue
			}
			break
		}
		if slot < lo {
			continue
		}
		for nextEdge < len(edges) && edges[nextEdge] < slot {
			nextEdge++
		}
		if nextEdge < len(edges) && edges[nextEdge] == slot {
			edge(slot, &r)
		}
		if b, ok := walk.bucket(slot); ok {
			fn(slot, b, &r)
		}
	}
	if err := rs.Err(); err != nil {
		return failed(fmt.Errorf("cannot read %s: %w", gr.rollup, err))
	}
	if m.seek != nil && (!done() || want < m.seek.at(hi)) {
		return nil, errRollupMoved
	}
	if !record {
		return nil, nil
	}
	if seen == nil {
		seen = []slotDigest{} // an empty rollup is a record too
	}
	return seen, nil
}

// checkEdges reads each slot of edges whole from the raw rows and compares
// it with its rollup rows, which the rollup's writer computed by the same
// statement: they are equal bit for bit unless the file is damaged.
func checkEdges[K comparable, R aggRow[K]](ctx context.Context, tx *sql.Tx, gr *grain[K, R], edges []int64, rollup map[int64][]R) error {
	if len(edges) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, gr.rawSQL)
	if err != nil {
		return fmt.Errorf("cannot prepare raw aggregate: %w", err)
	}
	defer st.Close()
	for _, e := range edges {
		raw, err := rawRows(ctx, st, slotStart(e), slotEnd(e), gr.dest)
		if err != nil {
			return fmt.Errorf("cannot sum ledger rows of slot %s: %w", slotName(e), err)
		}
		want := make(map[K]R, len(rollup[e]))
		for _, r := range rollup[e] {
			want[r.rowKey()] = r
		}
		same := len(raw) == len(want)
		for i := 0; same && i < len(raw); i++ {
			w, ok := want[raw[i].rowKey()]
			same = ok && w == raw[i]
		}
		if !same {
			return errDamaged("the raw rows of slot %s disagree with its %s", slotName(e), gr.rollup)
		}
	}
	return nil
}

// readRaw runs the grain's raw statement for every raw piece; out[i] is
// pieces[i]'s groups.
func readRaw[K comparable, R aggRow[K]](ctx context.Context, tx *sql.Tx, pieces []rawPiece, gr *grain[K, R]) ([][]R, error) {
	if len(pieces) == 0 {
		return nil, nil
	}
	st, err := tx.PrepareContext(ctx, gr.rawSQL)
	if err != nil {
		return nil, fmt.Errorf("cannot prepare raw aggregate: %w", err)
	}
	defer st.Close()
	out := make([][]R, len(pieces))
	for i, pc := range pieces {
		if out[i], err = rawRows(ctx, st, pc.lo, pc.hi, gr.dest); err != nil {
			return nil, fmt.Errorf("cannot sum ledger rows in [%s, %s): %w", ledger.FormatTime(fromNS(pc.lo)), ledger.FormatTime(fromNS(pc.hi)), err)
		}
	}
	return out, nil
}

// Checks of a dirty slot's raw rows, which no rollup row vouches for.
// badRowsSQL counts the rows of [?1, ?2) that fail their checksum, read
// through the key index as the raw statements read them, so that the
// index's copies of the key columns are checked too; indexRowsSQL counts
// them through the index and tableRowsSQL through the table, from the
// mark's lowest seq on: a flipped bit in an index page that hides a row
// from the index (or shows one twice) makes the two counts differ.
const (
	indexRowsSQL = `SELECT count(*) FROM ledger_rows INDEXED BY ledger_rows_key WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2`
	tableRowsSQL = `SELECT count(*) FROM ledger_rows NOT INDEXED WHERE seq >= ?3 AND interval_start_ns >= ?1 AND interval_start_ns < ?2`
)

// checkDirty checks the dirty slots that pieces read: every row against
// its checksum, and the count of rows through the index against the
// count through the table. It reads each such slot twice more; the
// dirty slot is the one the collector is writing, 15 minutes of rows.
func checkDirty(ctx context.Context, tx *sql.Tx, pieces []rawPiece, marks []dirtyMark) error {
	done := map[int64]bool{}
	for _, pc := range pieces {
		i, ok := slices.BinarySearchFunc(marks, pc.slot, func(m dirtyMark, s int64) int { return cmp.Compare(m.slot, s) })
		if !ok || done[pc.slot] {
			continue
		}
		done[pc.slot] = true
		m := marks[i]
		lo, hi := slotStart(m.slot), slotEnd(m.slot)
		var bad, viaIndex, viaTable int64
		q, err := badRowsSQL(ctx, tx)
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, q, lo, hi).Scan(&bad); err != nil {
			return fmt.Errorf("cannot check ledger rows of slot %s: %w", slotName(m.slot), err)
		}
		if bad > 0 {
			return errDamaged("%d ledger rows of slot %s fail their checksums", bad, slotName(m.slot))
		}
		if m.seq <= 0 {
			continue // a mark from before the file had checksums
		}
		if err := tx.QueryRowContext(ctx, indexRowsSQL, lo, hi).Scan(&viaIndex); err != nil {
			return fmt.Errorf("cannot check ledger rows of slot %s: %w", slotName(m.slot), err)
		}
		if err := tx.QueryRowContext(ctx, tableRowsSQL, lo, hi, m.seq).Scan(&viaTable); err != nil {
			return fmt.Errorf("cannot check ledger rows of slot %s: %w", slotName(m.slot), err)
		}
		if viaIndex != viaTable {
			return errDamaged("slot %s holds %d ledger rows by the key index and %d by the table", slotName(m.slot), viaIndex, viaTable)
		}
	}
	return nil
}

// rawRows runs a grain's raw statement st over [lo, hi).
func rawRows[R any](ctx context.Context, st *sql.Stmt, lo, hi int64, destOf func(*R) []any) ([]R, error) {
	rs, err := st.QueryContext(ctx, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var (
		out []R
		r   R
	)
	dest := destOf(&r)
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// teamGrain is Aggregate's own grain: per row group (team, namespace,
// model, mode and kind), from ledger_rollup.
var teamGrain = grain[int64, sums]{
	rawSQL:    aggregateSQL,
	rollupSQL: rollupRowsSQL,
	rollup:    "rollup",
	cache:     0,
	dest: func(g *sums) []any {
		return []any{&g.grp, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows}
	},
	fill: func(*ledger.Aggregate, int64) {},
	sort: sortAggregates,
	checksum: func(slot int64, g *sums) int64 {
		h := newChecksum()
		h.i64(slot)
		h.i64(g.grp)
		g.hash(&h)
		return h.sum()
	},
	before: func(slot int64, a *sums, next int64, b *sums) bool {
		return slot < next || slot == next && a.grp < b.grp
	},
}

// hash adds the sums, in rollupChkCols' order after the key.
func (g *sums) hash(h *checksum) {
	h.f64(g.alloc)
	h.f64(g.used)
	h.f64(g.mem)
	h.f64(g.energy)
	h.i64(g.rows)
}

func (g sums) rowKey() int64      { return g.grp }
func (g sums) rowGrp() int64      { return g.grp }
func (g sums) rowSums() sums      { return g }
func (g sums) rowProfile() string { return "" }

// nameGroups fills in the names of out[i]'s row group grps[i].
func (s *FileStore) nameGroups(ctx context.Context, out []ledger.Aggregate, grps []int64) error {
	for i := range out {
		a := &out[i]
		g, err := s.groups.key(ctx, s.w, grps[i])
		if err != nil {
			return err
		}
		a.Cluster, a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind = g.cluster, g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
	}
	return nil
}

func sortAggregates(as []ledger.Aggregate) {
	slices.SortFunc(as, func(x, y ledger.Aggregate) int {
		if c := x.BucketStart.Compare(y.BucketStart); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(x.Team, y.Team), strings.Compare(x.Namespace, y.Namespace),
			strings.Compare(x.GPUModel, y.GPUModel), strings.Compare(x.Mode, y.Mode), strings.Compare(string(x.Kind), string(y.Kind)),
			strings.Compare(x.Cluster, y.Cluster))
	})
}

// queryBuckets validates q and returns its buckets.
func queryBuckets(q ledger.AggregateQuery) ([]bucket, error) {
	loc := q.Location
	if loc == nil {
		loc = time.UTC
	}
	switch q.Bucket {
	case ledger.BucketNone:
		lo, hi := nsBound(q.From, math.MinInt64), nsBound(q.To, math.MaxInt64)
		if lo >= hi {
			return nil, fmt.Errorf("empty range [%s, %s)", ledger.FormatTime(q.From), ledger.FormatTime(q.To))
		}
		return []bucket{{lo: lo, hi: hi}}, nil
	case ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth:
		switch {
		case q.From.IsZero() && q.To.IsZero():
			return nil, fmt.Errorf("%s buckets need a bounded range: neither end is set (the zero time, 0001-01-01T00:00:00Z, means unset)", q.Bucket)
		case q.From.IsZero():
			return nil, fmt.Errorf("%s buckets need a bounded range: the start is unset (the zero time, 0001-01-01T00:00:00Z, means unset)", q.Bucket)
		case q.To.IsZero():
			return nil, fmt.Errorf("%s buckets need a bounded range: the end is unset", q.Bucket)
		}
		for _, t := range []time.Time{q.From, q.To} {
			if err := calendar.CheckTime(t); err != nil {
				return nil, fmt.Errorf("%s buckets of [%s, %s): %w", q.Bucket, q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339), err)
			}
		}
		return calendarBuckets(q.From, q.To, loc, q.Bucket)
	}
	return nil, fmt.Errorf("unknown bucket %q (want %q, %q, %q or none)", q.Bucket, ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth)
}

// badRowsSQL counts the rows of [?1, ?2) that fail their checksum, read
// through the key index (see the statements above), for this file's
// schema: with the cluster (schema 11), which the index holds a copy of.
func badRowsSQL(ctx context.Context, tx *sql.Tx) (string, error) {
	has, err := hasColumn(ctx, tx, "ledger_rows", "cluster")
	if err != nil {
		return "", err
	}
	return `SELECT count(*) FROM ledger_rows INDEXED BY ledger_rows_key
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2 AND chk <> 0 AND chk <> ` + rowChkSQL(has), nil
}
