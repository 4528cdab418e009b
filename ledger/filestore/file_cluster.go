package filestore

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.ClusterIdentities = (*FileStore)(nil)

// ClaimCluster records id as cluster's identity unless the name has one
// (ledger.ClusterIdentities), in one statement: of two claims, the first
// committed wins.
func (s *FileStore) ClaimCluster(ctx context.Context, cluster, id string, at time.Time) (string, error) {
	if s.opts.ReadOnly {
		return "", fmt.Errorf("cannot claim cluster %q in ledger %s: it is opened read-only", cluster, s.path)
	}
	if err := ledger.CheckClusterName(cluster); err != nil {
		return "", err
	}
	if err := ledger.CheckClusterID(id); err != nil {
		return "", err
	}
	if err := s.upsertAll(ctx, "cluster identity", `INSERT INTO cluster_identities (cluster, id, first_seen) VALUES (?, ?, ?)
ON CONFLICT (cluster) DO NOTHING`, 1, func(int) ([]any, string) {
		return []any{cluster, id, at.UnixNano()}, "cluster " + cluster
	}); err != nil {
		return "", err
	}
	var got string
	if err := s.w.QueryRowContext(ctx, "SELECT id FROM cluster_identities WHERE cluster = ?", cluster).Scan(&got); err != nil {
		return "", fmt.Errorf("cannot read the identity of cluster %q in ledger %s: %w", cluster, s.path, s.describe(err))
	}
	return got, nil
}

// ClusterIdentities is every recorded claim, by first seen; none in a
// file from before clusters opened read-only.
func (s *FileStore) ClusterIdentities(ctx context.Context) ([]ledger.ClusterIdentity, error) {
	if ok, err := hasTable(ctx, s.r, "cluster_identities"); err != nil || !ok {
		return nil, err
	}
	rs, err := s.r.QueryContext(ctx, "SELECT cluster, id, first_seen FROM cluster_identities ORDER BY first_seen, cluster LIMIT ?", maxClusterIdentities+1)
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster identities of %s: %w", s.path, s.describe(err))
	}
	defer rs.Close()
	var out []ledger.ClusterIdentity
	for rs.Next() {
		var (
			c  ledger.ClusterIdentity
			ns int64
		)
		if err := rs.Scan(&c.Cluster, &c.ID, &ns); err != nil {
			return nil, fmt.Errorf("cannot read the cluster identities of %s: %w", s.path, s.describe(err))
		}
		if len(out) == maxClusterIdentities {
			return nil, fmt.Errorf("cannot read the cluster identities of %s: more than %d", s.path, maxClusterIdentities)
		}
		c.FirstSeen = fromNS(ns)
		out = append(out, c)
	}
	return out, rs.Err()
}

// maxClusterIdentities bounds what a read returns: a fleet is tens of
// clusters, renamed a few times.
const maxClusterIdentities = ledger.MaxClusterIdentities
