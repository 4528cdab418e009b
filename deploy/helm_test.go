package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	chartDir           = "helm/gpuledger"
	requireIntegration = "GPULEDGER_REQUIRE_INTEGRATION"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBin is the pinned helm (scripts/tools.sh builds it once into a cache
// outside the repository), or $GPULEDGER_HELM. Without it the test skips,
// unless GPULEDGER_REQUIRE_INTEGRATION is set.
func helmBin(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("GPULEDGER_HELM"); p != "" {
			helmPath = p
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command("../scripts/tools.sh", "helm")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			helmErr = fmt.Errorf("scripts/tools.sh helm: %v\n%s", err, stderr.String())
			return
		}
		helmPath = strings.TrimSpace(string(out))
	})
	if helmErr != nil {
		if os.Getenv(requireIntegration) != "" {
			t.Fatalf("helm unavailable and %s is set: %v", requireIntegration, helmErr)
		}
		t.Skipf("helm unavailable: %v", helmErr)
	}
	return helmPath
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBin(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func render(t *testing.T, args ...string) []object {
	t.Helper()
	out, err := helm(t, append([]string{"template", "gpuledger", chartDir, "--namespace", "gpuledger"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAll(t, out)
}

// object is one rendered manifest, decoded strictly into its API type.
type object struct {
	Kind, Name string
	Obj        any
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeAll decodes every document strictly: an unknown or duplicated
// field fails the test, so a misspelled or misplaced key cannot hide.
func decodeAll(t *testing.T, manifests string) []object {
	t.Helper()
	var objs []object
	for _, doc := range docSep.Split(manifests, -1) {
		o, err := decode(doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

// decode decodes one document into its API type; a document of comments
// only gives a zero object.
func decode(doc string) (object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return object{}, fmt.Errorf("not YAML: %v", err)
	}
	if tm.Kind == "" && tm.APIVersion == "" {
		return object{}, nil
	}
	var into any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		into = &corev1.Namespace{}
	case "v1 ServiceAccount":
		into = &corev1.ServiceAccount{}
	case "v1 Service":
		into = &corev1.Service{}
	case "v1 ConfigMap":
		into = &corev1.ConfigMap{}
	case "v1 Secret":
		into = &corev1.Secret{}
	case "v1 PersistentVolumeClaim":
		into = &corev1.PersistentVolumeClaim{}
	case "apps/v1 DaemonSet":
		into = &appsv1.DaemonSet{}
	case "apps/v1 Deployment":
		into = &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		into = &appsv1.StatefulSet{}
	case "rbac.authorization.k8s.io/v1 Role":
		into = &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		into = &rbacv1.RoleBinding{}
	case "networking.k8s.io/v1 Ingress":
		into = &networkingv1.Ingress{}
	case "networking.k8s.io/v1 NetworkPolicy":
		into = &networkingv1.NetworkPolicy{}
	case "policy/v1 PodDisruptionBudget":
		into = &policyv1.PodDisruptionBudget{}
	case "scheduling.k8s.io/v1 PriorityClass":
		into = &schedulingv1.PriorityClass{}
	case "rbac.authorization.k8s.io/v1 ClusterRole":
		into = &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
		into = &rbacv1.ClusterRoleBinding{}
	case "batch/v1 Job":
		into = &batchv1.Job{}
	case "batch/v1 CronJob":
		into = &batchv1.CronJob{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		into = &serviceMonitor{}
	case "monitoring.coreos.com/v1 PodMonitor":
		into = &podMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		into = &prometheusRule{}
	default:
		return object{}, fmt.Errorf("no decoder for %s %s (%s): add one", tm.APIVersion, tm.Kind, tm.Metadata.Name)
	}
	if err := strictDecode([]byte(doc), into); err != nil {
		return object{}, fmt.Errorf("%s %s does not decode strictly into %T: %v", tm.Kind, tm.Metadata.Name, into, err)
	}
	if tm.Metadata.Name == "" {
		return object{}, fmt.Errorf("%s without a name", tm.Kind)
	}
	return object{Kind: tm.Kind, Name: tm.Metadata.Name, Obj: into}, nil
}

// strictDecode decodes as the API server does: field names are case
// sensitive (encoding/json would take hostPid for hostPID), and unknown or
// duplicated fields are errors.
func strictDecode(doc []byte, into any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, into)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// The decoder itself rejects what a typo in a template would produce.
func TestDecodeIsStrict(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec: {template: {spec: {hostPid: true}}}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 1, targetport: 2}]}\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {endpoints: [{port: m, intervall: 30s}]}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
	} {
		if _, err := decode(doc); err == nil {
			t.Errorf("decoded without error:\n%s", doc)
		}
	}
}

// The Prometheus Operator's types are not in k8s.io/api: these cover the
// fields the chart sets, and unknown fields are errors.
type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

type endpoint struct {
	Port              string           `json:"port"`
	Path              string           `json:"path"`
	Interval          string           `json:"interval"`
	ScrapeTimeout     string           `json:"scrapeTimeout"`
	HonorLabels       bool             `json:"honorLabels"`
	Relabelings       []map[string]any `json:"relabelings,omitempty"`
	MetricRelabelings []map[string]any `json:"metricRelabelings,omitempty"`
}

type monitorSpec struct {
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector struct {
		MatchNames []string `json:"matchNames"`
	} `json:"namespaceSelector"`
	Endpoints           []endpoint `json:"endpoints,omitempty"`
	PodMetricsEndpoints []endpoint `json:"podMetricsEndpoints,omitempty"`
}

type serviceMonitor struct {
	typeMeta `json:",inline"`
	Spec     monitorSpec `json:"spec"`
}

type podMonitor struct {
	typeMeta `json:",inline"`
	Spec     monitorSpec `json:"spec"`
}

type ruleSpec struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Record      string            `json:"record,omitempty"`
			Alert       string            `json:"alert,omitempty"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

type prometheusRule struct {
	typeMeta `json:",inline"`
	Spec     ruleSpec `json:"spec"`
}

func kinds(objs []object) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.Kind)
	}
	sort.Strings(ks)
	return slices.Compact(ks)
}

func only[T any](t *testing.T, objs []object) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.Obj.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want exactly one %T, got %d", zero, len(found))
	}
	return found[0]
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", "testdata/all-features.yaml"}} {
		out, err := helm(t, append([]string{"lint", "--strict", chartDir}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
}

// TestDefaults: the default rendering needs no CRD; it runs its own
// ClickHouse (no Secret rendered: the password is made in the cluster) and
// the web app, the collector ships there and is read-only everywhere but
// its data directory, and no report CronJob by default.
func TestDefaults(t *testing.T) {
	objs := render(t)
	want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Deployment", "Job",
		"NetworkPolicy", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount", "StatefulSet"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v (no Secret, CronJob or monitoring.coreos.com objects by default)", got, want)
	}
	checkClusterRole(t, named[*rbacv1.ClusterRole](t, objs, "gpuledger"))
	checkServeQuotaRBAC(t, objs)
	ds := only[*appsv1.DaemonSet](t, objs)
	checkCollector(t, ds)
	if v := ds.Spec.Template.Spec.Volumes; volume(t, v, "data").HostPath == nil ||
		volume(t, v, "data").HostPath.Path != "/var/lib/gpuledger" {
		t.Errorf("data volume %+v, want hostPath /var/lib/gpuledger", volume(t, v, "data"))
	}
	// The collectors, the migrate and prices hooks and serve use the
	// bundled server exactly as they use an external one.
	checkClickHouseEnv(t, "collector", ds.Spec.Template.Spec.Containers[0], ds.Spec.Template.Spec.Volumes, "gpuledger-clickhouse")
	migrate := jobNamed(t, objs, "gpuledger-migrate")
	checkClickHouseEnv(t, "migrate", migrate.Spec.Template.Spec.Containers[0], migrate.Spec.Template.Spec.Volumes, "gpuledger-clickhouse")
	checkPricesJob(t, objs, "gpuledger-clickhouse")
	checkServe(t, objs, "gpuledger-clickhouse", "default")
	checkBundledClickHouse(t, objs)
	if ds.Spec.Template.Spec.PriorityClassName != "" {
		t.Errorf("priorityClassName %q by default: system-node-critical outside kube-system is refused on some clusters",
			ds.Spec.Template.Spec.PriorityClassName)
	}
	if e := env(t, ds.Spec.Template.Spec.Containers[0], "GPULEDGER_DCGM"); e.Value != "off" {
		t.Errorf("dcgm mode %q by default, want off: the image has no libdcgm", e.Value)
	}
	// The price book ConfigMap carries deploy/prices.yaml.
	prices, err := os.ReadFile("prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := configMap(t, objs, "gpuledger-prices")
	if got := cm.Data["prices.yaml"]; strings.TrimSpace(got) != strings.TrimSpace(string(prices)) {
		t.Errorf("price book ConfigMap differs from deploy/prices.yaml:\n%s", got)
	}
	checkDashboards(t, objs, "gpuledger")
}

func TestAllFeatures(t *testing.T) {
	objs := render(t, "-f", "testdata/all-features.yaml")
	want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "CronJob", "DaemonSet", "Deployment", "Ingress", "Job",
		"NetworkPolicy", "PersistentVolumeClaim", "PodDisruptionBudget", "PodMonitor", "PriorityClass", "PrometheusRule", "Secret",
		"Service", "ServiceAccount", "ServiceMonitor"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	checkClusterRole(t, named[*rbacv1.ClusterRole](t, objs, "gpuledger"))
	checkServeQuotaRBAC(t, objs)
	ds := only[*appsv1.DaemonSet](t, objs)
	checkCollector(t, ds)
	c := ds.Spec.Template.Spec.Containers[0]
	checkClickHouseEnv(t, "collector", c, ds.Spec.Template.Spec.Volumes, "gpuledger-clickhouse")
	if env(t, c, "GPULEDGER_CLICKHOUSE_CLUSTER").Value != "main" || env(t, c, "GPULEDGER_DCGM").Value != "remote" {
		t.Errorf("cluster/dcgm env not set from values: %+v", c.Env)
	}
	if volume(t, ds.Spec.Template.Spec.Volumes, "data").EmptyDir == nil {
		t.Errorf("dataDir.type emptyDir not honoured: %+v", volume(t, ds.Spec.Template.Spec.Volumes, "data"))
	}

	sec := only[*corev1.Secret](t, objs)
	if sec.StringData["dsn"] == "" || sec.StringData["password"] != "s3cret" {
		t.Errorf("secret %+v", sec.StringData)
	}
	if hook := sec.Annotations["helm.sh/hook"]; hook != "pre-install,pre-upgrade" {
		t.Errorf("the Secret must exist before the migrate hook: hook %q", hook)
	}

	job := jobNamed(t, objs, "gpuledger-migrate")
	if job.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" {
		t.Errorf("migrate Job hook %q", job.Annotations["helm.sh/hook"])
	}
	jc := job.Spec.Template.Spec.Containers[0]
	if !slices.Equal(jc.Args, []string{"ledger", "migrate"}) {
		t.Errorf("migrate args %v", jc.Args)
	}
	checkClickHouseEnv(t, "migrate", jc, job.Spec.Template.Spec.Volumes, "gpuledger-clickhouse")
	checkNonRoot(t, "migrate", jc)
	checkPricesJob(t, objs, "gpuledger-clickhouse")

	cj := named[*batchv1.CronJob](t, objs, "gpuledger-report")
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	rc := pod.Containers[0]
	script := strings.Join(rc.Command, " ")
	for _, s := range []string{"gpuledger report --period", "--format csv", "--format html", "-1 month"} {
		if !strings.Contains(script, s) {
			t.Errorf("report command lacks %q:\n%s", s, script)
		}
	}
	checkClickHouseEnv(t, "report", rc, pod.Volumes, "gpuledger-clickhouse")
	checkNonRoot(t, "report", rc)
	pvc := named[*corev1.PersistentVolumeClaim](t, objs, "gpuledger-reports")
	if claim := volume(t, pod.Volumes, "reports").PersistentVolumeClaim; claim == nil || claim.ClaimName != pvc.Name {
		t.Errorf("reports volume %+v, want the PVC %s", volume(t, pod.Volumes, "reports"), pvc.Name)
	}
	if got := *pvc.Spec.StorageClassName; got != "standard" {
		t.Errorf("storage class %q", got)
	}
	cm := configMap(t, objs, "gpuledger-prices")
	if !strings.Contains(cm.Data["prices.yaml"], "currency: EUR") {
		t.Errorf("prices.book not used: %q", cm.Data["prices.yaml"])
	}

	sm := only[*serviceMonitor](t, objs)
	// The ServiceMonitor scrapes the collectors' Service and the advisor's.
	for _, name := range []string{"gpuledger", "gpuledger-advisor"} {
		svc := named[*corev1.Service](t, objs, name)
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name ||
			sm.Metadata.Labels["release"] != "kube-prometheus-stack" || len(sm.Spec.Endpoints[0].Relabelings) != 1 {
			t.Errorf("ServiceMonitor %+v for Service %s", sm, name)
		}
		for k, v := range sm.Spec.Selector.MatchLabels {
			if svc.Labels[k] != v {
				t.Errorf("ServiceMonitor selects %s=%s, Service %s has %q", k, v, name, svc.Labels[k])
			}
		}
	}
	checkAdvisor(t, objs, "14d")
	checkServe(t, objs, "gpuledger-clickhouse", "gpu-eu-west-1")
	// The ServiceMonitor also scrapes serve (month-to-date charges).
	if svc := named[*corev1.Service](t, objs, "gpuledger-serve"); svc.Spec.Ports[0].Name != sm.Spec.Endpoints[0].Port {
		t.Errorf("serve's Service port %q is not the ServiceMonitor's %q", svc.Spec.Ports[0].Name, sm.Spec.Endpoints[0].Port)
	}
	ing := only[*networkingv1.Ingress](t, objs)
	if r := ing.Spec.Rules; len(r) != 1 || r[0].Host != "bill.example.com" || r[0].HTTP.Paths[0].Backend.Service.Name != "gpuledger-serve" ||
		r[0].HTTP.Paths[0].Backend.Service.Port.Number != 8080 || *ing.Spec.IngressClassName != "nginx" || len(ing.Spec.TLS) != 1 {
		t.Errorf("Ingress %+v", ing.Spec)
	}
	serve := named[*appsv1.Deployment](t, objs, "gpuledger-serve")
	sc := serve.Spec.Template.Spec.Containers[0]
	if env(t, sc, "GPULEDGER_WEB_CONFIG").Value != "/etc/gpuledger/web/web.yaml" || volume(t, serve.Spec.Template.Spec.Volumes, "web").Secret.SecretName != "gpuledger-web" ||
		sc.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("serve web config: env %+v, volumes %+v, probe %+v", sc.Env, serve.Spec.Template.Spec.Volumes, sc.LivenessProbe)
	}
	// The chart's PriorityClass, the grace period and the drain deadline.
	pc := only[*schedulingv1.PriorityClass](t, objs)
	if p := ds.Spec.Template.Spec.PriorityClassName; p != pc.Name || pc.Value != 1000000 || pc.GlobalDefault {
		t.Errorf("collector priority %q, PriorityClass %s value %d global %v", p, pc.Name, pc.Value, pc.GlobalDefault)
	}
	if g := ds.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 45 || !slices.Contains(c.Args, "--shutdown-timeout=40s") {
		t.Errorf("grace %v, args %q: want 45 s and --shutdown-timeout=40s", g, c.Args)
	}
	pm := only[*podMonitor](t, objs)
	// The values' own rule, then the chart's cluster label.
	if len(pm.Spec.PodMetricsEndpoints) != 1 || len(pm.Spec.PodMetricsEndpoints[0].MetricRelabelings) != 2 ||
		!reflect.DeepEqual(pm.Spec.Selector.MatchLabels, ds.Spec.Selector.MatchLabels) {
		t.Errorf("PodMonitor %+v", pm)
	}

	// The PrometheusRule's spec is alerts/prometheusrule.yaml's.
	pr := only[*prometheusRule](t, objs)
	src, err := os.ReadFile("../alerts/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want0 prometheusRule
	if err := strictDecode(src, &want0); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pr.Spec, want0.Spec) || len(pr.Spec.Groups) == 0 {
		t.Errorf("PrometheusRule spec differs from alerts/prometheusrule.yaml")
	}
	if pr.Metadata.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v", pr.Metadata.Labels)
	}
	checkDashboards(t, objs, "monitoring")
}

// An existing Secret replaces the chart's.
func TestExistingSecret(t *testing.T) {
	objs := render(t, "--set", "clickhouse.existingSecret=ch-creds", "--set", "clickhouse.dsnKey=url", "--set", "cluster.name=gpu-us-east-2")
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Fatalf("rendered a Secret with clickhouse.existingSecret set")
		}
	}
	ds := only[*appsv1.DaemonSet](t, objs)
	checkClickHouseEnv(t, "collector", ds.Spec.Template.Spec.Containers[0], ds.Spec.Template.Spec.Volumes, "ch-creds")
	if ref := env(t, ds.Spec.Template.Spec.Containers[0], "GPULEDGER_LEDGER").ValueFrom.SecretKeyRef; ref.Key != "url" {
		t.Errorf("dsnKey not used: %+v", ref)
	}
	jobNamed(t, objs, "gpuledger-migrate")
	checkPricesJob(t, objs, "ch-creds")
	checkServe(t, objs, "ch-creds", "gpu-us-east-2")
	for _, o := range objs {
		if o.Kind == "StatefulSet" || o.Kind == "CronJob" {
			t.Errorf("%s %s rendered with clickhouse.existingSecret set (report is off by default, no bundled server)", o.Kind, o.Name)
		}
	}
}

// jobNamed is the one Job of that name: the migrate hook, or the prices
// hook of the ClickHouse dashboards.
func jobNamed(t *testing.T, objs []object, name string) *batchv1.Job {
	t.Helper()
	return named[*batchv1.Job](t, objs, name)
}

// named is the one object of type T called name.
func named[T interface{ GetName() string }](t *testing.T, objs []object, name string) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if x, ok := o.Obj.(T); ok && x.GetName() == name {
			found = append(found, x)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %T %s, got %d", *new(T), name, len(found))
	}
	return found[0]
}

// checkPricesJob: the price book reaches the ledger for the ClickHouse
// dashboards after install and upgrade (the prices ConfigMap exists by
// then), with the ledger's credentials, as non-root.
func checkPricesJob(t *testing.T, objs []object, secret string) {
	t.Helper()
	job := jobNamed(t, objs, "gpuledger-prices")
	if job.Annotations["helm.sh/hook"] != "post-install,post-upgrade" {
		t.Errorf("prices Job hook %q", job.Annotations["helm.sh/hook"])
	}
	c := job.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Args, []string{"ledger", "migrate", "--prices", "/etc/gpuledger/prices/prices.yaml"}) {
		t.Errorf("prices args %v", c.Args)
	}
	if v := volume(t, job.Spec.Template.Spec.Volumes, "prices"); v.ConfigMap == nil || v.ConfigMap.Name != "gpuledger-prices" {
		t.Errorf("prices volume %+v", v)
	}
	checkClickHouseEnv(t, "prices", c, job.Spec.Template.Spec.Volumes, secret)
	checkNonRoot(t, "prices", c)
}

// The schema rejects bad values and names them.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set-json", `collector.resources="64Mi"`}, "at '/collector/resources': got string, want object"},
		{[]string{"--set", "service.port=-1"}, "at '/service/port': minimum: got -1"},
		{[]string{"--set", "service.port=70000"}, "at '/service/port': maximum"},
		{[]string{"--set", "bogus=1"}, "additional properties 'bogus' not allowed"},
		{[]string{"--set", "collector.bogus=1"}, "at '/collector': additional properties 'bogus' not allowed"},
		{[]string{"--set", "dcgm.mode=fast"}, "at '/dcgm/mode': value must be one of 'embedded', 'remote', 'off'"},
		{[]string{"--set", "collector.dataDir.type=tmpfs"}, "at '/collector/dataDir/type'"},
		{[]string{"--set", "image.pullPolicy=Sometimes"}, "at '/image/pullPolicy'"},
		{[]string{"--set", "clickhouse.dsn=mysql://x"}, "at '/clickhouse/dsn'"},
		{[]string{"--set", "cluster.name=eu west"}, "at '/cluster/name'"},
		{[]string{"--set", "cluster.name=-eu"}, "at '/cluster/name'"},
		{[]string{"--set", "cluster.name=EU-West"}, "at '/cluster/name'"},
		{[]string{"--set", "cluster.name=eu.west"}, "at '/cluster/name'"},
		{[]string{"--set", "cluster.name=" + strings.Repeat("a", 64)}, "at '/cluster/name': maxLength"},
		{[]string{"--set", "cluster.name="}, "at '/cluster/name': minLength"},
		{[]string{"--set", "cluster.bogus=1"}, "at '/cluster': additional properties 'bogus' not allowed"},
		{[]string{"--set", "collector.goMemLimit=lots"}, "at '/collector/goMemLimit'"},
		{[]string{"--set", "collector.pollInterval=soon"}, "at '/collector/pollInterval'"},
		{[]string{"--set", "collector.ledgerRetention=forever"}, "at '/collector/ledgerRetention'"},
		{[]string{"--set", "advisor.window=a month"}, "at '/advisor/window'"},
		{[]string{"--set", "advisor.window=1d1y"}, "at '/advisor/window'"},
		{[]string{"--set", "advisor.refresh=30s"}, "at '/advisor/refresh'"},
		{[]string{"--set", "collector.ledgerRetention=1d1y"}, "at '/collector/ledgerRetention'"},
		{[]string{"--set", "collector.resources.limits.memory=much"}, "at '/collector/resources/limits/memory'"},
		{[]string{"--set", "platform=openshift"}, "at '/platform': value must be one of 'generic', 'gke', 'eks', 'aks'"},
		{[]string{"--set", "collector.terminationGracePeriodSeconds=0"}, "at '/collector/terminationGracePeriodSeconds': minimum"},
		{[]string{"--set", "collector.shutdownTimeout=soon"}, "at '/collector/shutdownTimeout'"},
		{[]string{"--set", "collector.startupProbe.failureThreshold=0"}, "at '/collector/startupProbe/failureThreshold': minimum"},
		{[]string{"--set", "priorityClass.value=2000000000"}, "at '/priorityClass/value': maximum"},
		{[]string{"--set", "clickhouse.bundled.user=bad-user"}, "at '/clickhouse/bundled/user'"},
		{[]string{"--set", "clickhouse.bundled.database=a;drop"}, "at '/clickhouse/bundled/database'"},
		{[]string{"--set", "clickhouse.bundled.persistence.size=lots"}, "at '/clickhouse/bundled/persistence/size'"},
		{[]string{"--set", "clickhouse.bundled.image.tag="}, "at '/clickhouse/bundled/image/tag'"},
		{[]string{"--set", "clickhouse.bundled.logLevel=loud"}, "at '/clickhouse/bundled/logLevel'"},
		{[]string{"--set", "clickhouse.bundled.markCacheSize=-1"}, "at '/clickhouse/bundled/markCacheSize': minimum"},
		{[]string{"--set", "clickhouse.bundled.bogus=1"}, "at '/clickhouse/bundled': additional properties 'bogus' not allowed"},
		{[]string{"--set", "serve.port=0"}, "at '/serve/port': minimum"},
		{[]string{"--set", "serve.ingress.path=bill"}, "at '/serve/ingress/path'"},
		{[]string{"--set", "serve.bogus=1"}, "at '/serve': additional properties 'bogus' not allowed"},
		{[]string{"--set", "serve.resources.requests.memory=some"}, "at '/serve/resources/requests/memory'"},
		{[]string{"--set", "networkPolicy.enabled=yes"}, "at '/networkPolicy/enabled': got string, want boolean"},
		{[]string{"--set", "networkPolicy.bogus=1"}, "at '/networkPolicy': additional properties 'bogus' not allowed"},
		{[]string{"--set", "networkPolicy.clickhouse.allowNamespaces={Grafana_NS}"}, "at '/networkPolicy/clickhouse/allowNamespaces/0'"},
		{[]string{"--set", "networkPolicy.serve.allowNamespaces={a,a}"}, "at '/networkPolicy/serve/allowNamespaces'"},
		{[]string{"--set", "networkPolicy.serve.extraFrom[0].podselector.app=x"}, "at '/networkPolicy/serve/extraFrom/0': additional properties 'podselector' not allowed"},
		{[]string{"--set", "networkPolicy.clickhouse.extraFrom[0].ipBlock.except={10.0.0.0/8}"}, "at '/networkPolicy/clickhouse/extraFrom/0/ipBlock': missing property 'cidr'"},
		{[]string{"--set", "clickhouse.bundled.podDisruptionBudget.maxUnavailable=2"}, "at '/clickhouse/bundled/podDisruptionBudget/maxUnavailable': maximum"},
		{[]string{"--set", "serve.podDisruptionBudget.minAvailable=0"}, "at '/serve/podDisruptionBudget/minAvailable': minimum"},
		{[]string{"--set", "serve.replicas=3", "--set", "serve.podDisruptionBudget.minAvailable=3"}, "serve.podDisruptionBudget.minAvailable (3) must be below serve.replicas (3)"},
	} {
		_, err := helm(t, append([]string{"template", "gpuledger", chartDir}, tc.args...)...)
		if err == nil {
			t.Errorf("%v: rendered, want a schema error", tc.args)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error does not say %q:\n%v", tc.args, tc.want, err)
		}
	}
}

// TestManifestsCurrent is the stale check of `make manifests`: the chart's
// copies of the rules, dashboards and price book equal their sources, and
// deploy/gpuledger.yaml is the chart's current rendering.
func TestManifestsCurrent(t *testing.T) {
	same := func(src, cp string) {
		a, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(cp)
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is not a current copy of %s: run make manifests", cp, src)
		}
	}
	same("../alerts/prometheusrule.yaml", chartDir+"/files/prometheusrule.yaml")
	same("prices.yaml", chartDir+"/files/prices.yaml")
	srcs, _ := filepath.Glob("../dashboards/json/*.json")
	cps, _ := filepath.Glob(chartDir + "/files/dashboards/*.json")
	if len(srcs) == 0 || len(srcs) != len(cps) {
		t.Errorf("%d dashboards, %d copies in the chart: run make manifests", len(srcs), len(cps))
	}
	for _, s := range srcs {
		same(s, chartDir+"/files/dashboards/"+filepath.Base(s))
	}

	cmd := exec.Command("../scripts/manifests.sh", "render")
	cmd.Env = append(os.Environ(), "HELM="+helmBin(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("manifests.sh render: %v\n%s", err, stderr.String())
	}
	got, err := os.ReadFile("gpuledger.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("deploy/gpuledger.yaml is stale: run make manifests")
	}
	objs := decodeAll(t, string(got))
	if ns := only[*corev1.Namespace](t, objs); ns.Name != "gpuledger" {
		t.Errorf("namespace %q", ns.Name)
	}
}

// checkClusterRole: exactly get/list/watch on pods, namespaces, nodes and
// resource.k8s.io resourceslices.
func checkClusterRole(t *testing.T, cr *rbacv1.ClusterRole) {
	t.Helper()
	got := map[string]bool{}
	for _, r := range cr.Rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("unexpected rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got[g+"/"+res+":"+v] = true
				}
			}
		}
	}
	want := map[string]bool{}
	for _, res := range []string{"/pods", "/namespaces", "/nodes", "resource.k8s.io/resourceslices"} {
		for _, v := range []string{"get", "list", "watch"} {
			want[res+":"+v] = true
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClusterRole grants %v, want exactly %v", keys(got), keys(want))
	}
}

// checkServeQuotaRBAC: serve's own ServiceAccount, bound to a ClusterRole
// of exactly get/list/watch on namespaces, ResourceQuotas, nodes and the Kueue,
// Volcano and KAI queue objects; the collectors' binding does not name it.
func checkServeQuotaRBAC(t *testing.T, objs []object) {
	t.Helper()
	sa := named[*corev1.ServiceAccount](t, objs, "gpuledger-serve")
	cr := named[*rbacv1.ClusterRole](t, objs, "gpuledger-serve-quota")
	got := map[string]bool{}
	for _, r := range cr.Rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("unexpected serve rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got[g+"/"+res+":"+v] = true
				}
			}
		}
	}
	want := map[string]bool{}
	for _, res := range []string{"/namespaces", "/resourcequotas", "/nodes", "kueue.x-k8s.io/clusterqueues", "kueue.x-k8s.io/localqueues",
		"kueue.x-k8s.io/resourceflavors", "scheduling.volcano.sh/queues", "scheduling.run.ai/queues"} {
		for _, v := range []string{"get", "list", "watch"} {
			want[res+":"+v] = true
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("serve's ClusterRole grants %v, want exactly %v", keys(got), keys(want))
	}
	b := named[*rbacv1.ClusterRoleBinding](t, objs, "gpuledger-serve-quota")
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != cr.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != sa.Name || b.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("serve's binding %+v, want ClusterRole %s to ServiceAccount %s/%s", b, cr.Name, sa.Namespace, sa.Name)
	}
	for _, s := range named[*rbacv1.ClusterRoleBinding](t, objs, "gpuledger").Subjects {
		if s.Name == sa.Name {
			t.Errorf("the collectors' binding names serve's account: %+v", s)
		}
	}
}

// With serve.quota.enabled=false serve reads no Kubernetes API: no
// account, role or token of its own; with rbac.create=false its account
// is there for the operator to bind, and no role is rendered.
func TestServeQuotaSwitch(t *testing.T) {
	// On by default: serve records quota (--quota); a Prometheus URL gives
	// the month pages their cost per token (--prometheus).
	def := named[*appsv1.Deployment](t, render(t, "--set", "serve.prometheus.url=http://prometheus.monitoring:9090"), "gpuledger-serve").Spec.Template.Spec
	if args := def.Containers[0].Args; !slices.Contains(args, "--quota") || !slices.Contains(args, "--prometheus=http://prometheus.monitoring:9090") {
		t.Errorf("serve's args %q: want --quota and --prometheus=http://prometheus.monitoring:9090", args)
	}
	objs := render(t, "--set", "serve.quota.enabled=false")
	pod := named[*appsv1.Deployment](t, objs, "gpuledger-serve").Spec.Template.Spec
	if slices.Contains(pod.Containers[0].Args, "--quota") || slices.ContainsFunc(pod.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--prometheus") }) {
		t.Errorf("serve's args %q with serve.quota.enabled=false and no Prometheus URL", pod.Containers[0].Args)
	}
	if pod.ServiceAccountName != "" || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("serve without quota: serviceAccountName %q, automount %v; want no account and no token",
			pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	for _, o := range objs {
		if strings.HasPrefix(o.Name, "gpuledger-serve") && (o.Kind == "ServiceAccount" || o.Kind == "ClusterRole" || o.Kind == "ClusterRoleBinding") {
			t.Errorf("%s %s rendered with serve.quota.enabled=false", o.Kind, o.Name)
		}
	}
	checkClusterRole(t, named[*rbacv1.ClusterRole](t, objs, "gpuledger"))

	objs = render(t, "--set", "rbac.create=false")
	named[*corev1.ServiceAccount](t, objs, "gpuledger-serve")
	for _, o := range objs {
		if o.Kind == "ClusterRole" || o.Kind == "ClusterRoleBinding" {
			t.Errorf("%s %s rendered with rbac.create=false", o.Kind, o.Name)
		}
	}
}

func keys(m map[string]bool) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

func checkCollector(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	if !pod.HostPID {
		t.Error("hostPID must be true: NVML reports host PIDs")
	}
	if pod.HostNetwork || pod.HostIPC {
		t.Error("hostNetwork/hostIPC are not needed")
	}
	if pod.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("node selector %v", pod.NodeSelector)
	}
	if !slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool {
		return tl.Key == "nvidia.com/gpu" && tl.Operator == corev1.TolerationOpExists
	}) {
		t.Errorf("no toleration for nvidia.com/gpu: %+v", pod.Tolerations)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Args) < 2 || c.Args[0] != "collect" || !strings.HasPrefix(c.Args[1], "--cluster=") {
		t.Errorf("args %v: want collect --cluster=NAME first", c.Args)
	}
	if e := env(t, c, "NODE_NAME"); e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME not from the downward API: %+v", e)
	}
	if env(t, c, "GPULEDGER_PROC_ROOT").Value != "/host/proc" {
		t.Error("GPULEDGER_PROC_ROOT is not the host /proc mount")
	}

	// Every hostPath mount is read-only except the data directory.
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		byName[v.Name] = v
	}
	hostPaths := map[string]string{}
	for _, m := range c.VolumeMounts {
		v, ok := byName[m.Name]
		if !ok {
			t.Errorf("mount %s has no volume", m.Name)
			continue
		}
		if m.Name == "data" {
			if m.ReadOnly || m.MountPath != "/var/lib/gpuledger" {
				t.Errorf("data mount %+v", m)
			}
			continue
		}
		if v.HostPath != nil {
			hostPaths[v.HostPath.Path] = m.MountPath
		}
		if !m.ReadOnly && v.HostPath != nil {
			t.Errorf("hostPath %s mounted writable at %s", v.HostPath.Path, m.MountPath)
		}
	}
	if hostPaths["/proc"] != "/host/proc" || hostPaths["/var/lib/kubelet/pod-resources"] != "/var/lib/kubelet/pod-resources" {
		t.Errorf("host mounts %v", hostPaths)
	}

	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		(sc.Privileged != nil && *sc.Privileged) || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("collector securityContext %+v: want read-only root, no escalation, every capability dropped and none added", sc)
	}

	// Requests and limits follow BENCHMARKS.md (private 25-31 MiB, total
	// RSS 53-69 MiB on the dense node); GOMEMLIMIT stays below the limit.
	req, lim := c.Resources.Requests, c.Resources.Limits
	mi := func(q resource.Quantity) int64 { return q.Value() >> 20 }
	if mi(req[corev1.ResourceMemory]) < 64 || mi(lim[corev1.ResourceMemory]) < 96 {
		t.Errorf("memory request %v limit %v: below the measured total RSS", req.Memory(), lim.Memory())
	}
	if _, ok := lim[corev1.ResourceCPU]; ok {
		t.Errorf("CPU limit %v: throttling would delay cycles and scrapes", lim.Cpu())
	}
	gml := env(t, c, "GOMEMLIMIT").Value
	var n int64
	if _, err := fmt.Sscanf(gml, "%dMiB", &n); err != nil || n >= mi(lim[corev1.ResourceMemory]) || n < 32 {
		t.Errorf("GOMEMLIMIT %q, memory limit %v", gml, lim.Memory())
	}
	if ds.Spec.Template.Spec.ServiceAccountName != "gpuledger" {
		t.Errorf("service account %q", ds.Spec.Template.Spec.ServiceAccountName)
	}
}

func checkClickHouseEnv(t *testing.T, what string, c corev1.Container, vols []corev1.Volume, secret string) {
	t.Helper()
	l := env(t, c, "GPULEDGER_LEDGER")
	if l.Value != "" || l.ValueFrom == nil || l.ValueFrom.SecretKeyRef == nil || l.ValueFrom.SecretKeyRef.Name != secret {
		t.Errorf("%s: GPULEDGER_LEDGER not from Secret %s: %+v", what, secret, l)
	}
	pf := env(t, c, "GPULEDGER_CLICKHOUSE_PASSWORD_FILE").Value
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == "clickhouse" && strings.HasPrefix(pf, m.MountPath+"/") && m.ReadOnly {
			mounted = true
		}
	}
	if v := volume(t, vols, "clickhouse"); !mounted || v.Secret == nil || v.Secret.SecretName != secret {
		t.Errorf("%s: password file %s not a read-only mount of Secret %s: %+v", what, pf, secret, v)
	}
}

func checkNonRoot(t *testing.T, what string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: securityContext %+v, want non-root with a read-only root", what, sc)
	}
}

func checkDashboards(t *testing.T, objs []object, ns string) {
	t.Helper()
	srcs, _ := filepath.Glob("../dashboards/json/*.json")
	n := 0
	for _, o := range objs {
		cm, ok := o.Obj.(*corev1.ConfigMap)
		if !ok || cm.Labels["grafana_dashboard"] == "" {
			continue
		}
		n++
		if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != ns || len(cm.Data) != 1 {
			t.Errorf("dashboard ConfigMap %s: labels %v namespace %s", cm.Name, cm.Labels, cm.Namespace)
		}
		for file, data := range cm.Data {
			src, err := os.ReadFile("../dashboards/json/" + file)
			if err != nil {
				t.Errorf("ConfigMap %s carries %s, not in dashboards/json", cm.Name, file)
				continue
			}
			var a, b any
			if json.Unmarshal(src, &a) != nil || json.Unmarshal([]byte(data), &b) != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("ConfigMap %s: %s differs from dashboards/json", cm.Name, file)
			}
		}
	}
	if n != len(srcs) || n == 0 {
		t.Errorf("%d dashboard ConfigMaps for %d dashboards", n, len(srcs))
	}
}

func configMap(t *testing.T, objs []object, name string) *corev1.ConfigMap {
	t.Helper()
	for _, o := range objs {
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok && cm.Name == name {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %s", name)
	return nil
}

func env(t *testing.T, c corev1.Container, name string) corev1.EnvVar {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			return e
		}
	}
	t.Errorf("container %s: no env %s", c.Name, name)
	return corev1.EnvVar{}
}

func volume(t *testing.T, vols []corev1.Volume, name string) corev1.Volume {
	t.Helper()
	for _, v := range vols {
		if v.Name == name {
			return v
		}
	}
	t.Errorf("no volume %s", name)
	return corev1.Volume{}
}

// checkAdvisor: the advisor Deployment runs advise --listen on the
// values' window with the cluster ledger's DSN and the price book,
// non-root without a service account token, and its Service selects
// exactly its pods on the port it listens on.
func checkAdvisor(t *testing.T, objs []object, window string) {
	t.Helper()
	d := named[*appsv1.Deployment](t, objs, "gpuledger-advisor")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if want := []string{"advise", "--listen=:9401", "--window=" + window, "--refresh=1h"}; !slices.Equal(c.Args, want) {
		t.Errorf("advisor args %q, want %q", c.Args, want)
	}
	if env(t, c, "GPULEDGER_PRICES").Value != "/etc/gpuledger/prices/prices.yaml" {
		t.Errorf("advisor prices env %+v", c.Env)
	}
	checkClickHouseEnv(t, "advisor", c, pod.Volumes, "gpuledger-clickhouse")
	checkNonRoot(t, "advisor", c)
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the advisor reads ClickHouse only: it must not mount a service account token")
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9401 || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("advisor ports %+v, probe %+v", c.Ports, c.LivenessProbe)
	}
	svc := named[*corev1.Service](t, objs, "gpuledger-advisor")
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("advisor Service selects %v, the Deployment %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("advisor pods lack the selector's %s=%s: %v", k, v, d.Spec.Template.Labels)
		}
	}
	if d.Spec.Template.Labels["team"] != "platform" {
		t.Errorf("advisor pods lack commonLabels: %v", d.Spec.Template.Labels)
	}
	if ds := only[*appsv1.DaemonSet](t, objs); reflect.DeepEqual(ds.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Error("the advisor's selector also selects the collectors")
	}
}

// The advisor needs the cluster ledger: enabling it without one fails
// the rendering with a message saying so.
func TestAdvisorNeedsClickHouse(t *testing.T) {
	_, err := helm(t, "template", "gpuledger", chartDir, "--set", "advisor.enabled=true", "--set", "clickhouse.bundled.enabled=false", "--set", "cluster.name=lab")
	if err == nil || !strings.Contains(err.Error(), "advisor.enabled needs the cluster ledger") {
		t.Fatalf("advisor without ClickHouse: %v", err)
	}
}

// podSpecs are the pod templates of every workload object, by name.
func podSpecs(objs []object) map[string]corev1.PodSpec {
	out := map[string]corev1.PodSpec{}
	for _, o := range objs {
		switch x := o.Obj.(type) {
		case *appsv1.DaemonSet:
			out[o.Kind+"/"+o.Name] = x.Spec.Template.Spec
		case *appsv1.Deployment:
			out[o.Kind+"/"+o.Name] = x.Spec.Template.Spec
		case *batchv1.Job:
			out[o.Kind+"/"+o.Name] = x.Spec.Template.Spec
		case *batchv1.CronJob:
			out[o.Kind+"/"+o.Name] = x.Spec.JobTemplate.Spec.Template.Spec
		}
	}
	return out
}

// TestSecretFilesReadable: a container that is not root can read every
// Secret file it mounts: the files' mode lets everyone read, or the pod's
// fsGroup owns them and is the container's group. (Pods do not run in the
// chart tests; this is what kubelet would do with the mode.)
func TestSecretFilesReadable(t *testing.T) {
	objs := render(t, "-f", "testdata/all-features.yaml")
	n := 0
	for name, pod := range podSpecs(objs) {
		secrets := map[string]*corev1.SecretVolumeSource{}
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				secrets[v.Name] = v.Secret
			}
		}
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
				continue
			}
			for _, m := range c.VolumeMounts {
				s := secrets[m.Name]
				if s == nil {
					continue
				}
				n++
				mode := int32(0o644) // kubelet's default for Secret files
				if s.DefaultMode != nil {
					mode = *s.DefaultMode
				}
				if mode&0o004 != 0 {
					continue
				}
				if mode&0o040 == 0 || pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || sc.RunAsGroup == nil ||
					*pod.SecurityContext.FSGroup != *sc.RunAsGroup {
					t.Errorf("%s: container %s (uid %d) cannot read Secret volume %s (mode %#o, pod securityContext %+v)",
						name, c.Name, *sc.RunAsUser, m.Name, mode, pod.SecurityContext)
				}
			}
		}
	}
	if n < 4 {
		t.Fatalf("only %d non-root Secret mounts checked: the migrate, prices, report and advisor pods mount the ClickHouse password", n)
	}
}

// checkServe: `gpuledger serve` on the cluster ledger and the price book,
// non-root with a read-only root and its own service account, probes on
// /healthz and /readyz, and a ClusterIP Service that selects exactly its
// pods.
func checkServe(t *testing.T, objs []object, secret, cluster string) {
	t.Helper()
	d := named[*appsv1.Deployment](t, objs, "gpuledger-serve")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	want := []string{"serve", "--cluster=" + cluster, "--ledger=$(GPULEDGER_LEDGER)", "--prices=/etc/gpuledger/prices/prices.yaml", "--listen=:8080", "--quota", "--close-after-days=3"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("serve args %q, want %q", c.Args, want)
	}
	checkClickHouseEnv(t, "serve", c, pod.Volumes, secret)
	checkNonRoot(t, "serve", c)
	// serve.quota.enabled (the default): its own account, whose token it
	// needs to watch the quota objects; never the collectors' account.
	if pod.ServiceAccountName != "gpuledger-serve" || pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Errorf("serve: serviceAccountName %q, automount %v; want its own account gpuledger-serve with a token",
			pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if v := volume(t, pod.Volumes, "prices"); v.ConfigMap == nil || v.ConfigMap.Name != "gpuledger-prices" {
		t.Errorf("serve prices volume %+v", v)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("serve probes: liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("serve ports %+v", c.Ports)
	}
	svc := named[*corev1.Service](t, objs, "gpuledger-serve")
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) ||
		svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.StrVal != c.Ports[0].Name {
		t.Errorf("serve Service %+v, Deployment selector %v", svc.Spec, d.Spec.Selector.MatchLabels)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("serve pods lack the selector's %s=%s", k, v)
		}
	}
	for _, o := range objs {
		if x, ok := o.Obj.(*appsv1.DaemonSet); ok && reflect.DeepEqual(x.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
			t.Error("serve's selector also selects the collectors")
		}
	}
}

// checkBundledClickHouse: one replica of the pinned official image on a
// PVC, non-root (the image's uid 101) with a read-only root, probes on
// /ping, resources set, the Service selecting exactly its pods on both
// ports, and the password Secret made by a hook Job whose account may
// create Secrets and nothing else.
func checkBundledClickHouse(t *testing.T, objs []object) {
	t.Helper()
	sts := named[*appsv1.StatefulSet](t, objs, "gpuledger-clickhouse")
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1", sts.Spec.Replicas)
	}
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	if !regexp.MustCompile(`^clickhouse/clickhouse-server:\d+\.\d+`).MatchString(c.Image) {
		t.Errorf("image %q: want the official image pinned to a release", c.Image)
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 101 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("clickhouse securityContext %+v", sc)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != 101 {
		t.Errorf("pod securityContext %+v: the volume must belong to the clickhouse group", pod.SecurityContext)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the ClickHouse pod must not mount a service account token")
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ping" || p.HTTPGet.Port.StrVal != "http" {
			t.Errorf("%s probe %+v, want GET /ping on http", name, p)
		}
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("clickhouse resources %+v", c.Resources)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" ||
		sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "20Gi" {
		t.Errorf("volume claim templates %+v", sts.Spec.VolumeClaimTemplates)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if mounts["data"].MountPath != "/var/lib/clickhouse" || mounts["config"].MountPath != "/etc/clickhouse-server" || !mounts["config"].ReadOnly {
		t.Errorf("clickhouse mounts %+v", c.VolumeMounts)
	}
	if v := volume(t, pod.Volumes, "config"); v.ConfigMap == nil || v.ConfigMap.Name != "gpuledger-clickhouse" {
		t.Errorf("config volume %+v", v)
	}
	svc := named[*corev1.Service](t, objs, "gpuledger-clickhouse")
	if !reflect.DeepEqual(svc.Spec.Selector, sts.Spec.Selector.MatchLabels) || len(svc.Spec.Ports) != 2 ||
		svc.Spec.Ports[0].Port != 9000 || svc.Spec.Ports[1].Port != 8123 {
		t.Errorf("clickhouse Service %+v", svc.Spec)
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if sts.Spec.Template.Labels[k] != v {
			t.Errorf("clickhouse pods lack the selector's %s=%s", k, v)
		}
	}

	// The password Secret: made by a pre-install hook Job, not rendered.
	job := jobNamed(t, objs, "gpuledger-clickhouse-secret")
	if job.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" || job.Spec.Template.Spec.ServiceAccountName != "gpuledger-clickhouse-secret" {
		t.Errorf("secret Job hook %q, account %q", job.Annotations["helm.sh/hook"], job.Spec.Template.Spec.ServiceAccountName)
	}
	checkNonRoot(t, "clickhouse-secret", job.Spec.Template.Spec.Containers[0])
	role := named[*rbacv1.Role](t, objs, "gpuledger-clickhouse-secret")
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, []string{"create"}) || !slices.Equal(role.Rules[0].Resources, []string{"secrets"}) {
		t.Errorf("secret Job role %+v, want create on secrets only", role.Rules)
	}
	rb := named[*rbacv1.RoleBinding](t, objs, "gpuledger-clickhouse-secret")
	if rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "gpuledger-clickhouse-secret" {
		t.Errorf("secret Job binding %+v", rb)
	}
	for _, o := range []metav1.Object{role, rb, named[*corev1.ServiceAccount](t, objs, "gpuledger-clickhouse-secret")} {
		if o.GetAnnotations()["helm.sh/hook"] != "pre-install,pre-upgrade" || o.GetAnnotations()["helm.sh/hook-weight"] != "-30" {
			t.Errorf("%s: hook annotations %v (must exist before the Job, weight -20)", o.GetName(), o.GetAnnotations())
		}
	}
	// The bundled server starts with the release: the migrate hook runs
	// after install, once it answers.
	m := jobNamed(t, objs, "gpuledger-migrate")
	if m.Annotations["helm.sh/hook"] != "post-install,post-upgrade" || len(m.Spec.Template.Spec.InitContainers) != 1 ||
		!strings.Contains(strings.Join(m.Spec.Template.Spec.InitContainers[0].Command, " "), "gpuledger-clickhouse.gpuledger.svc:8123/ping") {
		t.Errorf("migrate Job with the bundled server: hook %q, init containers %+v", m.Annotations["helm.sh/hook"], m.Spec.Template.Spec.InitContainers)
	}
}

// The password of the bundled server is in no rendered manifest and no
// values file: it is made in the cluster.
func TestNoPasswordRendered(t *testing.T) {
	out, err := helm(t, "template", "gpuledger", chartDir, "--namespace", "gpuledger")
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, out)
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("a Secret is rendered by default: %s", o.Name)
		}
	}
	// Two renderings differ in nothing: no random value is generated at render time.
	out2, err := helm(t, "template", "gpuledger", chartDir, "--namespace", "gpuledger")
	if err != nil {
		t.Fatal(err)
	}
	if out != out2 {
		t.Error("two renderings of the default values differ: something random is rendered")
	}
	for _, re := range []string{`(?i)<password>[^<]`, `(?i)password:\s*\S`, `(?i)password_sha256_hex>[0-9a-f]`} {
		if m := regexp.MustCompile(re).FindString(out); m != "" {
			t.Errorf("the rendering holds a password (%q)", m)
		}
	}
}

// Without any cluster ledger (bundled off, no DSN) nothing reads one:
// no serve, no migrate Job, no GPULEDGER_LEDGER on the collectors.
func TestNoClusterLedger(t *testing.T) {
	objs := render(t, "--set", "clickhouse.bundled.enabled=false", "--set", "cluster.name=lab")
	want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Service", "ServiceAccount"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	for _, e := range only[*appsv1.DaemonSet](t, objs).Spec.Template.Spec.Containers[0].Env {
		if e.Name == "GPULEDGER_LEDGER" {
			t.Errorf("GPULEDGER_LEDGER set without ClickHouse: %+v", e)
		}
	}
}

// The collector's start and stop: a startup probe that lets a 36 s ledger
// migration pass, liveness and readiness only after it, and a grace
// period for the drain on SIGTERM.
func TestCollectorStartAndStop(t *testing.T) {
	ds := only[*appsv1.DaemonSet](t, render(t))
	c := ds.Spec.Template.Spec.Containers[0]
	sp := c.StartupProbe
	if sp == nil || sp.HTTPGet == nil || sp.HTTPGet.Path != "/healthz" {
		t.Fatalf("startup probe %+v, want GET /healthz", sp)
	}
	// The kubelet restarts the container after periodSeconds x
	// failureThreshold without success; a 36 s migration (measured on a
	// 100-GPU month) must fit with room for a slower disk (3x).
	if budget := sp.PeriodSeconds * sp.FailureThreshold; budget < 3*36 {
		t.Errorf("startup probe allows %d s, want at least %d s", budget, 3*36)
	}
	if c.LivenessProbe.InitialDelaySeconds != 0 {
		t.Errorf("liveness initial delay %d: the startup probe gates it", c.LivenessProbe.InitialDelaySeconds)
	}
	if g := ds.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("terminationGracePeriodSeconds %v, want 30", g)
	}
	// The drain deadline stays below the grace period, so the collector
	// ships what it holds before the kubelet's SIGKILL.
	if !slices.Contains(c.Args, "--shutdown-timeout=25s") {
		t.Errorf("args %q: want --shutdown-timeout=25s, below the 30 s grace period", c.Args)
	}
}

// TestPlatformPresets: each platform selects the GPU nodes by a label the
// platform puts there itself; GKE's preset loads NVML from GKE's driver
// directory; a nodeSelector of the user's replaces the preset.
func TestPlatformPresets(t *testing.T) {
	exprs := func(a *corev1.Affinity) [][]string {
		var terms [][]string
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			return nil
		}
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			var e []string
			for _, x := range term.MatchExpressions {
				e = append(e, fmt.Sprintf("%s %s %v", x.Key, x.Operator, x.Values))
			}
			terms = append(terms, e)
		}
		return terms
	}
	for _, tc := range []struct {
		platform     string
		nodeSelector map[string]string
		affinity     [][]string
		toleration   string
	}{
		{"generic", map[string]string{"nvidia.com/gpu.present": "true"}, nil, ""},
		{"gke", nil, [][]string{{"cloud.google.com/gke-accelerator Exists []"}}, ""},
		{"eks", nil, [][]string{
			{"karpenter.k8s.aws/instance-gpu-manufacturer In [nvidia]"},
			{"eks.amazonaws.com/instance-gpu-manufacturer In [nvidia]"},
			{"k8s.amazonaws.com/accelerator Exists []"},
			{"nvidia.com/gpu.present In [true]"},
		}, ""},
		{"aks", map[string]string{"kubernetes.azure.com/accelerator": "nvidia"}, nil, "sku"},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			ds := only[*appsv1.DaemonSet](t, render(t, "--set", "platform="+tc.platform))
			pod := ds.Spec.Template.Spec
			if !reflect.DeepEqual(pod.NodeSelector, tc.nodeSelector) && (len(pod.NodeSelector) > 0 || len(tc.nodeSelector) > 0) {
				t.Errorf("nodeSelector %v, want %v", pod.NodeSelector, tc.nodeSelector)
			}
			if got := exprs(pod.Affinity); !reflect.DeepEqual(got, tc.affinity) {
				t.Errorf("node affinity %v, want %v", got, tc.affinity)
			}
			if !slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool { return tl.Key == "nvidia.com/gpu" }) ||
				(tc.toleration != "" && !slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool { return tl.Key == tc.toleration })) {
				t.Errorf("tolerations %+v", pod.Tolerations)
			}
			c := pod.Containers[0]
			gke := tc.platform == "gke"
			var ld string
			for _, e := range c.Env {
				if e.Name == "LD_LIBRARY_PATH" {
					ld = e.Value
				}
			}
			var driverMount bool
			for _, m := range c.VolumeMounts {
				if m.Name == "nvidia-install-dir" {
					driverMount = m.MountPath == "/usr/local/nvidia" && m.ReadOnly
					if v := volume(t, pod.Volumes, m.Name); v.HostPath == nil || v.HostPath.Path != "/home/kubernetes/bin/nvidia" {
						t.Errorf("driver volume %+v", v)
					}
				}
			}
			if gke != (ld == "/usr/local/nvidia/lib64") || gke != driverMount {
				t.Errorf("LD_LIBRARY_PATH %q, driver mount %v: want GKE's driver directory exactly on gke", ld, driverMount)
			}
			priv := c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if priv != gke {
				t.Errorf("privileged %v: only GKE's own device plugin needs it (no GPU requested)", priv)
			}
		})
	}
	// The user's node selection replaces the preset.
	ds := only[*appsv1.DaemonSet](t, render(t, "--set", "platform=gke", "--set", "collector.nodeSelector.pool=gpu"))
	if pod := ds.Spec.Template.Spec; !reflect.DeepEqual(pod.NodeSelector, map[string]string{"pool": "gpu"}) || pod.Affinity != nil {
		t.Errorf("with collector.nodeSelector set: nodeSelector %v affinity %+v", pod.NodeSelector, pod.Affinity)
	}
}
