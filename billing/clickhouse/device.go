package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/ledger"
)

// Aggregate with ByDevice (the FOCUS export's per-GPU rows): the rows of
// [q.From, q.To) per bucket, report group, GPU UUID, slice and pod name,
// summed from the deduplicated raw rows (FINAL), several buckets per
// query. The hourly and daily rollups do not keep the device columns, so
// this path does not use them; see docs/focus.md for its cost.

type deviceKey struct {
	bucket          int
	g               groupKey
	gpu, slice, pod string
}

type deviceAcc struct {
	size    string
	buckets []bucket
	sums    map[deviceKey]*ledger.Aggregate
}

func (s *Store) aggregateDevices(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	buckets, err := planBuckets(q.From, q.To, q.Location, q.Bucket)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for i, b := range buckets {
		segs = append(segs, segment{bucket: i, level: levelRaw, from: b.From, to: b.To})
	}
	acc := &deviceAcc{size: q.Bucket, buckets: buckets, sums: map[deviceKey]*ledger.Aggregate{}}
	// One query per rebuildQuerySpan of time at most, as rollup builds do:
	// 18.16 reads one FINAL query's range on one thread. They run one after
	// the other: four at once (as RebuildRollups runs them) took 6.2 s
	// instead of 2.95 s for the 100-GPU benchmark month, and 16.7 s instead
	// of 10.9 s for 400 GPUs, on the 2-core benchmark machine.
	for _, qs := range rebuildQueryRanges(segs) {
		if err := s.rawDeviceQuery(ctx, qs, acc); err != nil {
			return nil, fmt.Errorf("cannot aggregate ledger rows per device: %w", err)
		}
	}
	keys := make([]deviceKey, 0, len(acc.sums))
	for k := range acc.sums {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].bucket < keys[j].bucket })
	out := make([]ledger.Aggregate, len(keys))
	for i, k := range keys {
		out[i] = *acc.sums[k]
	}
	ledger.SortDeviceAggregates(out)
	return out, nil
}

func (s *Store) rawDeviceQuery(ctx context.Context, segs []segment, acc *deviceAcc) error {
	conds := make([]string, len(segs))
	var sel strings.Builder
	sel.WriteString("multiIf(")
	for i, sg := range segs {
		conds[i] = rawRange(sg.from, sg.to)
		fmt.Fprintf(&sel, "(%s AND %s), toUInt32(%d), ", timeGE("interval_start", "interval_start_ns", sg.from),
			timeLT("interval_start", "interval_start_ns", sg.to), i)
	}
	sel.WriteString("toUInt32(4294967295))")
	q := fmt.Sprintf(`SELECT %s AS seg, team, namespace, gpu_model, sharing_mode, kind, gpu_uuid, slice_id, pod,
	max(mig_profile), sum(allocated_gpu_seconds), sum(used_gpu_seconds), sum(memory_mib_seconds), sum(energy_joules), count()
FROM %s FINAL WHERE %s
GROUP BY seg, team, namespace, gpu_model, sharing_mode, kind, gpu_uuid, slice_id, pod`, sel.String(), s.table(tableRows), strings.Join(conds, " OR "))
	return s.query(ctx, "aggregate raw ledger rows per device", q, func(rs driver.Rows) error {
		var idx uint32
		var g group
		var k deviceKey
		var profile string
		if err := rs.Scan(&idx, &g.key.team, &g.key.namespace, &g.key.model, &g.key.mode, &g.key.kind, &k.gpu, &k.slice, &k.pod,
			&profile, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			return scanError{err}
		}
		if int(idx) >= len(segs) {
			return fmt.Errorf("raw aggregate returned segment %d of %d", idx, len(segs))
		}
		k.bucket, k.g = segs[idx].bucket, g.key
		x := acc.sums[k]
		if x == nil {
			x = &ledger.Aggregate{Team: g.key.team, Namespace: g.key.namespace, GPUModel: g.key.model,
				Mode: g.key.mode, Kind: attribution.Kind(g.key.kind), GPUUUID: k.gpu, SliceID: k.slice, Pod: k.pod}
			if acc.size != ledger.BucketNone {
				x.BucketStart = acc.buckets[k.bucket].Start
			}
			acc.sums[k] = x
		}
		x.AllocatedSeconds += g.alloc
		x.UsedSeconds += g.used
		x.MemoryMiBSeconds += g.mem
		x.EnergyJoules += g.energy
		x.Rows += int64(g.rows)
		// A slice's profile never changes: max() skips rows shipped
		// before profiles were recorded ('').
		x.MIGProfile = max(x.MIGProfile, profile)
		return nil
	})
}
