package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gpuledger/gpuledger/ledger"
)

// Aggregate with ByNode (a price book's per-node carbon intensities): the
// rows of [q.From, q.To) per bucket, report group and node, only their
// energy and count, from the per-device rollups like the per-device path
// (device.go). A report reads it
// only when its book gives some nodes their own intensity.

type nodeKey struct {
	g    groupKey
	node string
}

var nodeGrain = rawGrain[nodeKey]{
	what:    "aggregate ledger rows per node",
	keyCols: "team, namespace, gpu_model, sharing_mode, kind, cluster, node",
	dest: func(k *nodeKey, _ *string) []any {
		return []any{&k.g.team, &k.g.namespace, &k.g.model, &k.g.mode, &k.g.kind, &k.g.cluster, &k.node}
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
	out, _, err := aggregateFine(ctx, s, q, &nodeGrain)
	if err != nil {
		return nil, err
	}
	for i := range out {
		// ByNode sums only energy and rows (ledger.AggregateQuery).
		out[i].AllocatedSeconds, out[i].UsedSeconds, out[i].MemoryMiBSeconds = 0, 0, 0
	}
	slices.SortStableFunc(out, func(a, b ledger.Aggregate) int {
		return cmp.Or(a.BucketStart.Compare(b.BucketStart), cmp.Compare(a.Team, b.Team), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.GPUModel, b.GPUModel), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node))
	})
	return out, nil
}
