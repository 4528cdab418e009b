package kubequota

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuledger/gpuledger/quota"
)

// objs parses YAML documents (separated by ---) into unstructured objects,
// as the dynamic client decodes JSON: integers int64, numbers float64.
func objs(t testing.TB, docs string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatalf("test YAML: %v\n%s", err, d)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("test YAML: %v\n%s", err, d)
		}
		out = append(out, u)
	}
	return out
}

func rq(ns, name string, hard map[string]string) *corev1.ResourceQuota {
	r := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for k, v := range hard {
		r.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return r
}

func entry(source, object, res, team string, m, limit int64) quota.Entry {
	return quota.Entry{Key: quota.Key{Source: source, Object: object, Resource: res}, Team: team, Milli: m, LimitMilli: limit}
}

func checkEntries(t *testing.T, what string, got, want []quota.Entry) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, fmtEntries(got), fmtEntries(want))
	}
}

func fmtEntries(es []quota.Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %s %s %s team=%s milli=%d limit=%d", e.Source, e.Object, e.Resource, e.Team, e.Milli, e.LimitMilli)
	}
	return b.String()
}

func checkErrs(t *testing.T, errs []error, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d naming %q", errs, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %q does not name %q", errs[i], w)
		}
	}
}

func TestResourceQuotaEntries(t *testing.T) {
	ns := map[string]map[string]string{
		"ml":      {"team": "research"},
		"infer":   {"owner": "serving", "team": " "},
		"batch":   {},
		"blank":   {"team": ""},
		"scoped":  {"team": "x"},
		"otherkn": {"owner": "platform"},
	}
	scoped := rq("scoped", "high", map[string]string{"requests.nvidia.com/gpu": "1"})
	scoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	selected := rq("scoped", "prio", map[string]string{"requests.nvidia.com/gpu": "1"})
	selected.Spec.ScopeSelector = &corev1.ScopeSelector{}
	quotas := []*corev1.ResourceQuota{
		// Two quotas bind in ml: the smaller per resource wins, each
		// resource on its own.
		rq("ml", "a", map[string]string{"requests.nvidia.com/gpu": "8", "requests.nvidia.com/mig-1g.10gb": "14", "requests.cpu": "100"}),
		rq("ml", "b", map[string]string{"requests.nvidia.com/gpu": "4", "pods": "10"}),
		rq("infer", "q", map[string]string{"requests.nvidia.com/gpu": "500m"}),
		// Not GPU quotas: no entry.
		rq("batch", "cpu", map[string]string{"requests.cpu": "4", "requests.amd.com/gpu": "2"}),
		rq("blank", "zero", map[string]string{"requests.nvidia.com/gpu": "0"}),
		// A quota's hard limit without the requests. prefix is refused by
		// the API server for extended resources; not read.
		rq("batch", "bare", map[string]string{"nvidia.com/gpu": "3"}),
		scoped, selected,
		// A MIG profile that does not parse is not a GPU resource.
		rq("batch", "badmig", map[string]string{"requests.nvidia.com/mig-xyz": "3"}),
		nil,
	}
	got, errs := ResourceQuotaEntries(quotas, ns, "")
	checkErrs(t, errs)
	checkEntries(t, "default key", got, []quota.Entry{
		entry("resourcequota", "blank", "gpu", "blank", 0, 0),
		entry("resourcequota", "infer", "gpu", "infer", 500, 0), // a blank label is no team
		entry("resourcequota", "ml", "gpu", "research", 4000, 0),
		entry("resourcequota", "ml", "mig-1g.10gb", "research", 14000, 0),
	})

	got, _ = ResourceQuotaEntries(quotas[:3], ns, "owner")
	checkEntries(t, "key owner", got, []quota.Entry{
		entry("resourcequota", "infer", "gpu", "serving", 500, 0),
		entry("resourcequota", "ml", "gpu", "ml", 4000, 0),
		entry("resourcequota", "ml", "mig-1g.10gb", "ml", 14000, 0),
	})

	// A quota whose namespace is unknown (not yet in the cache) pays
	// under the namespace's name.
	got, _ = ResourceQuotaEntries([]*corev1.ResourceQuota{rq("new", "q", map[string]string{"requests.nvidia.com/gpu": "2"})}, nil, "")
	checkEntries(t, "unknown namespace", got, []quota.Entry{entry("resourcequota", "new", "gpu", "new", 2000, 0)})
}

