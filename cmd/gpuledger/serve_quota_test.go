package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/kubetest"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/quota"
)

// TestServeQuotaOnRealCluster runs `gpuledger serve --quota` against a
// real kube-apiserver with the schedulers' upstream CRDs and a real
// ClickHouse ledger: quotas created, changed and deleted while it runs
// are recorded in the ledger (in order, each at a time between the
// change and the record that saw it), /metrics serves them as
// gpuledger_team_quota_gpus, and the month's report has them in its
// quota section and, under policy quota, its quota lines.
func TestServeQuotaOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and ClickHouse")
	}
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	c := kubetest.StartT(t, kubetest.Options{})
	ctx := context.Background()
	dsn := h.DSN(t)
	if err := runLedger(ctx, []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	crds := filepath.Join("..", "..", "quota", "kubequota", "testdata", "crds")
	for _, f := range []string{"kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_resourceflavors.yaml"} {
		kubectlT(t, c, nil, "create", "-f", filepath.Join(crds, f))
	}
	kubectlT(t, c, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/clusterqueues.kueue.x-k8s.io",
		"crd/localqueues.kueue.x-k8s.io", "crd/resourceflavors.kueue.x-k8s.io")
	kubectlT(t, c, strings.NewReader(`
apiVersion: v1
kind: Namespace
metadata: {name: ml-train, labels: {team: ml}}
---
apiVersion: v1
kind: Namespace
metadata: {name: vision}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: vision}
spec: {hard: {requests.nvidia.com/mig-1g.10gb: "7"}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-ml, labels: {team: ml}}
spec:
  cohortName: pool
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: "4", borrowingLimit: "2"}]
`), "apply", "-f", "-")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, c.Admin); err != nil {
		t.Fatal(err)
	}
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(prices, []byte("currency: USD\npolicy: quota\ndefaultRate: 2.00\nquota: {source: kueue, rate: 1.50, aboveRate: 3.00}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := loopbackAddr(t)
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	began := time.Now().Truncate(time.Second)
	// An hour of one A100 held by team ml around the test: quota is billed
	// only over the hours the ledger has rows for (docs/quota.md), so the
	// month's bill needs some.
	{
		base := attribution.Row{IntervalStart: began.Add(-5 * time.Minute).UTC(), IntervalEnd: began.Add(55 * time.Minute).UTC(),
			Node: "gpu-a", GPUUUID: "GPU-0", SliceID: "GPU-0", GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Method: "measured"}
		ct, un, idle := base, base, base
		ct.Kind, ct.Namespace, ct.Pod, ct.PodUID, ct.Container, ct.Team = attribution.KindContainer, "ml-train", "p", "u-ml", "c", "ml"
		ct.AllocatedGPUSeconds, ct.UsedGPUSeconds = 3600, 1800
		un.Kind, idle.Kind, idle.UsedGPUSeconds = attribution.KindUnallocated, attribution.KindIdle, 1800
		st, err := ledger.Open(ctx, dsn, storeOpeners)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ctx, []attribution.Row{ct, un, idle}, nil); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	go func() {
		errc <- run(sctx, []string{"serve", "--ledger", dsn, "--prices", prices, "--listen", addr,
			"--quota", "--quota-interval", "10s", "--kubeconfig", kubeconfig, "--advice-refresh", "0"}, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30 s of its context ending")
		}
	})
	base := "http://" + addr
	waitMetric := func(want ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, func() error {
			resp, body := getBodyErr(base + "/metrics")
			if resp != 200 {
				return fmt.Errorf("/metrics: %d", resp)
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					return fmt.Errorf("/metrics lacks %q", w)
				}
			}
			return nil
		})
	}
	waitMetric(`gpuledger_team_quota_gpus{resource="A100-SXM4-80GB",source="kueue",team="ml"} 4`,
		`gpuledger_team_quota_limit_gpus{resource="A100-SXM4-80GB",source="kueue",team="ml"} 6`,
		`gpuledger_team_quota_gpus{resource="mig-1g.10gb",source="resourcequota",team="vision"} 1`,
		`gpuledger_quota_changes_recorded_total 2`)

	changed := time.Now().Truncate(time.Second)
	kubectlT(t, c, nil, "patch", "clusterqueue", "cq-ml", "--type=json",
		`-p=[{"op":"replace","path":"/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota","value":"2"}]`)
	waitMetric(`gpuledger_team_quota_gpus{resource="A100-SXM4-80GB",source="kueue",team="ml"} 2`, `gpuledger_quota_changes_recorded_total 3`)
	deleted := time.Now().Truncate(time.Second)
	kubectlT(t, c, nil, "delete", "resourcequota", "gpus", "-n", "vision")
	waitMetric(`gpuledger_quota_changes_recorded_total 4`)
	ended := time.Now().Add(time.Second)

	st, err := ledger.Open(ctx, dsn, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []quota.Change
	if err := st.(quota.Store).QuotaChanges(ctx, began.Add(-time.Hour), ended.Add(time.Hour), func(c quota.Change) error {
		got = append(got, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ml := quota.Key{Source: quota.SourceKueue, Object: "cq-ml", Resource: "A100-SXM4-80GB"}
	vision := quota.Key{Source: quota.SourceResourceQuota, Object: "vision", Resource: "mig-1g.10gb"}
	want := []struct {
		entry      quota.Entry
		deleted    bool
		after, end time.Time
	}{
		{quota.Entry{Key: ml, Team: "ml", Milli: 4000, LimitMilli: 6000}, false, began, changed},
		{quota.Entry{Key: vision, Team: "vision", Milli: 7000}, false, began, changed},
		{quota.Entry{Key: ml, Team: "ml", Milli: 2000, LimitMilli: 4000}, false, changed, deleted},
		{quota.Entry{Key: vision, Team: "vision"}, true, deleted, ended},
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %d changes, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Entry != w.entry || g.Deleted != w.deleted || g.At.Before(w.after) || g.At.After(w.end) {
			t.Errorf("change %d = %+v at %s, want %+v (deleted %v) between %s and %s", i, g.Entry, g.At.Format(time.RFC3339),
				w.entry, w.deleted, w.after.Format(time.RFC3339), w.end.Format(time.RFC3339))
		}
	}

	month := began.UTC().Format("2006-01")
	_, page := getBodyErr(base + "/reports/" + month + ".json")
	for _, w := range []string{`"billed_source": "kueue"`, `"team": "ml"`, `"source": "resourcequota"`, `"line_type": "quota"`, `"gpu_model": "A100-SXM4-80GB"`} {
		if !strings.Contains(page, w) {
			t.Errorf("the month's JSON lacks %s:\n%.2000s", w, page)
		}
	}
}

// getBodyErr fetches u: the status (0 when the request failed) and body.
func getBodyErr(u string) (int, string) {
	cl := &http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get(u)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func kubectlT(t *testing.T, c *kubetest.Cluster, stdin io.Reader, args ...string) {
	t.Helper()
	if out, err := c.Kubectl(context.Background(), stdin, args...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
