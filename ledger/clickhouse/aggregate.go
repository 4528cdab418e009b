package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// rawRangesPerQuery bounds the multiIf of one raw query (max_query_size is
// 256 KiB by default).
const rawRangesPerQuery = 200

// aggPlan counts the segments each source answered, for tests and logs.
type aggPlan struct{ days, hours, raw int }

// Aggregate sums the rows in [q.From, q.To) per bucket of q.Location and
// (team, namespace, GPU model, sharing mode, kind). Whole UTC days come from
// the daily rollup and whole UTC hours from the hourly one when their newest
// build covers every write; everything else (partial hours at the edges,
// hours not rebuilt since their last write, buckets not aligned to UTC
// hours) is summed from the deduplicated raw rows.
//
// Every grain groups by cluster too (the rollups carry it); the cluster
// filter and the fleet's sums are taken from that (ledger.FoldClusters).
func (s *Store) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if err := ledger.CheckAggregateCluster(q); err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger rows: %w", err)
	}
	var (
		out []ledger.Aggregate
		err error
	)
	switch {
	case q.ByNode:
		out, err = s.aggregateNodes(ctx, q)
	case q.ByDevice:
		out, err = s.aggregateDevices(ctx, q)
	default:
		out, _, err = s.aggregate(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	return ledger.FoldClusters(out, q), nil
}

func (s *Store) aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, aggPlan, error) {
	var plan aggPlan
	buckets, err := planBuckets(q.From, q.To, q.Location, q.Bucket)
	if err != nil {
		return nil, plan, err
	}
	days, hours, raw := splitBuckets(buckets)
	acc := newAccumulator(q.Bucket, buckets, &teamGrain)
	st, err := s.loadState(ctx, floorUnix(q.From, 86400), ceilUnix(q.To, 86400))
	if err != nil {
		return nil, plan, fmt.Errorf("cannot aggregate ledger rows: %w", err)
	}
	rest, err := sumRollup(ctx, s, grainDay, teamRollup, days, st, acc)
	if err != nil {
		return nil, plan, err
	}
	plan.days = len(days) - len(rest)
	for _, sg := range rest {
		hours = append(hours, hoursOf(sg)...)
	}
	rest, err = sumRollup(ctx, s, grainHour, teamRollup, hours, st, acc)
	if err != nil {
		return nil, plan, err
	}
	plan.hours = len(hours) - len(rest)
	raw = mergeSegments(append(raw, rest...))
	plan.raw = len(raw)
	if err := s.fromRaw(ctx, raw, acc); err != nil {
		return nil, plan, err
	}
	return acc.result(), plan, nil
}

// splitBuckets cuts buckets into the whole UTC days, the other whole UTC
// hours and the rest.
func splitBuckets(buckets []bucket) (days, hours, raw []segment) {
	for i, b := range buckets {
		for _, sg := range splitBucket(i, b) {
			switch sg.level {
			case levelDay:
				days = append(days, sg)
			case levelHour:
				hours = append(hours, sg)
			default:
				raw = append(raw, sg)
			}
		}
	}
	return days, hours, raw
}

// fromRaw sums deduplicated raw rows per segment, many segments per query.
func (s *Store) fromRaw(ctx context.Context, segs []segment, acc *accumulator[groupKey]) error {
	for len(segs) > 0 {
		n := min(len(segs), rawRangesPerQuery)
		if err := rawQuery(ctx, s, segs[:n], acc); err != nil {
			return fmt.Errorf("cannot aggregate ledger rows: %w", err)
		}
		segs = segs[n:]
	}
	return nil
}

// rawGrain is what a raw aggregate groups by: the key columns after the
// segment, the columns read between them and the sums, and where Scan puts
// them. Team and device aggregates share the query, its segment numbering
// and the accumulation.
type rawGrain[K comparable] struct {
	what      string // names the query in errors
	keyCols   string // GROUP BY, after the segment
	extraCols string // selected after keyCols, each followed by ", "
	dest      func(k *K, profile *string) []any
	fill      func(a *ledger.Aggregate, k K) // a new aggregate's key fields
	less      func(x, y K) bool              // the result's order within a bucket; nil: left to the caller
}

var teamGrain = rawGrain[groupKey]{
	what:    "aggregate raw ledger rows",
	keyCols: "team, namespace, gpu_model, sharing_mode, kind, cluster",
	dest: func(k *groupKey, _ *string) []any {
		return []any{&k.team, &k.namespace, &k.model, &k.mode, &k.kind, &k.cluster}
	},
	fill: func(a *ledger.Aggregate, k groupKey) {
		a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind = k.team, k.namespace, k.model, k.mode, attribution.Kind(k.kind)
		a.Cluster = k.cluster
	},
	less: groupKey.less,
}

