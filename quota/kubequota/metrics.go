package kubequota

import (
	"math/big"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuledger/gpuledger/quota"
)

var (
	quotaDesc = prometheus.NewDesc("gpuledger_team_quota_gpus",
		"GPU quota the cluster's quota objects promise the team, in GPUs (MIG profiles weighted by their slices), by resource and source.",
		[]string{"team", "resource", "source"}, nil)
	limitDesc = prometheus.NewDesc("gpuledger_team_quota_limit_gpus",
		"Ceiling the team may reach by borrowing, in GPUs (MIG profiles weighted by their slices), by resource and source; only where a quota object states one.",
		[]string{"team", "resource", "source"}, nil)
)

// Collector returns a prometheus.Collector exporting the current snapshot:
// gpuledger_team_quota_gpus and gpuledger_team_quota_limit_gpus, summed
// by team, resource and source.
func (w *Watcher) Collector() prometheus.Collector { return collector{w.Snapshot} }

// NewCollector exports the entries snapshot returns (Watcher.Collector
// passes Watcher.Snapshot).
func NewCollector(snapshot func() []quota.Entry) prometheus.Collector { return collector{snapshot} }

type collector struct{ snapshot func() []quota.Entry }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaDesc
	ch <- limitDesc
}

type series struct{ team, resource, source string }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	quotas, limits := sums(c.snapshot())
	for _, m := range []struct {
		desc *prometheus.Desc
		sums map[series]*big.Rat
	}{{quotaDesc, quotas}, {limitDesc, limits}} {
		for s, v := range m.sums {
			f, _ := v.Float64()
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, f, s.team, s.resource, s.source)
		}
	}
}

// sums adds entries' quotas and stated limits, in GPUs, exactly, by team,
// resource and source. Entries whose resource has no weight are left out.
func sums(entries []quota.Entry) (quotas, limits map[series]*big.Rat) {
	quotas, limits = map[series]*big.Rat{}, map[series]*big.Rat{}
	add := func(m map[series]*big.Rat, s series, milli int64, w *big.Rat) {
		if m[s] == nil {
			m[s] = new(big.Rat)
		}
		v := new(big.Rat).Mul(big.NewRat(milli, 1000), w)
		m[s].Add(m[s], v)
	}
	for _, e := range entries {
		w, err := quota.Weight(e.Resource)
		if err != nil {
			continue
		}
		s := series{e.Team, e.Resource, e.Source}
		add(quotas, s, e.Milli, w)
		if e.LimitMilli > 0 {
			add(limits, s, e.LimitMilli, w)
		}
	}
	return quotas, limits
}