func TestResourceQuotaEntriesInvalid(t *testing.T) {
	huge := rq("big", "q", map[string]string{"requests.nvidia.com/gpu": "2000001"})
	neg := rq("neg", "q", map[string]string{"requests.nvidia.com/gpu": "-1"})
	ok := rq("fine", "q", map[string]string{"requests.nvidia.com/gpu": "1"})
	ok2 := rq("big", "other", map[string]string{"requests.nvidia.com/mig-2g.20gb": "1"})
	got, errs := ResourceQuotaEntries([]*corev1.ResourceQuota{huge, neg, ok, ok2}, nil, "")
	checkErrs(t, errs, "ResourceQuota big/q: spec.hard[requests.nvidia.com/gpu]: 2000001 is more than", "ResourceQuota neg/q: spec.hard[requests.nvidia.com/gpu]: -1 is negative")
	// The bad quota is skipped; its namespace's other quota still counts.
	checkEntries(t, "valid ones", got, []quota.Entry{
		entry("resourcequota", "big", "mig-2g.20gb", "big", 1000, 0),
		entry("resourcequota", "fine", "gpu", "fine", 1000, 0),
	})
	// At the bound: a million GPUs is allowed.
	got, errs = ResourceQuotaEntries([]*corev1.ResourceQuota{rq("max", "q", map[string]string{"requests.nvidia.com/gpu": "1M"})}, nil, "")
	checkErrs(t, errs)
	checkEntries(t, "bound", got, []quota.Entry{entry("resourcequota", "max", "gpu", "max", quota.MaxMilli, 0)})
	// A team label past the name bound makes the namespace invalid.
	long := strings.Repeat("t", quota.MaxNameLen+1)
	got, errs = ResourceQuotaEntries([]*corev1.ResourceQuota{ok}, map[string]map[string]string{"fine": {"team": long}}, "")
	checkErrs(t, errs, `ResourceQuotas of namespace "fine"`)
	checkEntries(t, "long team", got, nil)
}

const flavorsYAML = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100-spot}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA H100 80GB HBM3, cloud.example.com/spot: "true"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec: {}
`

func TestKueueEntries(t *testing.T) {
	cqs := objs(t, `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research-cq, labels: {team: research}}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}
    - name: h100-spot
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: nvidia.com/gpu, nominalQuota: "2", borrowingLimit: "0"}
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: nvidia.com/gpu, nominalQuota: 1500m}
    - name: no-such-flavor
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: nvidia.com/gpu, nominalQuota: 1, borrowingLimit: 2}
  - coveredResources: [nvidia.com/mig-1g.10gb]
    flavors:
    - name: unknown-flavor
      resources:
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: 7, borrowingLimit: 7}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: shared-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: vision-cq}
spec:
  namespaceSelector: {matchLabels: {kueue: enabled}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: lonely-cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cpu-only}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 100}
