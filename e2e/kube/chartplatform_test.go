package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuledger/gpuledger/internal/kubetest"
)

// secretJobAccount is the ServiceAccount of the bundled ClickHouse's
// password Job in the default manifests.
const secretJobAccount = "gpuledger-clickhouse-secret"

// waitCanI waits (at most 10 s) until the authorizer has caught up with a
// binding applied just before: until id may verb resource in ns.
func waitCanI(ctx context.Context, c *kubetest.Cluster, id kubetest.Identity, verb, resource, ns string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := c.Kubectl(ctx, nil, "auth", "can-i", verb, resource, "-n", ns, "--as", id.User)
		if strings.TrimSpace(out) == "yes" || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// renderChart renders the chart with extra helm arguments into objects.
func renderChart(t *testing.T, args ...string) []object {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBin(t), append([]string{"template", "gpuledger", chartDir, "--namespace", "gpuledger"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	objs, err := decodeObjects(fmt.Sprintf("helm template %v", args), stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// podFor is the Pod a workload object's controller would create, in
// namespace ns: the template's metadata and spec; a StatefulSet's claim
// templates become claims of the first replica.
func podFor(t *testing.T, o object, ns string) *unstructured.Unstructured {
	t.Helper()
	path := []string{"spec", "template"}
	if o.GetKind() == "CronJob" {
		path = []string{"spec", "jobTemplate", "spec", "template"}
	}
	tmpl, ok, err := unstructured.NestedMap(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s: no pod template (%v)", o, err)
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	pod.Object["metadata"] = tmpl["metadata"]
	pod.Object["spec"] = tmpl["spec"]
	pod.SetName(strings.ToLower(o.GetKind()) + "-" + o.GetName())
	pod.SetNamespace(ns)
	if o.GetKind() == "StatefulSet" {
		claims, _, _ := unstructured.NestedSlice(o.Object, "spec", "volumeClaimTemplates")
		vols, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
		for _, cl := range claims {
			name, _, _ := unstructured.NestedString(cl.(map[string]any), "metadata", "name")
			vols = append(vols, map[string]any{"name": name,
				"persistentVolumeClaim": map[string]any{"claimName": name + "-" + o.GetName() + "-0"}})
		}
		if err := unstructured.SetNestedSlice(pod.Object, vols, "spec", "volumes"); err != nil {
			t.Fatal(err)
		}
	}
	return pod
}

var workloadKinds = []string{"DaemonSet", "Deployment", "StatefulSet", "Job", "CronJob"}

// podSecurityNamespace creates a namespace enforcing level, with the
// ServiceAccounts the pods name (no controller makes "default" here).
func podSecurityNamespace(ctx context.Context, t *testing.T, c *kubetest.Cluster, level string, pods []*unstructured.Unstructured) string {
	t.Helper()
	ns := "psa-" + level
	if _, err := c.Kubectl(ctx, nil, "get", "namespace", ns); err != nil {
		if _, err := c.Kubectl(ctx, nil, "create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Kubectl(ctx, nil, "label", "--overwrite", "namespace", ns, "pod-security.kubernetes.io/enforce="+level); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		sa, _, _ := unstructured.NestedString(p.Object, "spec", "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		if _, err := c.Kubectl(ctx, nil, "get", "serviceaccount", "-n", ns, sa); err != nil {
			if _, err := c.Kubectl(ctx, nil, "create", "serviceaccount", "-n", ns, sa); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ns
}

// TestPodSecurityLevels has the real API server's PodSecurity admission
// judge every pod the chart makes (default values and every optional
// feature): all pods but the collector's meet "restricted"; the
// collector's (hostPID, hostPath) is refused by "baseline" and accepted
// by "privileged", which is why its namespace must be labelled so.
func TestPodSecurityLevels(t *testing.T) {
	c, _, _ := cluster(t)
	ctx := context.Background()
	var workloads []object
	seen := map[string]bool{}
	for _, objs := range [][]object{renderChart(t), renderChart(t, "-f", allFeatures)} {
		for _, o := range objs {
			if slices.Contains(workloadKinds, o.GetKind()) && !seen[o.GetKind()+"/"+o.GetName()] {
				seen[o.GetKind()+"/"+o.GetName()] = true
				workloads = append(workloads, o)
			}
		}
	}
	for _, want := range []string{"DaemonSet/gpuledger", "StatefulSet/gpuledger-clickhouse", "Deployment/gpuledger-serve",
		"Job/gpuledger-clickhouse-secret", "Job/gpuledger-migrate", "Job/gpuledger-prices", "CronJob/gpuledger-report", "Deployment/gpuledger-advisor"} {
		if !seen[want] {
			t.Errorf("the renderings have no %s", want)
		}
	}
	podsIn := func(ns string) []*unstructured.Unstructured {
		var ps []*unstructured.Unstructured
		for _, o := range workloads {
			ps = append(ps, podFor(t, o, ns))
		}
		return ps
	}
	dryRun := func(obj *unstructured.Unstructured, extra ...string) error {
		b, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Kubectl(ctx, bytes.NewReader(b), append([]string{"create", "--dry-run=server", "-f", "-"}, extra...)...)
		return err
	}
	for _, level := range []string{"restricted", "baseline", "privileged"} {
		ns := podSecurityNamespace(ctx, t, c, level, podsIn("psa-"+level))
		for i, o := range workloads {
			pod := podsIn(ns)[i]
			err := dryRun(pod)
			collector := o.GetKind() == "DaemonSet"
			switch {
			case collector && level != "privileged":
				if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") || !strings.Contains(err.Error(), "hostPID") {
					t.Errorf("%s: the collector's pod in a %q namespace: %v, want refused for hostPID", o, level, err)
				}
			case err != nil:
				t.Errorf("%s: its pod refused in a %q namespace: %v", o, level, err)
			default:
				t.Logf("%s: pod accepted by PodSecurity %q", o, level)
			}
		}
	}
	// The workload objects themselves (not only their pods) raise no
	// PodSecurity warning in a restricted namespace, except the collector.
	for _, o := range workloads {
		if o.GetKind() == "DaemonSet" {
			continue
		}
		cp := &unstructured.Unstructured{Object: o.DeepCopy().Object}
		cp.SetNamespace("psa-restricted")
		b, _ := json.Marshal(cp.Object)
		if _, err := c.Kubectl(ctx, bytes.NewReader(b), "--warnings-as-errors", "apply", "--server-side", "--dry-run=server", "-f", "-"); err != nil {
			t.Errorf("%s in a restricted namespace: %v", o, err)
		}
	}
	// The plain manifests label their namespace for the collector.
	_, objs, _ := cluster(t)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if l := o.GetLabels()["pod-security.kubernetes.io/enforce"]; l != "privileged" {
				t.Errorf("%s: pod-security.kubernetes.io/enforce=%q, want privileged (the collector needs hostPID and hostPath)", o, l)
			}
		}
	}
}

// TestChartPlatformPresetsOnRealAPIServer: the rendering for each
// platform is accepted by the real API server (server-side dry run of
// every object it serves), and the DaemonSet the server returns selects
// the platform's GPU nodes.
func TestChartPlatformPresetsOnRealAPIServer(t *testing.T) {
	c, _, _ := cluster(t)
	install(t)
	ctx := context.Background()
	served, err := servedAPIs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ platform, want string }{
		{"generic", `"nodeSelector":{"nvidia.com/gpu.present":"true"}`},
		{"gke", `"key":"cloud.google.com/gke-accelerator","operator":"Exists"`},
		{"eks", `"key":"karpenter.k8s.aws/instance-gpu-manufacturer","operator":"In","values":["nvidia"]`},
		{"aks", `"nodeSelector":{"kubernetes.azure.com/accelerator":"nvidia"}`},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			var check []object
			for _, o := range renderChart(t, "--set", "platform="+tc.platform) {
				if served[o.GetAPIVersion()] {
					check = append(check, o)
				}
			}
			if err := apply(ctx, t, c, check, true); err != nil {
				t.Fatal(err)
			}
			for _, o := range check {
				if o.GetKind() != "DaemonSet" {
					continue
				}
				b, _ := json.Marshal(o.Object)
				out, err := c.Kubectl(ctx, bytes.NewReader(b), "apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-")
				if err != nil {
					t.Fatal(err)
				}
				var ds struct {
					Spec struct {
						Template struct {
							Spec json.RawMessage `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				}
				if err := json.Unmarshal([]byte(out), &ds); err != nil {
					t.Fatal(err)
				}
				compact := regexp.MustCompile(`\s+`).ReplaceAllString(string(ds.Spec.Template.Spec), "")
				if !strings.Contains(compact, tc.want) {
					t.Errorf("the server's DaemonSet for %s lacks %s:\n%s", tc.platform, tc.want, compact)
				}
				if gke := strings.Contains(compact, `"path":"/home/kubernetes/bin/nvidia"`); gke != (tc.platform == "gke") {
					t.Errorf("GKE's driver directory mounted: %v on %s", gke, tc.platform)
				}
			}
		})
	}
}

// TestClickHouseSecretJob runs the bundled ClickHouse's password Job's
// script (from the plain manifests, with bash and GNU wget as in the
// server image) against the real API server with the Job's own
// ServiceAccount token and RBAC: it creates the Secret with a fresh
// 32-character password, the DSN of the bundled Service and the
// password's SHA-256 for the server; a second run keeps that password.
func TestClickHouseSecretJob(t *testing.T) {
	c, objs, _ := cluster(t)
	install(t)
	ctx := context.Background()
	for _, tool := range []string{"bash", "wget", "sha256sum", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here: %v", tool, err)
		}
	}
	var job object
	for _, o := range objs {
		if o.GetKind() == "Job" && o.GetName() == secretJobAccount {
			job = o
		}
	}
	if job.Unstructured == nil {
		t.Fatalf("no Job %s in the manifests", secretJobAccount)
	}
	containers, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	ctr := containers[0].(map[string]any)
	command, _, _ := unstructured.NestedStringSlice(ctr, "command")
	args, _, _ := unstructured.NestedStringSlice(ctr, "args")
	if !slices.Equal(command, []string{"/bin/bash", "-c"}) || len(args) != 1 {
		t.Fatalf("secret Job command %q args %d", command, len(args))
	}
	envs, _, _ := unstructured.NestedSlice(ctr, "env")
	ns := job.GetNamespace()
	id, ok := c.Identity("system:serviceaccount:" + ns + ":" + secretJobAccount)
	if !ok {
		t.Fatalf("no token for %s", secretJobAccount)
	}
	waitCanI(ctx, c, id, "create", "secrets", ns)

	dir := t.TempDir()
	sa := filepath.Join(dir, "sa")
	work := filepath.Join(dir, "work")
	for _, d := range []string{sa, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string][]byte{"token": []byte(id.Token), "ca.crt": c.CAData, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(sa, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(c.Host)
	if err != nil {
		t.Fatal(err)
	}
	run := func() string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "bash", "-c", args[0])
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SA_DIR=" + sa,
			"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()}
		for _, e := range envs {
			m := e.(map[string]any)
			v, _ := m["value"].(string)
			if m["name"] == "WORK" {
				v = work
			}
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s", m["name"], v))
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the secret Job's script: %v\n%s", err, out)
		}
		if left, _ := os.ReadDir(work); len(left) != 0 {
			t.Errorf("the script left files in its work directory: %v", left)
		}
		return string(out)
	}
	secret := func() map[string]string {
		t.Helper()
		out, err := c.Kubectl(ctx, nil, "get", "secret", "-n", ns, "gpuledger-clickhouse", "-o", "jsonpath={.data}")
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]string
		if err := json.Unmarshal([]byte(out), &data); err != nil {
			t.Fatal(err)
		}
		plain := map[string]string{}
		for k, v := range data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatal(err)
			}
			plain[k] = string(b)
		}
		return plain
	}

	_, _ = c.Kubectl(ctx, nil, "delete", "secret", "-n", ns, "gpuledger-clickhouse", "--ignore-not-found")
	if out := run(); !strings.Contains(out, "created Secret gpuledger-clickhouse") {
		t.Errorf("first run: %s", out)
	}
	first := secret()
	pw := first["password"]
	if !regexp.MustCompile(`^[A-Za-z0-9]{32}$`).MatchString(pw) {
		t.Errorf("password %d characters, want 32 of [A-Za-z0-9]", len(pw))
	}
	sum := sha256.Sum256([]byte(pw))
	if first["password-sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("password-sha256 %q is not the password's SHA-256", first["password-sha256"])
	}
	if want := "clickhouse://gpuledger@gpuledger-clickhouse.gpuledger.svc:9000/gpuledger"; first["dsn"] != want {
		t.Errorf("dsn %q, want %q", first["dsn"], want)
	}
	if len(first) != 3 {
		t.Errorf("Secret keys %v, want dsn, password, password-sha256", first)
	}
	if out := run(); !strings.Contains(out, "exists: keeping its password") {
		t.Errorf("second run: %s", out)
	}
	if again := secret(); again["password"] != pw || again["password-sha256"] != first["password-sha256"] {
		t.Error("a second run changed the password")
	}
	// The Job's account cannot read the Secret it made.
	if canI(ctx, t, c, id, "get", "secrets", "-n", ns) {
		t.Errorf("%s may read Secrets", id.User)
	}
}

// TestHelmInstallNotes: `helm install --dry-run=server` against the real
// API server renders the release and its notes, which say how to reach
// the bill and how to label the namespace for the collector.
func TestHelmInstallNotes(t *testing.T) {
	c, _, _ := cluster(t)
	install(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin(t), "install", "notes-check", chartDir, "--namespace", "gpuledger",
		"--dry-run=server", "--kubeconfig", c.AdminKubeconfig)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm install --dry-run=server: %v\n%s", err, out)
	}
	notes := string(out)
	if i := strings.Index(notes, "NOTES:"); i >= 0 {
		notes = notes[i:]
	} else {
		t.Fatalf("no NOTES in the dry run:\n%s", out)
	}
	for _, want := range []string{
		"kubectl -n gpuledger port-forward svc/notes-check-gpuledger-serve 8080",
		"http://localhost:8080",
		"pod-security.kubernetes.io/enforce=privileged",
		"the bundled ClickHouse",
		"NetworkPolicies",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
}
