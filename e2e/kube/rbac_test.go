package kube

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/internal/kubetest"
)

// collectorReads are the resources collector/kubemeta lists and watches
// (cluster-wide); the collector needs get, list and watch on each and
// nothing else.
var collectorReads = []string{"pods", "namespaces", "nodes", "resourceslices.resource.k8s.io"}

var readVerbs = []string{"get", "list", "watch"}

// serveAccount is the ServiceAccount of `gpuledger serve`, which watches
// the GPU quota objects (quota/kubequota): get, list and watch on these,
// cluster-wide, and nothing else.
const serveAccount = "gpuledger-serve"

var serveReads = []string{"namespaces", "resourcequotas", "nodes", "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io",
	"resourceflavors.kueue.x-k8s.io", "queues.scheduling.volcano.sh", "queues.scheduling.run.ai"}

func TestManifestsOnRealAPIServer(t *testing.T) {
	c, _, collector := cluster(t)
	applied, unserved := install(t)
	for _, o := range unserved {
		// A CRD's objects (ServiceMonitor, PrometheusRule) need the
		// operator's CRDs, which this server does not have.
		t.Logf("not applied, its API %s is not installed here: %s", o.GetAPIVersion(), o)
	}
	kinds := map[string]bool{}
	for _, o := range applied {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "NetworkPolicy", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("no %s among the applied objects", k)
		}
	}
	ctx := context.Background()

	// The API server kept what the manifests say (nothing was dropped as
	// unknown, strict field validation would have refused it anyway).
	ns, sa, _ := strings.Cut(strings.TrimPrefix(collector.User, "system:serviceaccount:"), ":")
	for _, o := range applied {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		out, err := c.Kubectl(ctx, nil, "get", "daemonset", "-n", o.GetNamespace(), o.GetName(),
			"-o", "jsonpath={.spec.template.spec.serviceAccountName} {.spec.template.spec.hostPID}")
		if err != nil {
			t.Fatal(err)
		}
		if want := sa + " true"; out != want {
			t.Errorf("DaemonSet %s on the server: serviceAccountName and hostPID = %q, want %q", o, out, want)
		}
	}

	t.Run("can read what it watches", func(t *testing.T) {
		for _, r := range collectorReads {
			for _, v := range readVerbs {
				// Cluster-wide, and in a namespace it does not live in.
				if !canI(ctx, t, c, collector, v, r, "-A") {
					t.Errorf("%s cannot %s %s cluster-wide", collector.User, v, r)
				}
				if !canI(ctx, t, c, collector, v, r, "-n", "default") {
					t.Errorf("%s cannot %s %s in namespace default", collector.User, v, r)
				}
			}
		}
	})

	t.Run("cannot do anything else", func(t *testing.T) {
		// resource, or resource/subresource (asked with --subresource:
		// kubectl reads TYPE/NAME as an object's name).
		type check struct{ verb, resource string }
		var denied []check
		for _, v := range []string{"get", "list", "watch"} {
			for _, r := range []string{"secrets", "configmaps", "serviceaccounts", "pods/log",
				"nodes/proxy", "nodes/stats", "nodes/metrics", "daemonsets.apps", "resourceclaims.resource.k8s.io",
				"clusterroles.rbac.authorization.k8s.io", "events"} {
				denied = append(denied, check{v, r})
			}
		}
		writes := []string{"create", "update", "patch", "delete", "deletecollection"}
		for _, v := range writes {
			for _, r := range append(slices.Clone(collectorReads), "pods/status", "nodes/status",
				"resourceslices.resource.k8s.io", "events", "configmaps", "secrets", "daemonsets.apps",
				"clusterrolebindings.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io") {
				denied = append(denied, check{v, r})
			}
		}
		denied = append(denied,
			check{"create", "pods/exec"}, check{"create", "pods/eviction"}, check{"create", "pods/portforward"},
			check{"create", "serviceaccounts/token"},
			check{"impersonate", "users"}, check{"impersonate", "groups"}, check{"impersonate", "serviceaccounts"},
			check{"escalate", "clusterroles.rbac.authorization.k8s.io"}, check{"bind", "clusterroles.rbac.authorization.k8s.io"},
			check{"*", "*"},
		)
		for _, d := range denied {
			for _, where := range [][]string{{"-A"}, {"-n", ns}} {
				args := where
				res, sub, ok := strings.Cut(d.resource, "/")
				if ok {
					args = append([]string{"--subresource", sub}, where...)
				}
				if canI(ctx, t, c, collector, d.verb, res, args...) {
					t.Errorf("%s CAN %s %s %v", collector.User, d.verb, d.resource, where)
				}
			}
		}
	})

	// What `auth can-i --list` shows to the ServiceAccount itself,
	// authenticated by its own token rather than impersonated.
	t.Run("can-i --list shows only the intended rules", func(t *testing.T) {
		intended := map[string][]string{}
		for _, r := range collectorReads {
			intended[r] = readVerbs
		}
		checkList(ctx, t, c, collector, []string{ns, "default", "kube-system"}, intended)
	})

	// Other ServiceAccounts of the manifests (jobs) read nothing from the
	// API. The bundled ClickHouse's secret Job may create Secrets in its
	// own namespace, and nothing else anywhere.
	servesOwn := false
	for _, o := range applied {
		if o.GetKind() != "ServiceAccount" || "system:serviceaccount:"+o.GetNamespace()+":"+o.GetName() == collector.User {
			continue
		}
		servesOwn = servesOwn || o.GetName() == serveAccount
		id := kubetest.ServiceAccount(o.GetNamespace(), o.GetName())
		if o.GetName() == serveAccount {
			t.Run("serve reads the quota objects only", func(t *testing.T) {
				checkServeAccount(ctx, t, c, id)
			})
			continue
		}
		t.Run("can-i --list for "+id.User, func(t *testing.T) {
			var own map[string][]string
			if o.GetName() == secretJobAccount {
				own = map[string][]string{"secrets": {"create"}}
				waitCanI(ctx, c, id, "create", "secrets", o.GetNamespace())
			}
			checkList(ctx, t, c, id, []string{o.GetNamespace()}, own)
			checkList(ctx, t, c, id, []string{"default"}, nil)
		})
	}
	if !servesOwn {
		t.Errorf("no ServiceAccount %s among the applied objects: serve cannot read the quota objects", serveAccount)
	}
}

