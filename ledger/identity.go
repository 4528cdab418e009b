package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxClusterID bounds a cluster identity (a namespace UID is 36).
const MaxClusterID = 253

// ClusterIdentity is what the ledger records of a cluster name: the
// identity of the cluster that first shipped under it (collect
// --cluster-id: by default the UID of its kube-system namespace) and
// when.
type ClusterIdentity struct {
	Cluster, ID string
	FirstSeen   time.Time
}

// ClusterIdentities is a store that records which cluster a name
// belongs to, so that two clusters claiming one name are told apart.
type ClusterIdentities interface {
	// ClaimCluster records id as cluster's identity at at unless the name
	// has one, and returns the identity recorded for the name (the first
	// claim's: of two claims at once, the earlier wins).
	ClaimCluster(ctx context.Context, cluster, id string, at time.Time) (string, error)
	// ClusterIdentities is every recorded claim, by first seen.
	ClusterIdentities(ctx context.Context) ([]ClusterIdentity, error)
}

// Identities asks s for its recorded cluster identities.
func Identities(s any) (ClusterIdentities, error) {
	return need[ClusterIdentities](s, "does not record cluster identities")
}

// CheckClusterID says why id cannot be a cluster identity, or nil.
func CheckClusterID(id string) error {
	if id == "" || len(id) > MaxClusterID {
		return fmt.Errorf("cluster identity %.40q is empty or longer than %d", id, MaxClusterID)
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("cluster identity %.40q has a space or a control character", id)
		}
	}
	return nil
}

// ErrClusterClaimed is ClaimClusterName's error when the name belongs to
// another cluster.
var ErrClusterClaimed = errors.New("the cluster name belongs to another cluster")

// ClaimClusterName claims cluster for id in s at now: an error naming
// both identities when the ledger records another one for the name (two
// clusters claiming one name would mix their nodes' rows).
func ClaimClusterName(ctx context.Context, s any, cluster, id string, now time.Time) error {
	if err := CheckClusterName(cluster); err != nil {
		return err
	}
	if err := CheckClusterID(id); err != nil {
		return err
	}
	ci, err := Identities(s)
	if err != nil {
		return err
	}
	got, err := ci.ClaimCluster(ctx, cluster, id, now)
	if err != nil {
		return fmt.Errorf("cannot claim cluster name %q in the ledger: %w", cluster, err)
	}
	if got != id {
		return fmt.Errorf("%w: the ledger records cluster %q as identity %q, and this one is %q: two clusters claim one name; give this one its own --cluster, or, if it is the same cluster, --cluster-id %s",
			ErrClusterClaimed, cluster, got, id, got)
	}
	return nil
}

// RenamedClusters are, for each identity recorded under more than one
// name, those names in the order they were first seen: a cluster renamed
// mid-period keeps its old rows under its old name.
func RenamedClusters(ids []ClusterIdentity) map[string][]ClusterIdentity {
	by := map[string][]ClusterIdentity{}
	for _, c := range ids {
		by[c.ID] = append(by[c.ID], c)
	}
	for id, cs := range by {
		if len(cs) < 2 {
			delete(by, id)
		}
	}
	return by
}

// MaxClusterIdentities bounds the claims a store returns.
const MaxClusterIdentities = 10000
