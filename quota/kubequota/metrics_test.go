package kubequota

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/gpuledger/gpuledger/quota"
)

// The collector's families pass promlint and sum by team, resource and
// source; a limit series only where a limit is stated.
func TestCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(func() []quota.Entry {
		return []quota.Entry{
			entry("kueue", "a", "gpu", "ml", 1500, 0),
			entry("kueue", "b", "gpu", "ml", 500, 3000),
			entry("kueue", "c", "mig-1g.10gb", "ml", 7000, 14000),
			entry("resourcequota", "ns", "mig-3g.40gb", "cv", 7000, 0), // 7 x 3/7
		}
	}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	checkSeries(t, reg, []string{
		`gpuledger_team_quota_gpus{resource="gpu",source="kueue",team="ml"} 2`,
		`gpuledger_team_quota_gpus{resource="mig-1g.10gb",source="kueue",team="ml"} 1`,
		`gpuledger_team_quota_gpus{resource="mig-3g.40gb",source="resourcequota",team="cv"} 3`,
		`gpuledger_team_quota_limit_gpus{resource="gpu",source="kueue",team="ml"} 3`,
		`gpuledger_team_quota_limit_gpus{resource="mig-1g.10gb",source="kueue",team="ml"} 2`,
	})
}
