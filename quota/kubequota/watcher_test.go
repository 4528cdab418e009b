package kubequota

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuledger/gpuledger/internal/kubetest"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/quota"
)

// waitLimit bounds every wait for the watcher to follow the API server; it
// asserts nothing about speed.
const waitLimit = time.Minute

// logBuffer is a slog handler's thread-safe sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// apply applies YAML documents as the cluster admin.
func apply(t *testing.T, c *kubetest.Cluster, docs string) {
	t.Helper()
	if out, err := c.Kubectl(context.Background(), strings.NewReader(docs), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func kubectl(t *testing.T, c *kubetest.Cluster, args ...string) {
	t.Helper()
	if out, err := c.Kubectl(context.Background(), nil, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// installCRDs creates the upstream CRDs (testdata/crds) and waits until
// the API server serves them.
func installCRDs(t *testing.T, c *kubetest.Cluster, files ...string) {
	t.Helper()
	for _, f := range files {
		kubectl(t, c, "create", "-f", filepath.Join("testdata", "crds", f))
		name := strings.TrimSuffix(f, ".yaml")
		group, plural, _ := strings.Cut(name, "_")
		kubectl(t, c, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+plural+"."+group)
	}
}

var allCRDs = []string{
	"kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_resourceflavors.yaml",
	"scheduling.volcano.sh_queues.yaml", "scheduling.run.ai_queues.yaml",
}

// startWatcher runs a watcher as the admin until the test ends.
func startWatcher(t *testing.T, c *kubetest.Cluster, id kubetest.Identity, recheck time.Duration) (*Watcher, *logBuffer) {
	t.Helper()
	cfg, err := c.Config(id)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	w, err := New(cfg, "", slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})), WithRecheck(recheck))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after its context ended")
		}
	})
	sctx, scancel := context.WithTimeout(context.Background(), waitLimit)
	defer scancel()
	if err := w.WaitForSync(sctx); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logs)
	}
	return w, logs
}

// waitSnapshot waits until the snapshot is want.
func waitSnapshot(t *testing.T, w *Watcher, want []quota.Entry) {
	t.Helper()
	testenv.Eventually(t, waitLimit, func() error {
		if got := w.Snapshot(); !slices.Equal(got, want) {
			return fmt.Errorf("snapshot:%s\nwant:%s", fmtEntries(got), fmtEntries(want))
		}
		return nil
	})
}

const clusterObjects = `
apiVersion: v1
kind: Namespace
metadata: {name: ml-a, labels: {team: ml, kueue: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ml-b, labels: {team: ml, kueue: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: cv, labels: {team: vision, kueue: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: scratch}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpu, namespace: ml-a}
spec:
  hard: {requests.nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: tight, namespace: ml-a}
spec:
  hard: {requests.nvidia.com/gpu: "6", requests.nvidia.com/mig-1g.10gb: "14", requests.cpu: "64"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: scratch}
spec:
  hard: {requests.nvidia.com/gpu: 500m}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: cpu, namespace: cv}
spec:
  hard: {requests.cpu: "10"}
`

const queueObjects = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: ml-cq}
spec:
  cohortName: pool
  namespaceSelector: {matchLabels: {kueue: enabled}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}
    - name: any
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: shared-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: any
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: vision-cq, labels: {team: vision}}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/mig-1g.10gb]
    flavors:
    - name: any
      resources:
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: 7}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ml-a}
spec: {clusterQueue: ml-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ml-b}
spec: {clusterQueue: ml-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: shared, namespace: ml-a}
spec: {clusterQueue: shared-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: shared, namespace: cv}
spec: {clusterQueue: shared-cq}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: vq-research, labels: {team: ml}}
spec:
  guarantee: {resource: {nvidia.com/gpu: "4"}}
  deserved: {nvidia.com/gpu: "6"}
  capability: {nvidia.com/gpu: "8"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: vq-dept}
spec:
  deserved: {nvidia.com/gpu: "10"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: vq-child}
spec:
  parent: vq-dept
  deserved: {nvidia.com/gpu: 2500m}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: dept}
spec:
  resources:
    gpu: {quota: 16, limit: 24, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a, labels: {team: alpha}}
spec:
  parentQueue: dept
  resources:
    gpu: {quota: 2.5, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-b}
spec:
  parentQueue: dept
  resources:
    gpu: {quota: 0.5, limit: 4, overQuotaWeight: 1}
