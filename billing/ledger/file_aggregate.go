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

// aggregateSQL sums one bucket's rows: a range scan of the key index,
// grouped by the integer grp so SQLite's sort stays cheap; names come from
// the group cache. One execution per bucket keeps the bucket out of the
// sort key (a single joined query was twice as slow).
const aggregateSQL = `SELECT grp, total(allocated_gpu_seconds), total(used_gpu_seconds),
	total(memory_mib_seconds), total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ? AND interval_start_ns < ?
GROUP BY grp`

// Aggregate sums the rows of [q.From, q.To) per calendar bucket of
// q.Location (boundaries from calendarBuckets), team, namespace, GPU model,
// sharing mode and kind, ordered by those. With BucketNone a zero From or
// To is open-ended. All buckets are read from one snapshot.
func (s *FileStore) Aggregate(ctx context.Context, q AggregateQuery) ([]Aggregate, error) {
	bs, err := queryBuckets(q)
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, aggregateSQL)
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
	}
	var out []Aggregate
	for _, b := range bs {
		if out, err = s.aggregateBucket(ctx, st, b, out); err != nil {
			return nil, fmt.Errorf("cannot aggregate ledger %s: %w", s.path, err)
		}
	}
	sortAggregates(out)
	return out, nil
}

func (s *FileStore) aggregateBucket(ctx context.Context, st *sql.Stmt, b bucket, out []Aggregate) ([]Aggregate, error) {
	rs, err := st.QueryContext(ctx, b.lo, b.hi)
	if err != nil {
		return out, err
	}
	defer rs.Close()
	for rs.Next() {
		a := Aggregate{BucketStart: b.start}
		var grp int64
		if err := rs.Scan(&grp, &a.AllocatedSeconds, &a.UsedSeconds, &a.MemoryMiBSeconds, &a.EnergyJoules, &a.Rows); err != nil {
			return out, err
		}
		g, err := s.groups.key(ctx, s.w, grp)
		if err != nil {
			return out, err
		}
		a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind = g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
		out = append(out, a)
	}
	return out, rs.Err()
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
		if q.From.IsZero() || q.To.IsZero() {
			return nil, fmt.Errorf("%s buckets need both ends of the range", q.Bucket)
		}
		return calendarBuckets(q.From, q.To, loc, q.Bucket)
	}
	return nil, fmt.Errorf("unknown bucket %q (want %q, %q, %q or none)", q.Bucket, BucketHour, BucketDay, BucketMonth)
}
