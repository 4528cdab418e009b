package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/ledger"
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
func (s *Store) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.ByNode {
		// Per-node energy is read from the embedded ledger only.
		return nil, errors.New("cannot aggregate ledger rows per node: not supported on a ClickHouse ledger (a price book with carbonIntensityByNode needs the embedded ledger)")
	}
	if q.ByDevice {
		return s.aggregateDevices(ctx, q)
	}
	out, _, err := s.aggregate(ctx, q)
	return out, err
}

func (s *Store) aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, aggPlan, error) {
	var plan aggPlan
	buckets, err := planBuckets(q.From, q.To, q.Location, q.Bucket)
	if err != nil {
		return nil, plan, err
	}
	var days, hours, raw []segment
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
	acc := newAccumulator(q.Bucket, buckets)
	st, err := s.loadState(ctx, floorUnix(q.From, 86400), ceilUnix(q.To, 86400))
	if err != nil {
		return nil, plan, fmt.Errorf("cannot aggregate ledger rows: %w", err)
	}
	rest, err := s.fromRollup(ctx, grainDay, days, st, acc)
	if err != nil {
		return nil, plan, err
	}
	plan.days = len(days) - len(rest)
	for _, sg := range rest {
		hours = append(hours, hoursOf(sg)...)
	}
	rest, err = s.fromRollup(ctx, grainHour, hours, st, acc)
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

// fromRollup adds the segments of one grain that have a clean, fully
// visible build and returns the others.
func (s *Store) fromRollup(ctx context.Context, grain string, segs []segment, st *rollupState, acc *accumulator) ([]segment, error) {
	if len(segs) == 0 {
		return nil, nil
	}
	want := map[int64]header{}
	var rest []segment
	lo, hi := segs[0].from.Unix(), segs[0].to.Unix()
	for _, sg := range segs {
		if h, ok := st.clean(period{grain, sg.from.Unix()}); ok {
			want[sg.from.Unix()] = h
		}
		lo, hi = min(lo, sg.from.Unix()), max(hi, sg.to.Unix())
	}
	rows, ok, err := s.readRollup(ctx, grain, lo, hi, want)
	if err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger rows: %w", err)
	}
	for _, sg := range segs {
		start := sg.from.Unix()
		if !ok[start] {
			rest = append(rest, sg)
			continue
		}
		for _, g := range rows[start] {
			acc.add(sg.bucket, g)
		}
	}
	return rest, nil
}

// fromRaw sums deduplicated raw rows per segment, many segments per query.
func (s *Store) fromRaw(ctx context.Context, segs []segment, acc *accumulator) error {
	for len(segs) > 0 {
		n := min(len(segs), rawRangesPerQuery)
		if err := s.rawQuery(ctx, segs[:n], acc); err != nil {
			return fmt.Errorf("cannot aggregate ledger rows: %w", err)
		}
		segs = segs[n:]
	}
	return nil
}

func (s *Store) rawQuery(ctx context.Context, segs []segment, acc *accumulator) error {
	conds := make([]string, len(segs))
	var sel strings.Builder
	sel.WriteString("multiIf(")
	for i, sg := range segs {
		conds[i] = rawRange(sg.from, sg.to)
		fmt.Fprintf(&sel, "(%s AND %s), toUInt32(%d), ", timeGE("interval_start", "interval_start_ns", sg.from),
			timeLT("interval_start", "interval_start_ns", sg.to), i)
	}
	sel.WriteString("toUInt32(4294967295))")
	q := fmt.Sprintf(`SELECT %s AS seg, team, namespace, gpu_model, sharing_mode, kind,
	sum(allocated_gpu_seconds), sum(used_gpu_seconds), sum(memory_mib_seconds), sum(energy_joules), count()
FROM %s FINAL WHERE %s
GROUP BY seg, team, namespace, gpu_model, sharing_mode, kind`, sel.String(), s.table(tableRows), strings.Join(conds, " OR "))
	return s.query(ctx, "aggregate raw ledger rows", q, func(rs driver.Rows) error {
		var idx uint32
		var g group
		if err := rs.Scan(&idx, &g.key.team, &g.key.namespace, &g.key.model, &g.key.mode, &g.key.kind,
			&g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			return scanError{err}
		}
		if int(idx) >= len(segs) {
			return fmt.Errorf("raw aggregate returned segment %d of %d", idx, len(segs))
		}
		acc.add(segs[idx].bucket, g)
		return nil
	})
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

type aggKey struct {
	bucket int
	groupKey
}

// accumulator sums groups per bucket.
type accumulator struct {
	size    string
	buckets []bucket
	sums    map[aggKey]*ledger.Aggregate
}

func newAccumulator(size string, buckets []bucket) *accumulator {
	return &accumulator{size: size, buckets: buckets, sums: map[aggKey]*ledger.Aggregate{}}
}

func (a *accumulator) add(b int, g group) {
	k := aggKey{b, g.key}
	x := a.sums[k]
	if x == nil {
		x = &ledger.Aggregate{Team: g.key.team, Namespace: g.key.namespace, GPUModel: g.key.model,
			Mode: g.key.mode, Kind: attribution.Kind(g.key.kind)}
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
}

func (a *accumulator) result() []ledger.Aggregate {
	keys := make([]aggKey, 0, len(a.sums))
	for k := range a.sums {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].bucket != keys[j].bucket {
			return keys[i].bucket < keys[j].bucket
		}
		return keys[i].groupKey.less(keys[j].groupKey)
	})
	out := make([]ledger.Aggregate, len(keys))
	for i, k := range keys {
		out[i] = *a.sums[k]
	}
	return out
}
