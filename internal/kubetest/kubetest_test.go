package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requiredVersion returns the version gomod requires of module.
func requiredVersion(t *testing.T, gomod, module string) string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == module && strings.HasPrefix(f[1], "v") {
			return f[1]
		}
	}
	t.Fatalf("%s requires no %s", gomod, module)
	return ""
}

// The harness looks for binaries under the versions the tool modules pin;
// a bump in one place only would make every run skip (or rebuild nothing).
func TestVersionsMatchToolModules(t *testing.T) {
	if got := requiredVersion(t, "../tools/kubeserver/go.mod", "k8s.io/kubernetes"); got != KubeVersion {
		t.Errorf("internal/tools/kubeserver pins k8s.io/kubernetes %s, KubeVersion is %s", got, KubeVersion)
	}
	if got := requiredVersion(t, "../tools/etcdserver/go.mod", "go.etcd.io/etcd/server/v3"); got != EtcdVersion {
		t.Errorf("internal/tools/etcdserver pins go.etcd.io/etcd/server/v3 %s, EtcdVersion is %s", got, EtcdVersion)
	}
	// The staging modules (required as v0.0.0 by k8s.io/kubernetes) must be
	// replaced by the release's own published versions.
	b, err := os.ReadFile("../tools/kubeserver/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	staging := "v0" + strings.TrimPrefix(KubeVersion, "v1")
	replaced := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[1] == "=>" && strings.HasPrefix(f[0], "k8s.io/") {
			replaced++
			if f[2] != f[0] || f[3] != staging {
				t.Errorf("internal/tools/kubeserver: %s, want %s => %s %s", strings.TrimSpace(line), f[0], f[0], staging)
			}
		}
	}
	for _, m := range []string{"k8s.io/api", "k8s.io/apiserver", "k8s.io/kubectl", "k8s.io/component-base"} {
		if !strings.Contains(string(b), m+" => "+m+" "+staging) {
			t.Errorf("internal/tools/kubeserver does not replace %s with %s", m, staging)
		}
	}
	if replaced == 0 {
		t.Error("internal/tools/kubeserver replaces no staging module")
	}
}

// The script and the harness must agree on the cache directory.
func TestScriptDirMatchesToolsDir(t *testing.T) {
	for _, env := range []string{t.TempDir(), ""} { // set, and the default
		t.Setenv(EnvToolsDir, env)
		out, err := exec.Command("sh", "../../scripts/kube-tools.sh", "--dir").Output()
		if err != nil {
			t.Fatalf("kube-tools.sh --dir: %v", err)
		}
		if got := filepath.Clean(strings.TrimSpace(string(out))); got != ToolsDir() {
			t.Errorf("%s=%q: scripts/kube-tools.sh --dir = %s, harness uses %s", EnvToolsDir, env, got, ToolsDir())
		}
	}
}

func TestTokenFile(t *testing.T) {
	got := TokenFile([]Identity{
		{User: "admin", Groups: []string{"system:masters"}, Token: "t1"},
		{User: "system:serviceaccount:gpuledger:gpuledger", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:gpuledger"}, Token: "t2"},
		{User: "nobody", Token: "t3"},
	})
	want := `t1,admin,admin,"system:masters"
t2,system:serviceaccount:gpuledger:gpuledger,system:serviceaccount:gpuledger:gpuledger,"system:serviceaccounts,system:serviceaccounts:gpuledger"
t3,nobody,nobody
`
	if got != want {
		t.Errorf("TokenFile:\n%s\nwant:\n%s", got, want)
	}
}

func TestFindToolsReportsMissing(t *testing.T) {
	t.Setenv(EnvToolsDir, t.TempDir())
	_, err := FindTools()
	if err == nil || !strings.Contains(err.Error(), "etcd, kube-apiserver, kubectl missing") {
		t.Errorf("FindTools in an empty cache: %v", err)
	}
}

// A real start: the server answers as the admin with the version the tools
// were built as, refuses an unknown token, and Stop leaves no process and
// no directory behind.
func TestStartAndStop(t *testing.T) {
	nobody := Identity{User: "gpuledger-test-nobody"}
	c, err := Start(context.Background(), Options{Identities: []Identity{nobody}, Logf: t.Logf})
	Require(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			c.Stop()
		}
	})
	ctx := context.Background()
	out, err := c.Kubectl(ctx, nil, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	type version struct {
		GitVersion string `json:"gitVersion"`
	}
	var v struct {
		Client version `json:"clientVersion"`
		Server version `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	if v.Client.GitVersion != KubeVersion || v.Server.GitVersion != KubeVersion {
		t.Errorf("kubectl %s, kube-apiserver %s; want both %s", v.Client.GitVersion, v.Server.GitVersion, KubeVersion)
	}
	// A known identity without bindings is authenticated but may not list.
	kc := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if err := c.WriteKubeconfig(kc, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlAs(ctx, kc, nil, "get", "pods", "-A"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("%s listing pods: %v, want Forbidden", nobody.User, err)
	}
	// An unknown token is not authenticated (and anonymous access is off).
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, token := range []string{"not-a-token", ""} {
		req, _ := http.NewRequest(http.MethodGet, c.Host+"/api", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /api with token %q: %s, want 401", token, resp.Status)
		}
	}
	if _, err := c.Config(Identity{User: "unknown"}); err == nil {
		t.Error("Config for an identity Start was not given succeeded")
	}

	c.Stop()
	stopped = true
	for _, p := range []*process{c.etcd, c.api} {
		select {
		case <-p.done:
		default:
			t.Errorf("%s still running after Stop", p.name)
		}
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop: %v", c.dir, err)
	}
}