// checkServeAccount: serve's account may get, list and watch the quota
// objects and nodes everywhere, may not write them (no patch of a node),
// and reads nothing else (no secrets, no pods, no node subresources).
func checkServeAccount(ctx context.Context, t *testing.T, c *kubetest.Cluster, id kubetest.Identity) {
	t.Helper()
	waitCanI(ctx, c, id, "list", "clusterqueues.kueue.x-k8s.io", "default")
	ns := strings.Split(id.User, ":")[2]
	for _, r := range serveReads {
		for _, v := range readVerbs {
			if !canI(ctx, t, c, id, v, r, "-A") {
				t.Errorf("%s cannot %s %s cluster-wide", id.User, v, r)
			}
		}
		for _, v := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			for _, where := range [][]string{{"-A"}, {"-n", ns}} {
				if canI(ctx, t, c, id, v, r, where...) {
					t.Errorf("%s CAN %s %s %v", id.User, v, r, where)
				}
			}
		}
	}
	for _, r := range []string{"secrets", "configmaps", "pods", "nodes/proxy", "nodes/status", "serviceaccounts", "limitranges",
		"events", "clusterroles.rbac.authorization.k8s.io"} {
		for _, where := range [][]string{{"-A"}, {"-n", ns}} {
			res, args := r, where
			if base, sub, ok := strings.Cut(r, "/"); ok {
				res, args = base, append([]string{"--subresource", sub}, where...)
			}
			if canI(ctx, t, c, id, "get", res, args...) || canI(ctx, t, c, id, "list", res, args...) {
				t.Errorf("%s can read %s %v", id.User, r, where)
			}
		}
	}
	intended := map[string][]string{}
	for _, r := range serveReads {
		intended[r] = readVerbs
	}
	checkList(ctx, t, c, id, []string{ns, "default"}, intended)
}

// canI asks the server, as the admin impersonating id (`--as`), whether id
// may do verb on resource.
func canI(ctx context.Context, t *testing.T, c *kubetest.Cluster, id kubetest.Identity, verb, resource string, where ...string) bool {
	t.Helper()
	args := append([]string{"auth", "can-i", verb, resource, "--as", id.User}, where...)
	out, err := c.Kubectl(ctx, nil, args...)
	switch ans := strings.TrimSpace(out); {
	case err == nil && ans == "yes":
		return true
	case ans == "no" && strings.Contains(err.Error(), "resource type"):
		// "Warning: the server doesn't have a resource type": a typo here
		// would make the check vacuous.
		t.Fatalf("kubectl auth can-i %s %s: %v", verb, resource, err)
		return false
	case ans == "no": // kubectl exits 1 on "no"
		return false
	default:
		t.Fatalf("kubectl auth can-i: %q, %v", out, err)
		return false
	}
}

