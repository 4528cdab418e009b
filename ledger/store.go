package ledger

import (
	"context"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/calendar"
)

// Store is where ledger rows and findings live. The embedded file store
// (the default, and the collector's outbox) and ClickHouse implement it.
// Reports ask a Store for aggregates, never for raw rows.
type Store interface {
	// Append writes rows and findings durably in one transaction. Writing
	// a row whose key (cluster, node, GPU, slice, pod UID, container, kind,
	// interval start) is already stored replaces it: a replay changes
	// nothing. An empty cluster is stored as attribution.DefaultCluster.
	Append(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error
	// Rows streams the rows whose interval starts in [from, to), ordered by
	// interval start, cluster, node, GPU, slice, pod UID, container.
	Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error
	// ContainerRows streams the container rows whose interval starts in
	// [from, to), in no particular order, with only what a per-replica
	// reader (the advisor) needs: times, node, GPU, slice, pod, pod UID,
	// container, team, namespace, GPU model, sharing mode, allocated and
	// used GPU-seconds, memory and energy. Method and MIGProfile are left
	// empty.
	ContainerRows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error
	// Findings streams the findings that overlap [from, to).
	Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error
	// Aggregate sums rows in [q.From, q.To) grouped as the report needs.
	Aggregate(ctx context.Context, q AggregateQuery) ([]Aggregate, error)
	Close() error
}

// Bucket sizes for aggregates, in the query's time zone.
const (
	BucketNone  = ""
	BucketHour  = calendar.Hour
	BucketDay   = calendar.Day
	BucketMonth = calendar.Month
)

// AggregateQuery selects and groups ledger rows for reports.
type AggregateQuery struct {
	From, To time.Time
	Location *time.Location // buckets are calendar hours/days/months here; nil = UTC
	Bucket   string
	// ByDevice also groups by GPU UUID, slice (device ID) and pod name,
	// filling those fields of each Aggregate (file_device.go): the grain of
	// the FOCUS export's per-GPU rows.
	ByDevice bool
	// ByNode groups by node name too, filling Node, and sums only
	// EnergyJoules and Rows (the report's per-node carbon intensities);
	// not with ByDevice. A node is (Cluster, Node): each aggregate's
	// Cluster is set.
	ByNode bool
	// Cluster keeps only the rows of that cluster; empty: the whole fleet.
	Cluster string
	// ByCluster also groups by cluster, filling Cluster.
	ByCluster bool
}

// Aggregate is one group of ledger rows: one bucket, team, namespace, GPU
// model, sharing mode and row kind.
type Aggregate struct {
	BucketStart                     time.Time // zero with BucketNone
	Team, Namespace, GPUModel, Mode string
	Kind                            attribution.Kind
	AllocatedSeconds, UsedSeconds   float64
	MemoryMiBSeconds, EnergyJoules  float64
	Rows                            int64
	// GPUUUID, SliceID, Pod and MIGProfile are set only by a ByDevice
	// query; MIGProfile is empty for whole GPUs and for rows stored before
	// the ledger recorded profiles.
	GPUUUID, SliceID, Pod string
	MIGProfile            string
	// Node is set only by a ByNode query (and AggregateContainers).
	Node string
	// Container is set only by AggregateContainers (ContainerAggregator).
	Container string
	// Cluster is set by a ByCluster or ByNode query, and by one whose
	// Cluster filter names it.
	Cluster string
}