`

// The whole path on a real kube-apiserver with the upstream CRDs: objects
// created, changed and deleted, the snapshot following each time. Every
// expected entry is worked out by hand from the objects above.
func TestWatcherOnRealAPIServer(t *testing.T) {
	c := kubetest.StartT(t, kubetest.Options{})
	installCRDs(t, c, allCRDs...)
	apply(t, c, clusterObjects)
	apply(t, c, queueObjects)

	w, logs := startWatcher(t, c, c.Admin, time.Minute)
	waitSnapshot(t, w, []quota.Entry{
		// H100 flavor: 8 nominal, 8+4 ceiling; the "any" flavor 2, with no
		// borrowing limit. LocalQueues in ml-a and ml-b: team ml.
		entry("kai", "team-a", "gpu", "alpha", 2500, 0),
		entry("kai", "team-b", "gpu", "team-b", 500, 4000),
		entry("kueue", "ml-cq", "H100-80GB-HBM3", "ml", 8000, 12000),
		entry("kueue", "ml-cq", "gpu", "ml", 2000, 0),
		// LocalQueues in ml-a (ml) and cv (vision): no single payer.
		entry("kueue", "shared-cq", "gpu", "shared-cq", 4000, 0),
		entry("kueue", "vision-cq", "mig-1g.10gb", "vision", 7000, 0),
		// min(8, 6) GPUs; the MIG quota from the one quota naming it.
		entry("resourcequota", "ml-a", "gpu", "ml", 6000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("resourcequota", "scratch", "gpu", "scratch", 500, 0),
		// vq-dept is vq-child's parent: only the leaf counts.
		entry("volcano", "vq-child", "gpu", "vq-child", 2500, 0),
		entry("volcano", "vq-research", "gpu", "ml", 4000, 8000),
	})
	for _, s := range []string{"kueue", "volcano", "kai"} {
		if n := logs.count(s + " quotas recorded"); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", s+" quotas recorded", n, logs)
		}
	}

	// The metrics sum by team, resource and source.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(w.Collector())
	checkSeries(t, reg, []string{
		`gpuledger_team_quota_gpus{resource="H100-80GB-HBM3",source="kueue",team="ml"} 8`,
		`gpuledger_team_quota_gpus{resource="gpu",source="kai",team="alpha"} 2.5`,
		`gpuledger_team_quota_gpus{resource="gpu",source="kai",team="team-b"} 0.5`,
		`gpuledger_team_quota_gpus{resource="gpu",source="kueue",team="ml"} 2`,
		`gpuledger_team_quota_gpus{resource="gpu",source="kueue",team="shared-cq"} 4`,
		`gpuledger_team_quota_gpus{resource="gpu",source="resourcequota",team="ml"} 6`,
		`gpuledger_team_quota_gpus{resource="gpu",source="resourcequota",team="scratch"} 0.5`,
		`gpuledger_team_quota_gpus{resource="gpu",source="volcano",team="ml"} 4`,
		`gpuledger_team_quota_gpus{resource="gpu",source="volcano",team="vq-child"} 2.5`,
		`gpuledger_team_quota_gpus{resource="mig-1g.10gb",source="kueue",team="vision"} 1`, // 7 x 1/7
		`gpuledger_team_quota_gpus{resource="mig-1g.10gb",source="resourcequota",team="ml"} 2`,
		`gpuledger_team_quota_limit_gpus{resource="H100-80GB-HBM3",source="kueue",team="ml"} 12`,
		`gpuledger_team_quota_limit_gpus{resource="gpu",source="kai",team="team-b"} 4`,
		`gpuledger_team_quota_limit_gpus{resource="gpu",source="volcano",team="ml"} 8`,
	})

	// Changes: a tighter quota, a deleted one, a namespace moving team
	// (cv joins ml, so shared-cq has one payer), a deleted child queue
	// (its parent becomes a leaf), a KAI quota withdrawn, a ClusterQueue
	// relabelled.
	kubectl(t, c, "patch", "resourcequota", "tight", "-n", "ml-a", "--type=merge", "-p", `{"spec":{"hard":{"requests.nvidia.com/gpu":"3"}}}`)
	kubectl(t, c, "delete", "resourcequota", "q", "-n", "scratch")
	kubectl(t, c, "label", "namespace", "cv", "team=ml", "--overwrite")
	kubectl(t, c, "delete", "queues.scheduling.volcano.sh", "vq-child")
	kubectl(t, c, "patch", "queues.scheduling.run.ai", "team-b", "--type=merge", "-p", `{"spec":{"resources":{"gpu":{"quota":-1}}}}`)
	kubectl(t, c, "label", "clusterqueues.kueue.x-k8s.io", "vision-cq", "team=infra", "--overwrite")
	kubectl(t, c, "patch", "clusterqueues.kueue.x-k8s.io", "ml-cq", "--type=json", "-p",
		`[{"op":"replace","path":"/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota","value":"16"}]`)
	waitSnapshot(t, w, []quota.Entry{
		entry("kai", "team-a", "gpu", "alpha", 2500, 0),
		entry("kueue", "ml-cq", "H100-80GB-HBM3", "ml", 16000, 20000),
		entry("kueue", "ml-cq", "gpu", "ml", 2000, 0),
		entry("kueue", "shared-cq", "gpu", "ml", 4000, 0),
		entry("kueue", "vision-cq", "mig-1g.10gb", "infra", 7000, 0),
		entry("resourcequota", "ml-a", "gpu", "ml", 3000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("volcano", "vq-dept", "gpu", "vq-dept", 10000, 0),
		entry("volcano", "vq-research", "gpu", "ml", 4000, 8000),
	})

	// Deleting a source's CRD deletes its objects; the watcher follows.
	kubectl(t, c, "delete", "crd", "queues.scheduling.run.ai", "--timeout=60s")
	kubectl(t, c, "delete", "clusterqueues.kueue.x-k8s.io", "--all")
	waitSnapshot(t, w, []quota.Entry{
		entry("resourcequota", "ml-a", "gpu", "ml", 3000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("volcano", "vq-dept", "gpu", "vq-dept", 10000, 0),
		entry("volcano", "vq-research", "gpu", "ml", 4000, 8000),
	})
	if n := logs.count("not recorded"); n != 0 {
		t.Errorf("a source was logged as not recorded:\n%s", logs)
	}
}

// Without the schedulers' CRDs only ResourceQuotas give entries, each
// absent source is logged once however often it is rechecked, and a CRD
// installed later is picked up by the recheck.
func TestWatcherWithoutCRDs(t *testing.T) {
	c := kubetest.StartT(t, kubetest.Options{})
	apply(t, c, clusterObjects)
	w, logs := startWatcher(t, c, c.Admin, MinRecheck)
	waitSnapshot(t, w, []quota.Entry{
		entry("resourcequota", "ml-a", "gpu", "ml", 6000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("resourcequota", "scratch", "gpu", "scratch", 500, 0),
	})
	// Several rechecks later, still one line per source.
	first := w.rechecks.Load()
	testenv.Eventually(t, waitLimit, func() error {
		if n := w.rechecks.Load(); n < first+5 {
			return fmt.Errorf("%d rechecks so far", n-first)
		}
		return nil
	})
	for _, s := range []string{"kueue", "volcano", "kai"} {
		line := s + " quotas not recorded: the API server does not serve"
		if n := logs.count(line); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", line, n, logs)
		}
	}
	// Not installed is observed: such a source has no quota.
	if u := w.Unobserved(); len(u) != 0 {
		t.Errorf("Unobserved() = %v with no scheduler installed, want none", u)
	}

	// Volcano installed while the watcher runs.
	installCRDs(t, c, "scheduling.volcano.sh_queues.yaml")
	apply(t, c, `
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: late, labels: {team: ml}}
spec:
  deserved: {nvidia.com/mig-3g.40gb: "2"}
  capability: {nvidia.com/mig-3g.40gb: "3"}