// listRules runs `kubectl auth can-i --list -n ns` with id's own token.
func listRules(ctx context.Context, t *testing.T, c *kubetest.Cluster, id kubetest.Identity, ns string) (string, []canIRow) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, id); err != nil {
		t.Fatal(err)
	}
	out, err := c.KubectlAs(ctx, kubeconfig, nil, "auth", "can-i", "--list", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseCanIList(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, rows
}

// checkList runs `kubectl auth can-i --list` with id's own token in each
// namespace and fails t for any rule beyond intended (resource -> verbs)
// and what a ServiceAccount nothing is bound to may do (the API server's
// default bindings: self-reviews, discovery, cluster trust bundles), and
// for any intended verb missing.
func checkList(ctx context.Context, t *testing.T, c *kubetest.Cluster, id kubetest.Identity, namespaces []string, intended map[string][]string) {
	t.Helper()
	for _, ns := range namespaces {
		_, base := listRules(ctx, t, c, baseline, ns)
		everyoneMay := map[string][]string{}
		for _, r := range base {
			if r.resource != "" {
				everyoneMay[r.resource] = append(everyoneMay[r.resource], r.verbs...)
			}
		}
		for res := range intended {
			if len(everyoneMay[res]) > 0 {
				t.Fatalf("a ServiceAccount with no bindings may %v %s: the check would prove nothing", everyoneMay[res], res)
			}
		}
		out, rows := listRules(ctx, t, c, id, ns)
		seen := map[string][]string{}
		for _, r := range rows {
			if r.resource == "" {
				// Non-resource URLs (/healthz, /version, /api): read-only.
				if !slices.Equal(r.verbs, []string{"get"}) {
					t.Errorf("%s in %s: %v on %s, want only get", id.User, ns, r.verbs, r.urls)
				}
				continue
			}
			allowed, ok := intended[r.resource]
			if !ok {
				allowed, ok = everyoneMay[r.resource]
			}
			if !ok {
				t.Errorf("%s in %s may %v %s: not intended", id.User, ns, r.verbs, r.resource)
				continue
			}
			for _, v := range r.verbs {
				if !slices.Contains(allowed, v) {
					t.Errorf("%s in %s may %s %s: not intended", id.User, ns, v, r.resource)
				}
			}
			if r.names != "[]" {
				t.Errorf("%s in %s: rule on %s is limited to names %s", id.User, ns, r.resource, r.names)
			}
			seen[r.resource] = append(seen[r.resource], r.verbs...)
		}
		for res, verbs := range intended {
			for _, v := range verbs {
				if !slices.Contains(seen[res], v) {
					t.Errorf("%s in %s: can-i --list has no %s on %s", id.User, ns, v, res)
				}
			}
		}
		if t.Failed() {
			t.Logf("kubectl auth can-i --list -n %s as %s:\n%s", ns, id.User, out)
		}
	}
}

// canIRow is one line of `kubectl auth can-i --list`.
type canIRow struct {
	resource, urls, names string
	verbs                 []string
}

// parseCanIList reads kubectl's table, one rule a line: a resource (absent
// for non-resource URLs), then three bracketed lists.
//
//	Resources   Non-Resource URLs   Resource Names   Verbs
//	pods        []                  []               [get list watch]
//	            [/healthz]          []               [get]
func parseCanIList(out string) ([]canIRow, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "Resources") || !strings.Contains(lines[0], "Verbs") {
		return nil, fmt.Errorf("unexpected can-i --list header %q", lines[0])
	}
	var rows []canIRow
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := bracketFields(l)
		if len(f) == 3 {
			f = append([]string{""}, f...)
		}
		if len(f) != 4 || !strings.HasPrefix(f[1], "[") || !strings.HasPrefix(f[2], "[") || !strings.HasPrefix(f[3], "[") {
			return nil, fmt.Errorf("cannot parse can-i --list line %q", l)
		}
		rows = append(rows, canIRow{resource: f[0], urls: f[1], names: f[2], verbs: strings.Fields(strings.Trim(f[3], "[]"))})
	}
	return rows, nil
}

// bracketFields splits l at spaces outside brackets.
func bracketFields(l string) []string {
	var f []string
	depth, start := 0, -1
	for i, r := range l {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		}
		if r == ' ' && depth == 0 {
			if start >= 0 {
				f = append(f, l[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		f = append(f, l[start:])
	}
	return f
}

func TestParseCanIList(t *testing.T) {
	out := `Resources                                       Non-Resource URLs   Resource Names   Verbs
selfsubjectreviews.authentication.k8s.io        []                  []               [create]
pods                                            []                  []               [get list watch]
configmaps                                      []                  [prices a]       [get]
                                                [/api/*]            []               [get]
`
	rows, err := parseCanIList(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []canIRow{
		{"selfsubjectreviews.authentication.k8s.io", "[]", "[]", []string{"create"}},
		{"pods", "[]", "[]", []string{"get", "list", "watch"}},
		{"configmaps", "[]", "[prices a]", []string{"get"}},
		{"", "[/api/*]", "[]", []string{"get"}},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("parseCanIList:\n%v\nwant\n%v", rows, want)
	}
	if _, err := parseCanIList("Resources Verbs\npods [get]\n"); err == nil {
		t.Error("a line with two fields parsed")
	}
}
