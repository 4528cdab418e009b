package ledger

import (
	"cmp"
	"fmt"
	"regexp"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/nodelabel"
)

// MaxClusterName is the longest cluster name: a DNS label.
const MaxClusterName = 63

var clusterLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// CheckClusterName says why name is not a cluster name (a DNS label:
// lowercase letters, digits and '-', neither first nor last, at most 63),
// or nil. Names go into ClickHouse filters, URLs, metric labels and file
// names, so they are kept to what is safe in all of them.
func CheckClusterName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty cluster name (want a DNS label such as %q)", attribution.DefaultCluster)
	case len(name) > MaxClusterName:
		return fmt.Errorf("cluster name %.20q... is %d characters, over the %d of a DNS label", name, len(name), MaxClusterName)
	case !clusterLabel.MatchString(name):
		return fmt.Errorf("invalid cluster name %q: want a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", name)
	}
	return nil
}

// ClusterOrDefault is the name a row of cluster is stored under: empty
// (a single-cluster install, or a row written before clusters) is
// attribution.DefaultCluster.
func ClusterOrDefault(cluster string) string {
	return cmp.Or(cluster, attribution.DefaultCluster)
}

// CheckAggregateCluster checks the cluster filter of q.
func CheckAggregateCluster(q AggregateQuery) error {
	if q.Cluster == "" {
		return nil
	}
	if err := CheckClusterName(q.Cluster); err != nil {
		return fmt.Errorf("cannot filter by cluster: %w", err)
	}
	return nil
}

// FoldClusters turns aggregates that a store grouped by cluster (each with
// Cluster set) into what q asks: only q.Cluster's when it is set, and,
// unless q.ByCluster, the clusters of each otherwise equal group summed
// into one (Cluster then stays set only when a filter names it). The first
// of each group keeps its place, so an order the store sorted in (by
// every key but the cluster) holds; within equal keys the clusters follow
// in the store's order. ByNode aggregates keep their cluster: a node is
// (cluster, node).
func FoldClusters(as []Aggregate, q AggregateQuery) []Aggregate {
	if q.Cluster != "" {
		kept := as[:0]
		for _, a := range as {
			if a.Cluster == q.Cluster {
				kept = append(kept, a)
			}
		}
		as = kept
	}
	if q.ByCluster || q.ByNode || q.Cluster != "" {
		return as
	}
	// One cluster, as on every ledger but a fleet's: each group is one
	// aggregate, whose cluster is cleared (hashing every aggregate whole
	// was a tenth of a month's per-pod read).
	one := true
	for i := range as {
		if as[i].Cluster != as[0].Cluster {
			one = false
			break
		}
	}
	if one {
		for i := range as {
			as[i].Cluster = ""
		}
		return as
	}
	index := make(map[Aggregate]int, len(as))
	out := as[:0]
	for _, a := range as {
		k := a
		k.Cluster = ""
		k.AllocatedSeconds, k.UsedSeconds, k.MemoryMiBSeconds, k.EnergyJoules, k.Rows = 0, 0, 0, 0, 0
		if i, ok := index[k]; ok {
			o := &out[i]
			o.AllocatedSeconds += a.AllocatedSeconds
			o.UsedSeconds += a.UsedSeconds
			o.MemoryMiBSeconds += a.MemoryMiBSeconds
			o.EnergyJoules += a.EnergyJoules
			o.Rows += a.Rows
			continue
		}
		index[k] = len(out)
		a.Cluster = ""
		out = append(out, a)
	}
	return out
}

// NodeKey names a node of the fleet where a map is keyed by node (node
// labels): a node of the default cluster by its name, as before clusters,
// one of another cluster as "cluster/node" (a node name never holds '/').
func NodeKey(cluster, node string) string {
	if cluster == "" || cluster == attribution.DefaultCluster {
		return node
	}
	return cluster + "/" + node
}

// CheckRowCluster checks the cluster a row, finding, quota change or node
// label carries: empty (the default cluster) or a cluster name.
func CheckRowCluster(cluster string) error {
	if cluster == "" {
		return nil
	}
	return CheckClusterName(cluster)
}

// ValidateNodeLabels is nodelabel.Validate and a check of each change's
// cluster: what both stores' AppendNodeLabels refuse.
func ValidateNodeLabels(changes []nodelabel.Change, lo, hi time.Time) error {
	if err := nodelabel.Validate(changes, lo, hi); err != nil {
		return err
	}
	for i := range changes {
		if err := CheckRowCluster(changes[i].Cluster); err != nil {
			return fmt.Errorf("node label change %d (node %.300q): %w", i, changes[i].Node, err)
		}
	}
	return nil
}

// DefaultClusterName is attribution.DefaultCluster, for readers that
// import only the ledger contract.
const DefaultClusterName = attribution.DefaultCluster