`)
	waitSnapshot(t, w, []quota.Entry{
		entry("resourcequota", "ml-a", "gpu", "ml", 6000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("resourcequota", "scratch", "gpu", "scratch", 500, 0),
		entry("volcano", "late", "mig-3g.40gb", "ml", 2000, 3000),
	})
	if n := logs.count("volcano quotas recorded"); n != 1 {
		t.Errorf("volcano picked up %d times, want once:\n%s", n, logs)
	}
	if n := logs.count("kueue quotas not recorded"); n != 1 {
		t.Errorf("kueue logged %d times, want once:\n%s", n, logs)
	}
}

// A ServiceAccount allowed namespaces and ResourceQuotas alone: the
// queues it may not list are logged once as forbidden, and the watcher
// records what it can read.
func TestWatcherForbiddenSources(t *testing.T) {
	sa := kubetest.ServiceAccount("gpuledger", "serve")
	c := kubetest.StartT(t, kubetest.Options{Identities: []kubetest.Identity{sa}})
	installCRDs(t, c, allCRDs...)
	apply(t, c, clusterObjects)
	apply(t, c, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: quota-core}
rules:
- apiGroups: [""]
  resources: [namespaces, resourcequotas]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: quota-core}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: quota-core}
subjects:
- {kind: User, name: "system:serviceaccount:gpuledger:serve"}
`)
	w, logs := startWatcher(t, c, sa, MinRecheck)
	waitSnapshot(t, w, []quota.Entry{
		entry("resourcequota", "ml-a", "gpu", "ml", 6000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("resourcequota", "scratch", "gpu", "scratch", 500, 0),
	})
	first := w.rechecks.Load()
	testenv.Eventually(t, waitLimit, func() error {
		if n := w.rechecks.Load(); n < first+3 {
			return fmt.Errorf("%d rechecks so far", n-first)
		}
		return nil
	})
	for _, s := range []string{"kueue", "volcano", "kai"} {
		line := s + " quotas not recorded: RBAC forbids listing"
		if n := logs.count(line); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", line, n, logs)
		}
	}
	if !w.HasSynced() {
		t.Error("HasSynced is false with every forbidden source logged")
	}
	// Forbidden is not observed: the recorder keeps what it recorded.
	if u := w.Unobserved(); !slices.Equal(u, []string{"kueue", "volcano", "kai"}) {
		t.Errorf("Unobserved() = %v, want kueue, volcano, kai", u)
	}

	// Granting the rule later needs no restart: the recheck picks it up.
	apply(t, c, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: quota-volcano}
