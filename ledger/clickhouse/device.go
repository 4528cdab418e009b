package clickhouse

import (
	"context"
	"fmt"

	"github.com/gpuledger/gpuledger/ledger"
)

// The groupings finer than a report group's (Aggregate with ByDevice, the
// FOCUS export's per-GPU rows; ByNode; AggregateContainers, the
// allocation API's pods, containers and nodes) read the per-device
// rollups (migration 10): whole current UTC days from the daily one,
// other whole current hours from the hourly one, the rest (partial hours
// at the edges, stale hours, buckets not aligned to UTC hours) from the
// deduplicated raw rows, as Aggregate does for teams. A 1,000-GPU day by
// pod read every raw row of the day FINAL before (1.24 s); see
// BENCHMARKS.md.

type deviceKey struct {
	g               groupKey
	gpu, slice, pod string
}

var deviceGrain = rawGrain[deviceKey]{
	what:      "aggregate ledger rows per device",
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
	out, _, err := aggregateFine(ctx, s, q, &deviceGrain)
	if err != nil {
		return nil, err
	}
	ledger.SortDeviceAggregates(out)
	return out, nil
}

type containerKey struct {
	d               deviceKey
	container, node string
}

var containerGrain = rawGrain[containerKey]{
	what:      "aggregate ledger rows per container",
	keyCols:   "team, namespace, gpu_model, sharing_mode, kind, cluster, gpu_uuid, slice_id, pod, container, node",
	extraCols: "max(mig_profile), ",
	dest: func(k *containerKey, profile *string) []any {
		// The device grain's nine key columns, then container and node,
		// then the profile (extraCols).
		return append(deviceGrain.dest(&k.d, profile)[:9], &k.container, &k.node, profile)
	},
	fill: func(a *ledger.Aggregate, k containerKey) {
		deviceGrain.fill(a, k.d)
		a.Container, a.Node = k.container, k.node
	},
}

var _ ledger.ContainerAggregator = (*Store)(nil)

// AggregateContainers sums the rows of q per bucket, report group, GPU,
// slice, pod, container and node (ledger.ContainerAggregator), from the
// per-device rollups where they are current.
func (s *Store) AggregateContainers(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if err := ledger.CheckAggregateCluster(q); err != nil {
		return nil, fmt.Errorf("cannot aggregate ledger rows per container: %w", err)
	}
	if q.ByDevice || q.ByNode {
		return nil, fmt.Errorf("cannot aggregate ledger rows per container and per device or node at once")
	}
	out, _, err := aggregateFine(ctx, s, q, &containerGrain)
	if err != nil {
		return nil, err
	}
	return ledger.FoldClusters(out, q), nil
}

// aggregateFine sums the rows of q per bucket and key of gr, a grain the
// per-device rollups hold: whole current days and hours from them, the
// rest from raw rows. The plan counts the segments each source answered.
func aggregateFine[K comparable](ctx context.Context, s *Store, q ledger.AggregateQuery, gr *rawGrain[K]) ([]ledger.Aggregate, aggPlan, error) {
	var plan aggPlan
	buckets, err := planBuckets(q.From, q.To, q.Location, q.Bucket)
	if err != nil {
		return nil, plan, err
	}
	days, hours, raw := splitBuckets(buckets)
	acc := newAccumulator(q.Bucket, buckets, gr)
	st, err := s.loadState(ctx, floorUnix(q.From, 86400), ceilUnix(q.To, 86400))
	if err != nil {
		return nil, plan, fmt.Errorf("cannot %s: %w", gr.what, err)
	}
	rest, err := sumRollup(ctx, s, grainDay, deviceRollup, days, st, acc)
	if err != nil {
		return nil, plan, err
	}
	plan.days = len(days) - len(rest)
	for _, sg := range rest {
		hours = append(hours, hoursOf(sg)...)
	}
	if rest, err = sumRollup(ctx, s, grainHour, deviceRollup, hours, st, acc); err != nil {
		return nil, plan, err
	}
	plan.hours = len(hours) - len(rest)
	raw = mergeSegments(append(raw, rest...))
	plan.raw = len(raw)
	// One query per rebuildQuerySpan of time at most, as rollup builds do:
	// 18.16 reads one FINAL query's range on one thread. They run one after
	// the other: four at once (as RebuildRollups runs them) took 6.2 s
	// instead of 2.95 s for the 100-GPU benchmark month, and 16.7 s instead
	// of 10.9 s for 400 GPUs, on the 2-core benchmark machine.
	for _, qs := range rebuildQueryRanges(raw) {
		if err := rawQuery(ctx, s, qs, acc); err != nil {
			return nil, plan, err // it names the grain and the server
		}
	}
	return acc.result(), plan, nil
}