`)
	lqs := objs(t, `
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ml-a}
spec: {clusterQueue: shared-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ml-b}
spec: {clusterQueue: shared-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: vision}
spec: {clusterQueue: vision-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: sneaky, namespace: tenant}
spec: {clusterQueue: vision-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: other}
spec: {clusterQueue: lonely-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: other}
spec: {clusterQueue: research-cq}
`)
	ns := map[string]map[string]string{
		"ml-a":   {"team": "ml"},
		"ml-b":   {"team": "ml"},
		"vision": {"team": "cv", "kueue": "enabled"},
		"tenant": {"team": "tenant"}, // not admitted by vision-cq's selector
		"other":  {"team": "other"},
	}
	got, errs := KueueEntries(cqs, lqs, objs(t, flavorsYAML), ns, "")
	checkErrs(t, errs)
	want := []quota.Entry{
		// No namespaceSelector admits nothing: no team from LocalQueues.
		entry("kueue", "lonely-cq", "gpu", "lonely-cq", 1000, 0),
		// h100 and h100-spot both name the H100-80GB-HBM3 and sum: 8+2
		// nominal, (8+4)+(2+0) limit. The MIG flavor has no
		// ResourceFlavor yet.
		entry("kueue", "research-cq", "H100-80GB-HBM3", "research", 10000, 14000),
		// default-flavor and a flavor with no ResourceFlavor object both
		// give any GPU: 1.5+1 nominal; default-flavor states no borrowing
		// limit, so the sum has no ceiling (0), not 1+2.
		entry("kueue", "research-cq", "gpu", "research", 2500, 0),
		entry("kueue", "research-cq", "mig-1g.10gb", "research", 7000, 14000),
		// Two LocalQueues, both in team ml's namespaces.
		entry("kueue", "shared-cq", "gpu", "ml", 4000, 0),
		// The tenant's LocalQueue is in a namespace the queue does not
		// admit: not counted, so cv still pays.
		entry("kueue", "vision-cq", "gpu", "cv", 2000, 0),
	}
	checkEntries(t, "kueue", got, want)

	// Two teams' LocalQueues: the queue has no single payer.
	ns["ml-b"] = map[string]string{"team": "infra"}
	got, _ = KueueEntries(cqs, lqs, objs(t, flavorsYAML), ns, "")
	if i := slices.IndexFunc(got, func(e quota.Entry) bool { return e.Object == "shared-cq" }); i < 0 || got[i].Team != "shared-cq" {
		t.Errorf("shared by two teams: %v, want team shared-cq", fmtEntries(got))
	}
	// An unlabelled namespace's team is its name.
	delete(ns, "vision")
	got, _ = KueueEntries(cqs, lqs, objs(t, flavorsYAML), ns, "")
	if i := slices.IndexFunc(got, func(e quota.Entry) bool { return e.Object == "vision-cq" }); i < 0 || got[i].Team != "vision-cq" {
		// The unlabelled namespace no longer matches the selector either.
		t.Errorf("vision unlabelled: %v, want team vision-cq", fmtEntries(got))
	}
}

func TestKueueEntriesInvalid(t *testing.T) {
	cqs := objs(t, `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bad-nominal}
spec:
  resourceGroups:
  - flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: "lots"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bad-borrow}
spec:
  resourceGroups:
  - flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1, borrowingLimit: -2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: overflow}
spec:
  resourceGroups:
  - flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1M}
    - name: g
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1M}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: groups-not-a-list}
spec:
  resourceGroups: {a: b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: good}
spec:
  resourceGroups:
  - flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 3, borrowingLimit: 1}
      - {name: cpu, nominalQuota: "not even read"}
`)
	got, errs := KueueEntries(cqs, nil, nil, nil, "")
	checkErrs(t, errs,
		`kueue ClusterQueue "bad-borrow": spec.resourceGroups[0].flavors[0] (f).resources[0] (nvidia.com/gpu).borrowingLimit: -2 is negative`,
		`kueue ClusterQueue "bad-nominal": spec.resourceGroups[0].flavors[0] (f).resources[0] (nvidia.com/gpu).nominalQuota: quantities must match`,
		`kueue ClusterQueue "groups-not-a-list": spec.resourceGroups`,
		`kueue ClusterQueue "overflow": quota kueue overflow gpu: 1000000001 thousandths is outside`,
	)
	checkEntries(t, "valid", got, []quota.Entry{entry("kueue", "good", "gpu", "good", 3000, 4000)})
}

func TestVolcanoEntries(t *testing.T) {
	qs := objs(t, `
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research, labels: {team: ml}}
spec:
  guarantee: {resource: {nvidia.com/gpu: 4, cpu: 10}}
  deserved: {nvidia.com/gpu: 6, nvidia.com/mig-3g.40gb: "2"}
  capability: {nvidia.com/gpu: "8", nvidia.com/mig-3g.40gb: 4}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: capped}
