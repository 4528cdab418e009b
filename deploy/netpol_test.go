package deploy

import (
	"net/netip"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// No network plugin runs in these tests, so nothing enforces the rendered
// NetworkPolicies. allowed evaluates them as an implementation does
// (Kubernetes' NetworkPolicy semantics, ingress only): a pod that no
// ingress policy of its namespace selects takes any connection; a pod that
// one selects takes a connection only if some rule of a selecting policy
// matches both the source (any of its peers) and the port (any of its
// ports). A peer with only a podSelector means pods of the policy's own
// namespace; with only a namespaceSelector, every pod of the matching
// namespaces; with both, the pods matching both; an ipBlock, the source's
// IP inside the CIDR and outside every except. Empty from or ports lists
// match everything. What it leaves out: egress, node and host-network
// traffic (kubelet probes, port-forward), SCTP and endPort ranges.

// peerPod is one end of a connection.
type peerPod struct {
	ns       string
	nsLabels map[string]string // besides kubernetes.io/metadata.name, which every namespace has
	labels   map[string]string
	ip       string
	ports    []corev1.ContainerPort // the destination's, for named ports
}

func (p peerPod) namespaceLabels() labels.Set {
	l := labels.Set{"kubernetes.io/metadata.name": p.ns}
	for k, v := range p.nsLabels {
		l[k] = v
	}
	return l
}

func selects(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %+v: %v", sel, err)
	}
	return s.Matches(labels.Set(l))
}

func allowed(t *testing.T, pols []*networkingv1.NetworkPolicy, src, dst peerPod, port int32) bool {
	t.Helper()
	isolated := false
	for _, p := range pols {
		if p.Namespace != dst.ns || !selects(t, &p.Spec.PodSelector, dst.labels) || !hasIngress(p) {
			continue
		}
		isolated = true
		for _, r := range p.Spec.Ingress {
			if fromMatches(t, p.Namespace, r.From, src) && portMatches(r.Ports, dst, port) {
				return true
			}
		}
	}
	return !isolated
}

func hasIngress(p *networkingv1.NetworkPolicy) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return true // the API server's default when no egress rule is given
	}
	for _, pt := range p.Spec.PolicyTypes {
		if pt == networkingv1.PolicyTypeIngress {
			return true
		}
	}
	return false
}

func fromMatches(t *testing.T, policyNS string, from []networkingv1.NetworkPolicyPeer, src peerPod) bool {
	t.Helper()
	if len(from) == 0 {
		return true
	}
	for _, peer := range from {
		switch {
		case peer.IPBlock != nil:
			if ipIn(t, *peer.IPBlock, src.ip) {
				return true
			}
		case peer.NamespaceSelector != nil:
			if selects(t, peer.NamespaceSelector, src.namespaceLabels()) &&
				(peer.PodSelector == nil || selects(t, peer.PodSelector, src.labels)) {
				return true
			}
		case peer.PodSelector != nil:
			if src.ns == policyNS && selects(t, peer.PodSelector, src.labels) {
				return true
			}
		}
	}
	return false
}

func ipIn(t *testing.T, b networkingv1.IPBlock, ip string) bool {
	t.Helper()
	if ip == "" {
		return false
	}
	a := netip.MustParseAddr(ip)
	if !netip.MustParsePrefix(b.CIDR).Contains(a) {
		return false
	}
	for _, e := range b.Except {
		if netip.MustParsePrefix(e).Contains(a) {
			return false
		}
	}
	return true
}

func portMatches(ports []networkingv1.NetworkPolicyPort, dst peerPod, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue // every connection here is TCP
		}
		if p.Port == nil {
			return true
		}
		if p.Port.IntVal == port && p.Port.StrVal == "" {
			return true
		}
		for _, cp := range dst.ports {
			if p.Port.StrVal != "" && cp.Name == p.Port.StrVal && cp.ContainerPort == port {
				return true
			}
		}
	}
	return false
}

