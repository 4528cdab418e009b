package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gpuledger/gpuledger/billing/ledger"
)

// Aggregate with ByNode (a price book's per-node carbon intensities): the
// rows of [q.From, q.To) per bucket, report group and node, only their
// energy and count, summed from the deduplicated raw rows (FINAL) like the
// per-device path: the rollups do not keep the node. A report reads it
// only when its book gives some nodes their own intensity.

type nodeKey struct {
	g    groupKey
	node string
}

var nodeGrain = rawGrain[nodeKey]{
	what:    "aggregate raw ledger rows per node",
	keyCols: "team, namespace, gpu_model, sharing_mode, kind, node",
	dest: func(k *nodeKey, _ *string) []any {
		return []any{&k.g.team, &k.g.namespace, &k.g.model, &k.g.mode, &k.g.kind, &k.node}
	},
	fill: func(a *ledger.Aggregate, k nodeKey) {
		teamGrain.fill(a, k.g)
		a.Node = k.node
	},
}

func (s *Store) aggregateNodes(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.ByDevice {
		return nil, fmt.Errorf("cannot aggregate ledger rows per node and per device at once")
	}
	buckets, err := planBuckets(q.From, q.To, q.Location, q.Bucket)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for i, b := range buckets {
		segs = append(segs, segment{bucket: i, level: levelRaw, from: b.From, to: b.To})
	}
	acc := newAccumulator(q.Bucket, buckets, &nodeGrain)
	for _, qs := range rebuildQueryRanges(segs) {
		if err := rawQuery(ctx, s, qs, acc); err != nil {
			return nil, fmt.Errorf("cannot aggregate ledger rows per node: %w", err)
		}
	}
	out := acc.result()
	for i := range out {
		// ByNode sums only energy and rows (ledger.AggregateQuery).
		out[i].AllocatedSeconds, out[i].UsedSeconds, out[i].MemoryMiBSeconds = 0, 0, 0
	}
	slices.SortStableFunc(out, func(a, b ledger.Aggregate) int {
		return cmp.Or(a.BucketStart.Compare(b.BucketStart), cmp.Compare(a.Team, b.Team), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.GPUModel, b.GPUModel), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Node, b.Node))
	})
	return out, nil
}
