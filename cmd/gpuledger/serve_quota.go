package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/quota/quotaservice"
)

// errQuotaNeedsClickHouse: the embedded file has one writer, the
// collector, so serve records quota only into ClickHouse.
var errQuotaNeedsClickHouse = errors.New("serve --quota records quota changes into the cluster ledger: --ledger must be clickhouse://...; the embedded file's one writer is the collector")

// newQuotaService wires serve --quota (quota/quotaservice) to the cluster
// ledger at dsn and the cluster kubeconfig names; nodeLabel, when not "",
// is the node label whose values are recorded too; cluster is the name
// they are recorded under ("" the default cluster).
func newQuotaService(dsn, kubeconfig, teamLabel, nodeLabel, cluster string, interval time.Duration) (*quotaservice.Service, error) {
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if d.Scheme != ledger.SchemeClickHouse {
		return nil, errQuotaNeedsClickHouse
	}
	cfg, err := kubemeta.RESTConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("serve --quota: %w", err)
	}
	s, err := quotaservice.New(quotaservice.Config{
		Open: func(ctx context.Context) (io.Closer, error) {
			st, err := ledger.Open(ctx, dsn, storeOpeners)
			if err != nil {
				return nil, err
			}
			return clusterRecorder{Store: st, cluster: ledger.ClusterOrDefault(cluster)}, nil
		},
		Kube:      cfg,
		TeamLabel: teamLabel, NodeLabel: nodeLabel, Interval: interval,
	})
	if err != nil {
		return nil, fmt.Errorf("serve --quota: %w", err)
	}
	return s, nil
}

// clusterRecorder is the fleet's ledger as one cluster's serve --quota
// sees it: what it records is stamped with the cluster, and what the
// recorders compare the cluster with is that cluster's alone, so two
// clusters recording into one ledger never take each other's quota
// objects or nodes for their own (nor record them as removed).
type clusterRecorder struct {
	ledger.Store
	cluster string
}

func (c clusterRecorder) AppendQuota(ctx context.Context, changes []quota.Change) error {
	qs, err := ledger.QuotaStore(c.Store)
	if err != nil {
		return err
	}
	for i := range changes {
		changes[i].Cluster = c.cluster
	}
	return qs.AppendQuota(ctx, changes)
}

func (c clusterRecorder) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	qs, err := ledger.QuotaStore(c.Store)
	if err != nil {
		return err
	}
	return qs.QuotaChanges(ctx, from, to, func(ch quota.Change) error {
		if ledger.ClusterOrDefault(ch.Cluster) != c.cluster {
			return nil
		}
		return fn(ch)
	})
}

func (c clusterRecorder) AppendNodeLabels(ctx context.Context, changes []nodelabel.Change) error {
	ns, err := ledger.NodeLabelStore(c.Store)
	if err != nil {
		return err
	}
	for i := range changes {
		changes[i].Cluster = c.cluster
	}
	return ns.AppendNodeLabels(ctx, changes)
}

// NodeLabels are the cluster's nodes' values, keyed by node name as the
// cluster's own nodes are (the ledger keys another cluster's node
// "cluster/node": ledger.NodeKey).
func (c clusterRecorder) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	ns, err := ledger.NodeLabelStore(c.Store)
	if err != nil {
		return nil, err
	}
	all, err := ns.NodeLabels(ctx, key, at)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range all {
		if c.cluster == attribution.DefaultCluster {
			if !strings.Contains(k, "/") {
				out[k] = v
			}
			continue
		}
		if node, ok := strings.CutPrefix(k, c.cluster+"/"); ok {
			out[node] = v
		}
	}
	return out, nil
}

var (
	_ quota.Store     = clusterRecorder{}
	_ nodelabel.Store = clusterRecorder{}
)
