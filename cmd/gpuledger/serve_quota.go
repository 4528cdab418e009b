package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota/quotaservice"
)

// errQuotaNeedsClickHouse: the embedded file has one writer, the
// collector, so serve records quota only into ClickHouse.
var errQuotaNeedsClickHouse = errors.New("serve --quota records quota changes into the cluster ledger: --ledger must be clickhouse://...; the embedded file's one writer is the collector")

// newQuotaService wires serve --quota (quota/quotaservice) to the cluster
// ledger at dsn and the cluster kubeconfig names; nodeLabel, when not "",
// is the node label whose values are recorded too.
func newQuotaService(dsn, kubeconfig, teamLabel, nodeLabel string, interval time.Duration) (*quotaservice.Service, error) {
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
		Open:      func(ctx context.Context) (io.Closer, error) { return ledger.Open(ctx, dsn, storeOpeners) },
		Kube:      cfg,
		TeamLabel: teamLabel, NodeLabel: nodeLabel, Interval: interval,
	})
	if err != nil {
		return nil, fmt.Errorf("serve --quota: %w", err)
	}
	return s, nil
}
