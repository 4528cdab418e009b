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
// state.
func (s *FileStore) Aggregate(ctx context.Context, q AggregateQuery) ([]Aggregate, error) {
	if q.ByNode {
		if q.ByDevice {
			return nil, fmt.Errorf("cannot aggregate ledger %s: ByNode and ByDevice together", s.path)
		}
		return s.aggregateNodes(ctx, q)
	}
	if q.ByDevice {
		return s.aggregateDevices(ctx, q)
	}
	bs, err := queryBuckets(q)
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	defer tx.Rollback()
	acc, err := s.aggregateSlots(ctx, tx, bs)
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, s.describe(err))
	}
	out, err := s.named(ctx, acc)
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	sortAggregates(out)
	return out, nil
}

// aggregateSlots reads the raw pieces, then streams the rollup rows of the
// whole slots, adding both to the buckets in slot order.
func (s *FileStore) aggregateSlots(ctx context.Context, tx *sql.Tx, bs []bucket) (*accumulator, error) {
	dirty, err := dirtySlots(ctx, tx, slotOf(bs[0].lo), slotOf(bs[len(bs)-1].hi)+1)
	if err != nil {
		return nil, err
	}
	p := planSlots(bs, dirty)
	if err := readRaw(ctx, tx, p.raw); err != nil {
		return nil, err
	}
	acc := newAccumulator(bs)
	raw := p.raw
	// addRaw adds the raw pieces of the slots before slot.
	addRaw := func(slot int64) {
		for ; len(raw) > 0 && raw[0].slot < slot; raw = raw[1:] {
			for _, g := range raw[0].sums {
				acc.add(raw[0].bucket, g)
			}
		}
	}
	if err := streamRollup(ctx, tx, &p, func(slot int64, bucket int, g sums) {
		addRaw(slot)
		acc.add(bucket, g)
	}); err != nil {
		return nil, err
	}
	addRaw(math.MaxInt64)
	return acc, nil
}

// streamRollup calls fn, in slot order, with the rollup rows that answer
// for whole, clean slots of p's buckets.
func streamRollup(ctx context.Context, tx *sql.Tx, p *slotPlan, fn func(slot int64, bucket int, g sums)) error {
	lo, hi := p.whole[0].lo, p.whole[len(p.whole)-1].hi
	if lo >= hi {
		return nil
	}
	rs, err := tx.QueryContext(ctx, rollupRowsSQL, lo, hi)
	if err != nil {
		return fmt.Errorf("cannot read rollup: %w", err)
	}
	defer rs.Close()
	walk := p.walker()
	for rs.Next() {
		var (
			slot int64
			g    sums
		)
		if err := rs.Scan(&slot, &g.grp, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			return fmt.Errorf("cannot read rollup: %w", err)
		}
		if b, ok := walk.bucket(slot); ok {
			fn(slot, b, g)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("cannot read rollup: %w", err)
	}
	return nil
}

// readRaw runs aggregateSQL for every raw piece.
func readRaw(ctx context.Context, tx *sql.Tx, pieces []rawPiece) error {
	if len(pieces) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, aggregateSQL)
	if err != nil {
		return fmt.Errorf("cannot prepare raw aggregate: %w", err)
	}
	for i := range pieces {
		if pieces[i].sums, err = rawSums(ctx, st, pieces[i].lo, pieces[i].hi); err != nil {
			return fmt.Errorf("cannot sum ledger rows in [%s, %s): %w", FormatTime(fromNS(pieces[i].lo)), FormatTime(fromNS(pieces[i].hi)), err)
		}
	}
	return nil
}

func rawSums(ctx context.Context, st *sql.Stmt, lo, hi int64) ([]sums, error) {
	rs, err := st.QueryContext(ctx, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []sums
	for rs.Next() {
		var g sums
		if err := rs.Scan(&g.grp, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rs.Err()
}

// named fills in the group names.
func (s *FileStore) named(ctx context.Context, acc *accumulator) ([]Aggregate, error) {
	out := acc.out
	for i := range out {
		a := &out[i]
		g, err := s.groups.key(ctx, s.w, acc.grps[i])
		if err != nil {
			return nil, err
		}
		a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind = g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
	}
	return out, nil
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