rules:
- apiGroups: [scheduling.volcano.sh]
  resources: [queues]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: quota-volcano}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: quota-volcano}
subjects:
- {kind: User, name: "system:serviceaccount:gpuledger:serve"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: granted}
spec:
  guarantee: {resource: {nvidia.com/gpu: "1"}}
`)
	waitSnapshot(t, w, []quota.Entry{
		entry("resourcequota", "ml-a", "gpu", "ml", 6000, 0),
		entry("resourcequota", "ml-a", "mig-1g.10gb", "ml", 14000, 0),
		entry("resourcequota", "scratch", "gpu", "scratch", 500, 0),
		entry("volcano", "granted", "gpu", "granted", 1000, 0),
	})
	if u := w.Unobserved(); !slices.Equal(u, []string{"kueue", "kai"}) {
		t.Errorf("Unobserved() = %v once volcano is granted, want kueue, kai", u)
	}
}

// checkSeries gathers reg and compares every sample, as
// name{label="value",...} value, sorted, with want.
func checkSeries(t *testing.T, reg *prometheus.Registry, want []string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var l []string
			for _, lp := range m.GetLabel() {
				l = append(l, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			got = append(got, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(l, ","), m.GetGauge().GetValue()))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Kueue release that serves v1beta1 alone (the CRDs cut to that version,
// made the storage one): the watcher falls back to it.
func TestWatcherKueueV1beta1Only(t *testing.T) {
	c := kubetest.StartT(t, kubetest.Options{})
	for _, f := range allCRDs[:3] {
		u := objs(t, readFile(t, filepath.Join("testdata", "crds", f)))[0]
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		var keep []any
		for _, v := range versions {
			if m := v.(map[string]any); m["name"] == "v1beta1" {
				m["storage"] = true
				keep = append(keep, m)
			}
		}
		if len(keep) != 1 {
			t.Fatalf("%s serves no v1beta1", f)
		}
		if err := unstructured.SetNestedSlice(u.Object, keep, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		b, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		apply(t, c, string(b))
	}
	kubectl(t, c, "wait", "--for=condition=Established", "--timeout=60s", "crd/clusterqueues.kueue.x-k8s.io",
		"crd/localqueues.kueue.x-k8s.io", "crd/resourceflavors.kueue.x-k8s.io")
	apply(t, c, `
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: old-cq, labels: {team: legacy}}
spec:
  cohort: pool
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 3, borrowingLimit: 1}
`)
	w, logs := startWatcher(t, c, c.Admin, time.Minute)
	waitSnapshot(t, w, []quota.Entry{entry("kueue", "old-cq", "A100-SXM4-80GB", "legacy", 3000, 4000)})
	if n := logs.count("api=kueue.x-k8s.io/v1beta1"); n != 1 {
		t.Errorf("not read through v1beta1:\n%s", logs)
	}
	// The deprecation warning comes with every request: said once.
	if n := logs.count("the API server warns: This version is deprecated"); n != 1 {
		t.Errorf("deprecation warning logged %d times, want once:\n%s", n, logs)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
