package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
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

const rollupRowsSQL = `SELECT slot, grp, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows
FROM ledger_rollup
WHERE slot >= ? AND slot < ?
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
// state. ByDevice runs the same path on the per-device tables (deviceGrain);
// ByNode sums its result per node (aggregateNodes).
func (s *FileStore) Aggregate(ctx context.Context, q AggregateQuery) ([]Aggregate, error) {
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
	// same columns, after the slot, from the rollup rows of slots [?, ?),
	// in slot order.
	rawSQL, rollupSQL string
	rollup            string // the rollup's name in errors
	dest              func(r *R) []any
	// fill sets a new aggregate's fields from the grain's own key columns;
	// the group's names are filled in after.
	fill func(a *Aggregate, k K)
	sort func([]Aggregate)
}

// aggregateGrain is Aggregate for one grain.
func aggregateGrain[K comparable, R aggRow[K]](ctx context.Context, s *FileStore, q AggregateQuery, gr *grain[K, R]) ([]Aggregate, error) {
	fail := func(err error) ([]Aggregate, error) {
		return nil, fmt.Errorf("cannot aggregate ledger %s%s: %w", s.path, gr.per, err)
	}
	bs, err := queryBuckets(q)
	if err != nil {
		return fail(err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	acc, err := aggregateSlots(ctx, tx, bs, gr)
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
// whole slots, adding both to the buckets in slot order.
func aggregateSlots[K comparable, R aggRow[K]](ctx context.Context, tx *sql.Tx, bs []bucket, gr *grain[K, R]) (*accumulator[K, R], error) {
	dirty, err := dirtySlots(ctx, tx, slotOf(bs[0].lo), slotOf(bs[len(bs)-1].hi)+1)
	if err != nil {
		return nil, err
	}
	p := planSlots(bs, dirty)
	raw, err := readRaw(ctx, tx, p.raw, gr)
	if err != nil {
		return nil, err
	}
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
	if err := streamRollup(ctx, tx, &p, gr, func(slot int64, bucket int, r *R) {
		addRaw(slot)
		acc.add(bucket, r)
	}); err != nil {
		return nil, err
	}
	addRaw(math.MaxInt64)
	return acc, nil
}

// streamRollup calls fn, in slot order, with the rollup rows that answer
// for whole, clean slots of p's buckets.
func streamRollup[K comparable, R aggRow[K]](ctx context.Context, tx *sql.Tx, p *slotPlan, gr *grain[K, R], fn func(slot int64, bucket int, r *R)) error {
	lo, hi := p.whole[0].lo, p.whole[len(p.whole)-1].hi
	if lo >= hi {
		return nil
	}
	rs, err := tx.QueryContext(ctx, gr.rollupSQL, lo, hi)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", gr.rollup, err)
	}
	defer rs.Close()
	var (
		slot int64
		r    R
	)
	dest := append([]any{&slot}, gr.dest(&r)...)
	walk := p.walker()
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return fmt.Errorf("cannot read %s: %w", gr.rollup, err)
		}
		if b, ok := walk.bucket(slot); ok {
			fn(slot, b, &r)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("cannot read %s: %w", gr.rollup, err)
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
	out := make([][]R, len(pieces))
	for i, pc := range pieces {
		if out[i], err = rawRows(ctx, st, pc.lo, pc.hi, gr.dest); err != nil {
			return nil, fmt.Errorf("cannot sum ledger rows in [%s, %s): %w", FormatTime(fromNS(pc.lo)), FormatTime(fromNS(pc.hi)), err)
		}
	}
	return out, nil
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
	dest: func(g *sums) []any {
		return []any{&g.grp, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows}
	},
	fill: func(*Aggregate, int64) {},
	sort: sortAggregates,
}

func (g sums) rowKey() int64      { return g.grp }
func (g sums) rowGrp() int64      { return g.grp }
func (g sums) rowSums() sums      { return g }
func (g sums) rowProfile() string { return "" }

// nameGroups fills in the names of out[i]'s row group grps[i].
func (s *FileStore) nameGroups(ctx context.Context, out []Aggregate, grps []int64) error {
	for i := range out {
		a := &out[i]
		g, err := s.groups.key(ctx, s.w, grps[i])
		if err != nil {
			return err
		}
		a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind = g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
	}
	return nil
}

func sortAggregates(as []Aggregate) {
	slices.SortFunc(as, func(x, y Aggregate) int {
		if c := x.BucketStart.Compare(y.BucketStart); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(x.Team, y.Team), strings.Compare(x.Namespace, y.Namespace),
			strings.Compare(x.GPUModel, y.GPUModel), strings.Compare(x.Mode, y.Mode), strings.Compare(string(x.Kind), string(y.Kind)))
	})
}

// queryBuckets validates q and returns its buckets.
func queryBuckets(q AggregateQuery) ([]bucket, error) {
	loc := q.Location
	if loc == nil {
		loc = time.UTC
	}
	switch q.Bucket {
	case BucketNone:
		lo, hi := nsBound(q.From, math.MinInt64), nsBound(q.To, math.MaxInt64)
		if lo >= hi {
			return nil, fmt.Errorf("empty range [%s, %s)", FormatTime(q.From), FormatTime(q.To))
		}
		return []bucket{{lo: lo, hi: hi}}, nil
	case BucketHour, BucketDay, BucketMonth:
		switch {
		case q.From.IsZero() && q.To.IsZero():
			return nil, fmt.Errorf("%s buckets need a bounded range: neither end is set (the zero time, 0001-01-01T00:00:00Z, means unset)", q.Bucket)
		case q.From.IsZero():
			return nil, fmt.Errorf("%s buckets need a bounded range: the start is unset (the zero time, 0001-01-01T00:00:00Z, means unset)", q.Bucket)
		case q.To.IsZero():
			return nil, fmt.Errorf("%s buckets need a bounded range: the end is unset", q.Bucket)
		}
		for _, t := range []time.Time{q.From, q.To} {
			if err := CheckTime(t); err != nil {
				return nil, fmt.Errorf("%s buckets of [%s, %s): %w", q.Bucket, q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339), err)
			}
		}
		return calendarBuckets(q.From, q.To, loc, q.Bucket)
	}
	return nil, fmt.Errorf("unknown bucket %q (want %q, %q, %q or none)", q.Bucket, BucketHour, BucketDay, BucketMonth)
}
