package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.ClusterIdentities = (*Store)(nil)

// tableIdentities records which cluster each name belongs to (migration
// 8): every claim, the first per name (by first_seen_ns, then id) is the
// name's. ClickHouse has no transactions: two claims at once both go in,
// and every reader takes the same first one.
const tableIdentities = "cluster_identities"

var identitiesTable = table{
	name:    tableIdentities,
	columns: "cluster String,\n\tid String,\n\tfirst_seen_ns UInt64",
	engine:  "MergeTree",
	// A few rows a fleet: no partitions.
	orderBy:  "cluster, first_seen_ns, id",
	shardKey: "cityHash64(cluster)",
}

// ClaimCluster records id as cluster's identity unless the name has one,
// and returns the name's identity (ledger.ClusterIdentities).
func (s *Store) ClaimCluster(ctx context.Context, cluster, id string, at time.Time) (string, error) {
	if err := ledger.CheckClusterName(cluster); err != nil {
		return "", err
	}
	if err := ledger.CheckClusterID(id); err != nil {
		return "", err
	}
	got, err := s.clusterID(ctx, cluster)
	if err != nil || got != "" {
		return got, err
	}
	if err := s.insert(ctx, tableIdentities, []string{"cluster", "id", "first_seen_ns"},
		[]any{[]string{cluster}, []string{id}, []uint64{uint64(max(at.UnixNano(), 0))}}, 1); err != nil {
		return "", err
	}
	return s.clusterID(ctx, cluster)
}

// clusterID is the identity the first claim of cluster recorded, or "".
func (s *Store) clusterID(ctx context.Context, cluster string) (string, error) {
	// The name is a DNS label (checked): safe to splice.
	q := fmt.Sprintf("SELECT id FROM %s WHERE cluster = '%s' ORDER BY first_seen_ns, id LIMIT 1", s.table(tableIdentities), cluster)
	var got string
	err := s.query(ctx, "read the identity of cluster "+cluster, q, func(rs driver.Rows) error {
		if err := rs.Scan(&got); err != nil {
			return scanError{err}
		}
		return nil
	})
	return got, err
}

// ClusterIdentities is every claim, by first seen.
func (s *Store) ClusterIdentities(ctx context.Context) ([]ledger.ClusterIdentity, error) {
	q := fmt.Sprintf("SELECT cluster, id, first_seen_ns FROM %s ORDER BY first_seen_ns, cluster, id LIMIT %d",
		s.table(tableIdentities), ledger.MaxClusterIdentities+1)
	var out []ledger.ClusterIdentity
	err := s.query(ctx, "read the cluster identities", q, func(rs driver.Rows) error {
		var (
			c  ledger.ClusterIdentity
			ns uint64
		)
		if err := rs.Scan(&c.Cluster, &c.ID, &ns); err != nil {
			return scanError{err}
		}
		if len(out) == ledger.MaxClusterIdentities {
			return fmt.Errorf("cannot read the cluster identities: more than %d", ledger.MaxClusterIdentities)
		}
		c.FirstSeen = time.Unix(0, int64(ns)).UTC()
		out = append(out, c)
		return nil
	})
	// Two claims of one name at once: the later is not the name's.
	seen := map[string]bool{}
	kept := out[:0]
	for _, c := range out {
		if !seen[c.Cluster] {
			kept = append(kept, c)
		}
		seen[c.Cluster] = true
	}
	return kept, err
}