// renderedPods are the pod templates of the rendering, by workload name,
// as pods of namespace ns.
func renderedPods(objs []object, ns string) map[string]peerPod {
	out := map[string]peerPod{}
	add := func(name string, tpl corev1.PodTemplateSpec) {
		var ports []corev1.ContainerPort
		for _, c := range tpl.Spec.Containers {
			ports = append(ports, c.Ports...)
		}
		out[name] = peerPod{ns: ns, labels: tpl.Labels, ports: ports, ip: "10.1.0.10"}
	}
	for _, o := range objs {
		switch x := o.Obj.(type) {
		case *appsv1.DaemonSet:
			add(x.Name, x.Spec.Template)
		case *appsv1.Deployment:
			add(x.Name, x.Spec.Template)
		case *appsv1.StatefulSet:
			add(x.Name, x.Spec.Template)
		case *batchv1.Job:
			add(x.Name, x.Spec.Template)
		case *batchv1.CronJob:
			add(x.Name, x.Spec.JobTemplate.Spec.Template)
		}
	}
	return out
}

func policies(objs []object) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for _, o := range objs {
		if p, ok := o.Obj.(*networkingv1.NetworkPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

type connCase struct {
	name     string
	src, dst peerPod
	port     int32
	want     bool
}

func checkConns(t *testing.T, pols []*networkingv1.NetworkPolicy, cases []connCase) {
	t.Helper()
	for _, c := range cases {
		if got := allowed(t, pols, c.src, c.dst, c.port); got != c.want {
			verdict := map[bool]string{true: "allowed", false: "denied"}
			t.Errorf("%s: %s, want %s", c.name, verdict[got], verdict[c.want])
		}
	}
}

// other is a pod of namespace ns with the given labels.
func other(ns string, l map[string]string) peerPod {
	return peerPod{ns: ns, labels: l, ip: "10.1.7.7"}
}

// TestNetworkPoliciesDefault evaluates the default rendering (plus the
// optional ClickHouse clients and one listed namespace on each side): the
// bundled ClickHouse takes its 2 ports from the release's ledger pods and
// the listed namespace only, serve its port from the release namespace and
// the listed one only. The expectations come from the brief: who must
// reach what, and that nobody else, forged labels included, does.
func TestNetworkPoliciesDefault(t *testing.T) {
	objs := render(t, "--set", "advisor.enabled=true,report.enabled=true,backup.enabled=true",
		"--set", "networkPolicy.clickhouse.allowNamespaces={grafana}",
		"--set", "networkPolicy.serve.allowNamespaces={ingress-nginx}")
	pols := policies(objs)
	if len(pols) != 2 {
		t.Fatalf("%d NetworkPolicies, want 2 (ClickHouse, serve)", len(pols))
	}
	pods := renderedPods(objs, "gpuledger")
	pod := func(name string) peerPod {
		p, ok := pods[name]
		if !ok {
			t.Fatalf("no pod template %s in the rendering", name)
		}
		return p
	}
	ch, serve, collector := pod("gpuledger-clickhouse"), pod("gpuledger-serve"), pod("gpuledger")
	// A tenant controls its pods' labels: copying the collector's does not
	// help from its own namespace, nor from another release's.
	forged := other("team-a", collector.labels)
	otherRelease := other("gpuledger", map[string]string{
		"app.kubernetes.io/name": "gpuledger", "app.kubernetes.io/instance": "other", "app.kubernetes.io/component": "collector"})

	cases := []connCase{
		{"collector -> ClickHouse 9000", collector, ch, 9000, true},
		{"collector -> ClickHouse 8123", collector, ch, 8123, true},
		{"serve -> ClickHouse 9000", serve, ch, 9000, true},
		{"advisor -> ClickHouse 9000", pod("gpuledger-advisor"), ch, 9000, true},
		{"migrate Job -> ClickHouse 9000", pod("gpuledger-migrate"), ch, 9000, true},
		{"migrate Job's wait -> ClickHouse 8123 /ping", pod("gpuledger-migrate"), ch, 8123, true},
		{"prices Job -> ClickHouse 9000", pod("gpuledger-prices"), ch, 9000, true},
		{"report CronJob -> ClickHouse 9000", pod("gpuledger-report"), ch, 9000, true},
		{"backup CronJob -> ClickHouse 9000", pod("gpuledger-backup"), ch, 9000, true},
		{"listed grafana namespace -> ClickHouse 8123", other("grafana", map[string]string{"app": "grafana"}), ch, 8123, true},
		{"listed grafana namespace -> ClickHouse 9000", other("grafana", map[string]string{"app": "grafana"}), ch, 9000, true},
		{"collector -> ClickHouse 9004 (not a port it serves to us)", collector, ch, 9004, false},
		{"password Job (talks to the API server only) -> ClickHouse 9000", pod("gpuledger-clickhouse-secret"), ch, 9000, false},
		{"unlabelled pod of the release namespace -> ClickHouse 9000", other("gpuledger", map[string]string{"app": "debug"}), ch, 9000, false},
		{"random pod in another namespace -> ClickHouse 9000", other("team-a", map[string]string{"app": "train"}), ch, 9000, false},
		{"random pod in another namespace -> ClickHouse 8123", other("team-a", nil), ch, 8123, false},
		{"pod forging the collector's labels in team-a -> ClickHouse 9000", forged, ch, 9000, false},
		{"another release's collector -> ClickHouse 9000", otherRelease, ch, 9000, false},
		{"unlisted monitoring namespace -> ClickHouse 8123", other("monitoring", nil), ch, 8123, false},

		{"pod of the release namespace -> serve 8080", other("gpuledger", map[string]string{"app": "oauth2-proxy"}), serve, 8080, true},
		{"listed ingress-nginx -> serve 8080", other("ingress-nginx", map[string]string{"app": "controller"}), serve, 8080, true},
		{"pod of the release namespace -> serve 8081", other("gpuledger", nil), serve, 8081, false},
		{"random pod in another namespace -> serve 8080", other("team-a", nil), serve, 8080, false},
		{"grafana (listed for ClickHouse only) -> serve 8080", other("grafana", nil), serve, 8080, false},
		{"pod forging serve's labels in team-a -> serve 8080", other("team-a", serve.labels), serve, 8080, false},

		// No policy selects the collectors: their metrics port stays open.
		{"any pod -> collector 9753", other("monitoring", nil), collector, 9753, true},
	}
	checkConns(t, pols, cases)
	// A host-network pod connects from its node's address, which no
	// podSelector matches: every client must keep its own pod IP.
	for name, spec := range podSpecs(objs) {
		if spec.HostNetwork {
			t.Errorf("%s uses the host network: the policies' pod selectors would not match its connections", name)
		}
	}

	// Off: nothing renders and everything is allowed again.
	if n := len(policies(render(t, "--set", "networkPolicy.enabled=false"))); n != 0 {
		t.Errorf("%d NetworkPolicies with networkPolicy.enabled=false", n)
	}
}

// TestNetworkPoliciesAllFeatures: with the user's own ClickHouse the chart
// renders no ClickHouse policy (it does not own that server); serve's
// takes the listed namespaces and the extraFrom peers exactly as written
// (a combined namespace and pod selector means both, an ipBlock its CIDR
// less the exception).
func TestNetworkPoliciesAllFeatures(t *testing.T) {
	objs := render(t, "-f", "testdata/all-features.yaml")
	pols := policies(objs)
	if len(pols) != 1 || pols[0].Name != "gpuledger-serve" {
		t.Fatalf("NetworkPolicies %v, want only gpuledger-serve", pols)
	}
	serve := renderedPods(objs, "gpuledger")["gpuledger-serve"]
	finance := map[string]string{"team": "finance"}
	checkConns(t, pols, []connCase{
		{"ingress-nginx -> serve", other("ingress-nginx", nil), serve, 8080, true},
		{"monitoring -> serve", other("monitoring", nil), serve, 8080, true},
		{"finance namespace, invoicing pod -> serve", peerPod{ns: "billing", nsLabels: finance, labels: map[string]string{"app": "invoicing"}}, serve, 8080, true},
		{"finance namespace, other pod -> serve", peerPod{ns: "billing", nsLabels: finance, labels: map[string]string{"app": "shell"}}, serve, 8080, false},
		{"invoicing pod outside finance namespaces -> serve", other("team-a", map[string]string{"app": "invoicing"}), serve, 8080, false},
		{"10.20.1.1 -> serve", peerPod{ns: "elsewhere", ip: "10.20.1.1"}, serve, 8080, true},
		{"10.20.5.9 (except) -> serve", peerPod{ns: "elsewhere", ip: "10.20.5.9"}, serve, 8080, false},
		{"10.21.0.1 -> serve", peerPod{ns: "elsewhere", ip: "10.21.0.1"}, serve, 8080, false},
	})
}

// TestPodDisruptionBudgets: the single-replica ClickHouse gets
// maxUnavailable 1 (a drain may evict it; 0 would block drains for ever),
// serve a budget only with more than one replica, each selecting exactly
// its own pods.
func TestPodDisruptionBudgets(t *testing.T) {
	pdbs := func(objs []object) map[string]*policyv1.PodDisruptionBudget {
		out := map[string]*policyv1.PodDisruptionBudget{}
		for _, o := range objs {
			if p, ok := o.Obj.(*policyv1.PodDisruptionBudget); ok {
				out[p.Name] = p
			}
		}
		return out
	}
	selectsOnly := func(p *policyv1.PodDisruptionBudget, objs []object, want string) {
		t.Helper()
		for name, pod := range renderedPods(objs, "gpuledger") {
			if got := selects(t, p.Spec.Selector, pod.labels); got != (name == want) {
				t.Errorf("PodDisruptionBudget %s selects pod template %s: %v", p.Name, name, got)
			}
		}
	}
	objs := render(t)
	got := pdbs(objs)
	ch := got["gpuledger-clickhouse"]
	if len(got) != 1 || ch == nil {
		t.Fatalf("PodDisruptionBudgets %v, want only gpuledger-clickhouse (serve has one replica)", keysOf(got))
	}
	if ch.Spec.MaxUnavailable == nil || ch.Spec.MaxUnavailable.IntValue() != 1 || ch.Spec.MinAvailable != nil {
		t.Errorf("ClickHouse budget %+v, want maxUnavailable 1", ch.Spec)
	}
	selectsOnly(ch, objs, "gpuledger-clickhouse")

	objs = render(t, "-f", "testdata/all-features.yaml")
	got = pdbs(objs)
	s := got["gpuledger-serve"]
	if len(got) != 1 || s == nil {
		t.Fatalf("PodDisruptionBudgets %v, want only gpuledger-serve (external ClickHouse, 2 serve replicas)", keysOf(got))
	}
	if s.Spec.MinAvailable == nil || s.Spec.MinAvailable.IntValue() != 1 || s.Spec.MaxUnavailable != nil {
		t.Errorf("serve budget %+v, want minAvailable 1", s.Spec)
	}
	selectsOnly(s, objs, "gpuledger-serve")

	if got := pdbs(render(t, "--set", "clickhouse.bundled.podDisruptionBudget.enabled=false")); len(got) != 0 {
		t.Errorf("PodDisruptionBudgets %v with the ClickHouse budget off", keysOf(got))
	}
}

// The evaluator itself, on hand-written policies whose verdicts follow from
// the NetworkPolicy reference: separate peers are ORed, the selectors of
// one peer ANDed, a podSelector-only peer stays in the policy's namespace,
// and a pod no policy selects is open.
func TestNetworkPolicyEvaluator(t *testing.T) {
	tcp := corev1.ProtocolTCP
	sql := intstr.FromString("sql")
	pol := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "db"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "db"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "app"}}},
					{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
						PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "etl"}}},
				},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &sql}},
			}},
		},
	}
	db := peerPod{ns: "db", labels: map[string]string{"role": "db"}, ports: []corev1.ContainerPort{{Name: "sql", ContainerPort: 5432}}}
	prod := map[string]string{"env": "prod"}
	checkConns(t, []*networkingv1.NetworkPolicy{pol}, []connCase{
		{"app in db -> named port", other("db", map[string]string{"role": "app"}), db, 5432, true},
		{"app in db -> other port", other("db", map[string]string{"role": "app"}), db, 5433, false},
		{"app elsewhere (podSelector-only peer)", other("web", map[string]string{"role": "app"}), db, 5432, false},
		{"etl in prod namespace", peerPod{ns: "etl", nsLabels: prod, labels: map[string]string{"role": "etl"}}, db, 5432, true},
		{"etl in unlabelled namespace", other("etl", map[string]string{"role": "etl"}), db, 5432, false},
		{"other pod in prod namespace", peerPod{ns: "etl", nsLabels: prod, labels: map[string]string{"role": "x"}}, db, 5432, false},
		{"unselected pod in db is open", other("web", nil), other("db", map[string]string{"role": "cache"}), 6379, true},
	})
	if !hasIngress(pol) {
		t.Error("a policy without policyTypes and without egress rules is an ingress policy")
	}
}
