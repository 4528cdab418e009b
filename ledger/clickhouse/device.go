package clickhouse

import (
	"context"

	"github.com/gpuledger/gpuledger/ledger"
)

// Aggregate with ByDevice (the FOCUS export's per-GPU rows): the rows of
// [q.From, q.To) per bucket, report group, GPU UUID, slice and pod name,
// summed from the deduplicated raw rows (FINAL), several buckets per
// query. The hourly and daily rollups do not keep the device columns, so
// this path does not use them; see docs/focus.md for its cost.

type deviceKey struct {
	g               groupKey
	gpu, slice, pod string
}

var deviceGrain = rawGrain[deviceKey]{
	what:      "aggregate raw ledger rows per device",
	keyCols:   "team, namespace, gpu_model, sharing_mode, kind, cluster, gpu_uuid, slice_id, pod",
	extraCols: "max(mig_profile), ",
	dest: func(k *deviceKey, profile *string) []any {
		return []any{&k.g.team, &k.g.namespace, &k.g.model, &k.g.mode, &k.g.kind, &k.g.cluster, &k.gpu, &k.slice, &k.pod, profile}
	},
	fill: func(a *ledger.Aggregate, k deviceKey) {
		teamGrain.fill(a, k.g)
		a.GPUUUID, a.SliceID, a.Pod = k.gpu, k.slice, k.pod
	},
	// ledger.SortDeviceAggregates orders the result.
}

func (s *Store) aggregateDevices(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	out, err := aggregateRaw(ctx, s, q, &deviceGrain)
	if err != nil {
		return nil, err
	}
	ledger.SortDeviceAggregates(out)
	return out, nil
}

// aggregateRaw sums the deduplicated raw rows of q per bucket and key of
// gr, for the grains the rollups do not keep (device, node).
func aggregateRaw[K comparable](ctx context.Context, s *Store, q ledger.AggregateQuery, gr *rawGrain[K]) ([]ledger.Aggregate, error) {
	buckets, err := planBuckets(q.From, q.To, q.Location, q.Bucket)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for i, b := range buckets {
		segs = append(segs, segment{bucket: i, level: levelRaw, from: b.From, to: b.To})
	}
	acc := newAccumulator(q.Bucket, buckets, gr)
	// One query per rebuildQuerySpan of time at most, as rollup builds do:
	// 18.16 reads one FINAL query's range on one thread. They run one after
	// the other: four at once (as RebuildRollups runs them) took 6.2 s
	// instead of 2.95 s for the 100-GPU benchmark month, and 16.7 s instead
	// of 10.9 s for 400 GPUs, on the 2-core benchmark machine.
	for _, qs := range rebuildQueryRanges(segs) {
		if err := rawQuery(ctx, s, qs, acc); err != nil {
			return nil, err // it names the grain and the server
		}
	}
	return acc.result(), nil
}