// rawQuery sums the deduplicated raw rows of segs per segment and key of
// acc's grain into acc, in one query.
func rawQuery[K comparable](ctx context.Context, s *Store, segs []segment, acc *accumulator[K]) error {
	gr := acc.grain
	q := fmt.Sprintf(`SELECT %s AS seg, %s,
	%ssum(allocated_gpu_seconds), sum(used_gpu_seconds), sum(memory_mib_seconds), sum(energy_joules), count()
FROM %s FINAL WHERE %s
GROUP BY seg, %s`, segmentOf(segs), gr.keyCols, gr.extraCols, s.table(tableRows), segmentsWhere(segs), gr.keyCols)
	var (
		idx     uint32
		k       K
		profile string
		g       sums
	)
	dest := append(append([]any{&idx}, gr.dest(&k, &profile)...), &g.alloc, &g.used, &g.mem, &g.energy, &g.rows)
	return s.query(ctx, gr.what, q, func(rs driver.Rows) error {
		if err := rs.Scan(dest...); err != nil {
			return scanError{err}
		}
		if int(idx) >= len(segs) {
			return fmt.Errorf("raw aggregate returned segment %d of %d", idx, len(segs))
		}
		acc.add(segs[idx].bucket, k, g, profile)
		return nil
	})
}

// segmentOf numbers the segment of segs a row's interval start lies in:
// its index, 4294967295 for none.
func segmentOf(segs []segment) string {
	var sel strings.Builder
	sel.WriteString("multiIf(")
	for i, sg := range segs {
		fmt.Fprintf(&sel, "(%s AND %s), toUInt32(%d), ", timeGE("interval_start", "interval_start_ns", sg.from),
			timeLT("interval_start", "interval_start_ns", sg.to), i)
	}
	sel.WriteString("toUInt32(4294967295))")
	return sel.String()
}

// segmentsWhere is the condition on the rows of segs, one range each, so
// that the primary key narrows the read.
func segmentsWhere(segs []segment) string {
	conds := make([]string, len(segs))
	for i, sg := range segs {
		conds[i] = rawRange(sg.from, sg.to)
	}
	return strings.Join(conds, " OR ")
}

// mergeSegments joins adjacent raw segments of the same bucket.
func mergeSegments(segs []segment) []segment {
	sort.Slice(segs, func(i, j int) bool { return segs[i].from.Before(segs[j].from) })
	var out []segment
	for _, sg := range segs {
		sg.level = levelRaw
		if n := len(out); n > 0 && out[n-1].bucket == sg.bucket && out[n-1].to.Equal(sg.from) {
			out[n-1].to = sg.to
			continue
		}
		out = append(out, sg)
	}
	return out
}

type aggKey[K comparable] struct {
	bucket int
	key    K
}

// accumulator sums a grain's groups per bucket.
type accumulator[K comparable] struct {
	size    string
	buckets []bucket
	grain   *rawGrain[K]
	sums    map[aggKey[K]]*ledger.Aggregate
	// slab is where new sums are placed, a block at a time rather than
	// one allocation each (a month's per-device read makes 36,000 at
	// 1,000 GPUs).
	slab []ledger.Aggregate
}

func newAccumulator[K comparable](size string, buckets []bucket, gr *rawGrain[K]) *accumulator[K] {
	return &accumulator[K]{size: size, buckets: buckets, grain: gr, sums: map[aggKey[K]]*ledger.Aggregate{}}
}

func (a *accumulator[K]) add(b int, key K, g sums, profile string) {
	k := aggKey[K]{b, key}
	x := a.sums[k]
	if x == nil {
		if len(a.slab) == cap(a.slab) {
			a.slab = make([]ledger.Aggregate, 0, min(max(len(a.sums), 64), 4096))
		}
		a.slab = append(a.slab, ledger.Aggregate{})
		x = &a.slab[len(a.slab)-1]
		a.grain.fill(x, key)
		if a.size != ledger.BucketNone {
			x.BucketStart = a.buckets[b].Start
		}
		a.sums[k] = x
	}
	x.AllocatedSeconds += g.alloc
	x.UsedSeconds += g.used
	x.MemoryMiBSeconds += g.mem
	x.EnergyJoules += g.energy
	x.Rows += int64(g.rows)
	// A slice's profile never changes: max() skips rows shipped before
	// profiles were recorded (''). Grains without one give '' throughout.
	x.MIGProfile = max(x.MIGProfile, profile)
}

// result returns the aggregates by bucket, then in the grain's order.
func (a *accumulator[K]) result() []ledger.Aggregate {
	// Each key with its sums: not looked up again once sorted.
	type kv struct {
		k aggKey[K]
		v *ledger.Aggregate
	}
	keys := make([]kv, 0, len(a.sums))
	for k, v := range a.sums {
		keys = append(keys, kv{k, v})
	}
	less := a.grain.less
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].k.bucket != keys[j].k.bucket || less == nil {
			return keys[i].k.bucket < keys[j].k.bucket
		}
		return less(keys[i].k.key, keys[j].k.key)
	})
	out := make([]ledger.Aggregate, len(keys))
	for i, k := range keys {
		out[i] = *k.v
	}
	return out
}
