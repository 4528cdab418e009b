package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/quota"
)

// ClusterView is a store seen through one cluster: every read returns
// only that cluster's rows, findings, coverage, quota changes and node
// labels, so a report built on it is that cluster's bill. Writes go to
// the store unchanged. The abilities the report requires (rows, quota,
// node labels, coverage) are asked of the store when read, and fail
// naming it when it lacks them.
type ClusterView struct {
	Store
	Cluster string
}

// ClusterRowBounder is a store that finds the extremes of one cluster's
// rows itself (ClickHouse, in the server): the start of the earliest, the
// start of the latest and the end of the latest deduplicated row of
// cluster whose interval starts in [from, to), as streaming them and
// keeping the cluster's would give; zero when there is none. A report finds its data's first and last
// instant so (OneCluster passes it on); it is a shortcut, never
// needed: a reader without it streams the rows, to the same answer.
type ClusterRowBounder interface {
	FirstClusterRowStart(ctx context.Context, cluster string, from, to time.Time) (time.Time, error)
	LastClusterRowStart(ctx context.Context, cluster string, from, to time.Time) (time.Time, error)
	LastClusterRowEnd(ctx context.Context, cluster string, from, to time.Time) (time.Time, error)
}

// OneCluster is s seen through cluster (a cluster name, checked): a
// *ClusterView, or where s is a ClusterRowBounder a view that also finds
// its rows' bounds through s (FirstRowStart, LastRowStart, LastRowEnd). Two types, so
// that asking the view for the ability is answered truly: a view of a
// store without it has no such methods, and its reader streams the rows
// as it would of the store itself, rather than calling a method that only
// says it cannot.
func OneCluster(s Store, cluster string) (Store, error) {
	if err := CheckClusterName(cluster); err != nil {
		return nil, err
	}
	v := &ClusterView{Store: s, Cluster: cluster}
	if b, ok := s.(ClusterRowBounder); ok {
		return &boundedClusterView{v, b}, nil
	}
	return v, nil
}

// boundedClusterView is the view of a store that is a ClusterRowBounder.
type boundedClusterView struct {
	*ClusterView
	b ClusterRowBounder
}

// FirstRowStart is the start of the cluster's earliest row whose interval
// starts in [from, to), found by the store.
func (v *boundedClusterView) FirstRowStart(ctx context.Context, from, to time.Time) (time.Time, error) {
	return v.b.FirstClusterRowStart(ctx, v.Cluster, from, to)
}

// LastRowStart is the start of the cluster's latest row whose interval
// starts in [from, to), found by the store.
func (v *boundedClusterView) LastRowStart(ctx context.Context, from, to time.Time) (time.Time, error) {
	return v.b.LastClusterRowStart(ctx, v.Cluster, from, to)
}

// LastRowEnd is the end of the cluster's latest row whose interval starts
// in [from, to), found by the store.
func (v *boundedClusterView) LastRowEnd(ctx context.Context, from, to time.Time) (time.Time, error) {
	return v.b.LastClusterRowEnd(ctx, v.Cluster, from, to)
}

var (
	_ RowReader       = (*ClusterView)(nil)
	_ QuotaReader     = (*ClusterView)(nil)
	_ NodeLabelReader = (*ClusterView)(nil)
	_ CoverageReader  = (*ClusterView)(nil)
)

// Aggregate asks the store for the cluster's aggregates.
func (v *ClusterView) Aggregate(ctx context.Context, q AggregateQuery) ([]Aggregate, error) {
	if q.Cluster != "" && q.Cluster != v.Cluster {
		return nil, fmt.Errorf("cannot aggregate cluster %q through a view of cluster %q", q.Cluster, v.Cluster)
	}
	q.Cluster = v.Cluster
	return v.Store.Aggregate(ctx, q)
}

func (v *ClusterView) mine(cluster string) bool { return ClusterOrDefault(cluster) == v.Cluster }

// Rows streams the cluster's rows.
func (v *ClusterView) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	rr, err := Rows(v.Store)
	if err != nil {
		return err
	}
	return rr.Rows(ctx, from, to, func(r attribution.Row) error {
		if !v.mine(r.Cluster) {
			return nil
		}
		return fn(r)
	})
}

// ContainerRows streams the cluster's container rows.
func (v *ClusterView) ContainerRows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	return v.Store.ContainerRows(ctx, from, to, func(r attribution.Row) error {
		if !v.mine(r.Cluster) {
			return nil
		}
		return fn(r)
	})
}

// Findings streams the cluster's findings.
func (v *ClusterView) Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	return v.Store.Findings(ctx, from, to, func(f attribution.Finding) error {
		if !v.mine(f.Cluster) {
			return nil
		}
		return fn(f)
	})
}

// QuotaChanges streams the cluster's quota changes.
func (v *ClusterView) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	qr, err := Quota(v.Store)
	if err != nil {
		return err
	}
	return qr.QuotaChanges(ctx, from, to, func(c quota.Change) error {
		if !v.mine(c.Cluster) {
			return nil
		}
		return fn(c)
	})
}

// NodeLabels is the cluster's nodes' values, keyed as the store keys
// them (NodeKey).
func (v *ClusterView) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	nr, err := NodeLabels(v.Store)
	if err != nil {
		return nil, err
	}
	all, err := nr.NodeLabels(ctx, key, at)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, val := range all {
		cluster, _, found := strings.Cut(k, "/")
		if !found {
			cluster = DefaultClusterName
		}
		if cluster == v.Cluster {
			out[k] = val
		}
	}
	return out, nil
}

// Coverage is the cluster's GPUs' coverage.
func (v *ClusterView) Coverage(ctx context.Context, from, to time.Time) (Coverage, error) {
	cr, err := Covered(v.Store)
	if err != nil {
		return Coverage{}, err
	}
	all, err := cr.Coverage(ctx, from, to)
	if err != nil {
		return Coverage{}, err
	}
	out := Coverage{Truncated: all.Truncated}
	for _, d := range all.Devices {
		if v.mine(d.Cluster) {
			out.Devices = append(out.Devices, d)
		}
	}
	return out, nil
}

var _ PriceBookStore = (*ClusterView)(nil)

// PriceBooks are the store's recorded price books: a cluster's bill is
// priced by the fleet's books. A store that records none has none.
func (v *ClusterView) PriceBooks(ctx context.Context) ([]PriceBookRecord, error) {
	if st, ok := v.Store.(PriceBookStore); ok {
		return st.PriceBooks(ctx)
	}
	return nil, nil
}

// RecordPriceBook is refused: a price book is the fleet's, recorded
// through the store itself.
func (v *ClusterView) RecordPriceBook(context.Context, PriceBookRecord, time.Time) (bool, error) {
	return false, fmt.Errorf("cannot record a price book through the view of cluster %q: record it in the ledger", v.Cluster)
}

var _ ClusterIdentities = (*ClusterView)(nil)

// ClusterIdentities are the store's recorded claims (every cluster's: a
// renamed cluster's names are read across them).
func (v *ClusterView) ClusterIdentities(ctx context.Context) ([]ClusterIdentity, error) {
	ci, err := Identities(v.Store)
	if err != nil {
		return nil, err
	}
	return ci.ClusterIdentities(ctx)
}

// ClaimCluster is refused: a collector claims its name in the store.
func (v *ClusterView) ClaimCluster(context.Context, string, string, time.Time) (string, error) {
	return "", fmt.Errorf("cannot claim a cluster name through the view of cluster %q", v.Cluster)
}
