package clickhouse

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

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
	rest, err := fromDeviceRollup(ctx, s, grainDay, days, st, acc)
	if err != nil {
		return nil, plan, err
	}
	plan.days = len(days) - len(rest)
	for _, sg := range rest {
		hours = append(hours, hoursOf(sg)...)
	}
	if rest, err = fromDeviceRollup(ctx, s, grainHour, hours, st, acc); err != nil {
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

// fromDeviceRollup adds the segments of one period grain whose newest
// build is current and has per-device rows, all visible, summed per key of
// acc's grain in the server; it returns the others. A period counts only
// when its rows read are as many as its build wrote: a row a newer, not
// yet visible build replaced in a merge sends the period to a finer
// source. FINAL collapses a retried insert's second copy of a row.
func fromDeviceRollup[K comparable](ctx context.Context, s *Store, grain string, segs []segment, st *rollupState, acc *accumulator[K]) ([]segment, error) {
	want := map[int64]header{}
	var lo, hi int64
	for _, sg := range segs {
		if h, ok := st.clean(period{grain, sg.from.Unix()}); ok && h.deviceGroups >= 0 {
			if len(want) == 0 {
				lo, hi = sg.from.Unix(), sg.to.Unix()
			}
			want[sg.from.Unix()] = h
			lo, hi = min(lo, sg.from.Unix()), max(hi, sg.to.Unix())
		}
	}
	if len(want) == 0 {
		return segs, nil
	}
	type row struct {
		key     K
		profile string
		sums
	}
	got := map[int64][]row{}
	counts := map[int64]uint64{}
	p := period{grain: grain}
	gr := acc.grain
	// The build is grouped on, so rows of an older build of a period are
	// told apart even when the filter names no build (more than
	// maxBuildFilter periods).
	q := fmt.Sprintf(`SELECT toUInt32(%[1]s), build, %[2]s, %[3]ssum(allocated_gpu_seconds), sum(used_gpu_seconds),
	sum(memory_mib_seconds), sum(energy_joules), sum(rows), count()
FROM %[4]s FINAL WHERE %[1]s >= %[5]s AND %[1]s < %[6]s%[7]s
GROUP BY %[1]s, build, %[2]s`, p.column(), gr.keyCols, gr.extraCols, s.table(p.devTable()), dt(lo), dt(hi), buildFilter(want))
	var (
		start uint32
		build uint64
		r     row
		n     uint64
	)
	dest := append(append([]any{&start, &build}, gr.dest(&r.key, &r.profile)...), &r.alloc, &r.used, &r.mem, &r.energy, &r.rows, &n)
	err := s.query(ctx, "read the per-device rollups", q, func(rs driver.Rows) error {
		if err := rs.Scan(dest...); err != nil {
			return scanError{err}
		}
		ps := int64(start)
		if h, ok := want[ps]; !ok || h.build != build {
			return nil // an older build, or a period read elsewhere
		}
		counts[ps] += n
		got[ps] = append(got[ps], r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot %s: %w", gr.what, err)
	}
	var rest []segment
	for _, sg := range segs {
		ps := sg.from.Unix()
		h, ok := want[ps]
		if !ok || int64(counts[ps]) != h.deviceGroups {
			rest = append(rest, sg)
			continue
		}
		for _, r := range got[ps] {
			acc.add(sg.bucket, r.key, r.sums, r.profile)
		}
	}
	return rest, nil
}
