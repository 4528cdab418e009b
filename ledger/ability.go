package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

// The abilities a store has beyond Store. Each store declares those it has
// with a compile-time assertion (var _ ledger.QuotaReader = (*Store)(nil)),
// and a caller that needs one asks for it through the helper below it,
// which names the store that lacks it. A caller never tests for an ability
// and quietly does without: a reader that wraps a store (a counter, a
// tracker) and forgets a method would otherwise drop a bill's quota
// section or carbon labels without a word.

// RowReader streams raw rows. Every Store has it; a narrower reader (the
// report's Source) is asked for it where the report needs its rows' own
// instants (a partial period's edges).
type RowReader interface {
	Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error
}

// QuotaReader reads the GPU quota changes a ledger keeps (quota.md).
type QuotaReader interface {
	QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error
}

// NodeLabelReader reads each node's label values as recorded at an
// instant (the report's per-node carbon intensities).
type NodeLabelReader interface {
	NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error)
}

// RollupBuilder is a store whose rollups are built apart from its writes
// (ClickHouse): whoever writes to it refreshes the rollups of the hours it
// wrote. A store that keeps its rollups in step with every write (the
// embedded file) does not have it, and needs nothing refreshed.
type RollupBuilder interface {
	RebuildRollups(ctx context.Context, from, to time.Time) error
}

// ContainerAggregator is a store that sums container rows per container
// itself (ClickHouse, from its per-device rollups): AggregateContainers
// answers an aggregate query per bucket, report group, GPU, slice, pod,
// container and node, filling GPUUUID, SliceID, Pod, MIGProfile, Container
// and Node of every aggregate (the kinds without a container have only
// the GPU, slice and node). It is an ability of speed alone: a reader
// without it (the embedded file, whose ledger is one node's) sums
// ContainerRows instead, and both give the same sums (tested across the
// two stores), so asking for it and doing without changes no answer.
type ContainerAggregator interface {
	AggregateContainers(ctx context.Context, q AggregateQuery) ([]Aggregate, error)
}

// Rows asks s for its rows: an error naming s when it has none to stream.
func Rows(s any) (RowReader, error) { return need[RowReader](s, "does not stream its rows") }

// Quota asks s for its quota changes: an error naming s when it does not
// keep them.
func Quota(s any) (QuotaReader, error) { return need[QuotaReader](s, "does not keep quota changes") }

// QuotaStore asks s to record quota changes (serve's quota recorder).
func QuotaStore(s any) (quota.Store, error) {
	return need[quota.Store](s, "does not keep quota changes")
}

// NodeLabels asks s for its recorded node labels: an error naming s when
// it does not keep them.
func NodeLabels(s any) (NodeLabelReader, error) {
	return need[NodeLabelReader](s, "does not keep node labels")
}

// NodeLabelStore asks s to record node labels (serve's node label
// recorder).
func NodeLabelStore(s any) (nodelabel.Store, error) {
	return need[nodelabel.Store](s, "does not keep node labels")
}

// need asks s for the ability T: an error naming s and what it lacks.
func need[T any](s any, lacks string) (T, error) {
	r, ok := s.(T)
	if !ok {
		return r, fmt.Errorf("ledger %s %s", kind(s), lacks)
	}
	return r, nil
}

// kind names a store in an error: its Go type, which says which store (or
// which wrapper around one) lacks the ability.
func kind(s any) string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprintf("%T", s)
}