spec:
  capability: {nvidia.com/gpu: 2}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: cpu}
spec:
  deserved: {cpu: 10}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: dept}
spec:
  deserved: {nvidia.com/gpu: 10}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: child, labels: {team: vision}}
spec:
  parent: dept
  deserved: {nvidia.com/gpu: 2500m}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: broken}
spec:
  guarantee: {resource: {nvidia.com/gpu: "-1"}}
`)
	got, errs := VolcanoEntries(qs, "")
	checkErrs(t, errs, `volcano Queue "broken": spec.guarantee.resource[nvidia.com/gpu]: -1 is negative`)
	checkEntries(t, "volcano", got, []quota.Entry{
		entry("volcano", "capped", "gpu", "capped", 0, 2000),
		entry("volcano", "child", "gpu", "vision", 2500, 0),
		// guarantee wins over deserved; deserved where no guarantee.
		entry("volcano", "research", "gpu", "ml", 4000, 8000),
		entry("volcano", "research", "mig-3g.40gb", "ml", 2000, 4000),
	})
}

func TestKAIEntries(t *testing.T) {
	qs := objs(t, `
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: dept-ai}
spec:
  resources:
    gpu: {quota: 16, limit: 24, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a, labels: {team: alpha}}
spec:
  parentQueue: dept-ai
  resources:
    gpu: {quota: 2.5, limit: -1}
    cpu: {quota: 100}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-b}
spec:
  parentQueue: dept-ai
  resources:
    gpu: {quota: 0.7, limit: 4}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: no-quota}
spec:
  resources:
    gpu: {quota: -1, limit: 8}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: no-gpu}
spec:
  resources:
    cpu: {quota: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: zero}
spec:
  resources:
    gpu: {quota: 0}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: negative}
spec:
  resources:
    gpu: {quota: -3}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: enormous}
spec:
  resources:
    gpu: {quota: 1e300}
`)
	got, errs := KAIEntries(qs, "")
	checkErrs(t, errs,
		`kai Queue "enormous": spec.resources.gpu.quota: 1e+300 is more than`,
		`kai Queue "negative": spec.resources.gpu.quota: -3 is negative`,
	)
	checkEntries(t, "kai", got, []quota.Entry{
		entry("kai", "team-a", "gpu", "alpha", 2500, 0),
		entry("kai", "team-b", "gpu", "team-b", 700, 4000),
		entry("kai", "zero", "gpu", "zero", 0, 0),
	})
}

// The metrics' sums: GPUs weighted by MIG slices, limits only where stated.
func TestSums(t *testing.T) {
	q, l := sums([]quota.Entry{
		entry("kueue", "a", "gpu", "ml", 1500, 0),
		entry("kueue", "b", "gpu", "ml", 500, 3000),
		entry("kueue", "c", "mig-1g.10gb", "ml", 7000, 14000),
		entry("resourcequota", "ns", "gpu", "ml", 2000, 0),
	})
	if got := q[series{"ml", "gpu", "kueue"}].RatString(); got != "2" {
		t.Errorf("ml gpu kueue = %s, want 2", got)
	}
	if got := q[series{"ml", "mig-1g.10gb", "kueue"}].RatString(); got != "1" { // 7 x 1/7
		t.Errorf("ml mig kueue = %s, want 1", got)
	}
	if got := l[series{"ml", "gpu", "kueue"}].RatString(); got != "3" {
		t.Errorf("ml gpu kueue limit = %s, want 3", got)
	}
	if got := l[series{"ml", "mig-1g.10gb", "kueue"}].RatString(); got != "2" {
		t.Errorf("ml mig limit = %s, want 2", got)
	}
	if _, ok := l[series{"ml", "gpu", "resourcequota"}]; ok || len(l) != 2 || len(q) != 3 {
		t.Errorf("sums: quotas %v limits %v", q, l)
	}
}
