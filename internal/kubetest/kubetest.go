// Package kubetest starts a real Kubernetes control plane for tests: etcd and
// kube-apiserver on 127.0.0.1, with static-token identities and RBAC, in a
// temporary directory that goes away with the test.
//
// The binaries come from the cache scripts/kube-tools.sh fills (make
// kube-tools); see docs/testing-kubernetes.md. Without them a test skips,
// or fails when GPULEDGER_REQUIRE_INTEGRATION=1.
package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// The versions scripts/kube-tools.sh builds; they are the pins of the tool
// modules internal/tools/kubeserver and internal/tools/etcdserver (a test
// checks that they agree).
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "v3.6.6"
)

// Environment variables the harness reads.
const (
	// EnvToolsDir overrides the cache root (default: gpuledger-tools beside
	// `go env GOCACHE`), as it does for scripts/kube-tools.sh.
	EnvToolsDir = "GPULEDGER_TOOLS_DIR"
	// EnvRequire=1 turns missing binaries or a control plane that does not
	// start into a test failure instead of a skip.
	EnvRequire = testenv.EnvRequire
)

// ErrNoBinaries says the tools are not built.
var ErrNoBinaries = errors.New("kubernetes test binaries not found")

// startTimeout bounds etcd's and the API server's start (about 4 s on a
// shared 2-core machine; the bound only stops a hung start).
const startTimeout = 3 * time.Minute

// Identity is a user the API server authenticates by a static bearer token.
type Identity struct {
	User   string
	Groups []string
	Token  string
}

// ServiceAccount is the identity a pod running as the ServiceAccount ns/name
// has: its user name and the groups the API server gives service accounts.
// The token is a static one the harness maps to it (the harness runs no
// token controller).
func ServiceAccount(namespace, name string) Identity {
	return Identity{
		User:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}
}

// Options configure Start.
type Options struct {
	// Identities get static tokens (an empty Token is generated). The
	// admin (group system:masters) is always added.
	Identities []Identity
	// Logf, when set, receives progress lines (t.Logf).
	Logf func(format string, args ...any)
}

// Tools are the three binaries.
type Tools struct {
	Etcd, APIServer, Kubectl string
}

// ToolsDir is where scripts/kube-tools.sh puts the binaries: under
// $GPULEDGER_TOOLS_DIR, by default gpuledger-tools beside Go's build cache
// (as scripts/tools.sh keeps helm).
func ToolsDir() string {
	root := os.Getenv(EnvToolsDir)
	if root == "" {
		root = filepath.Join(filepath.Dir(goCache()), "gpuledger-tools")
	}
	return filepath.Join(root, "kube-"+KubeVersion+"-etcd-"+EtcdVersion)
}

// goCache is `go env GOCACHE`, or Go's default when go cannot say.
func goCache() string {
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" && dir != "off" {
			return dir
		}
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "go-build")
	}
	return filepath.Join(os.TempDir(), "go-build")
}

// FindTools returns the cached binaries. All three must be there: a test
// run against whatever etcd or kubectl happens to be installed would test
// versions nobody chose.
func FindTools() (Tools, error) {
	dir := ToolsDir()
	t := Tools{
		Etcd:      filepath.Join(dir, "etcd"),
		APIServer: filepath.Join(dir, "kube-apiserver"),
		Kubectl:   filepath.Join(dir, "kubectl"),
	}
	var missing []string
	for _, p := range []string{t.Etcd, t.APIServer, t.Kubectl} {
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, filepath.Base(p))
		}
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("%w: %s missing in %s (run scripts/kube-tools.sh or make kube-tools)", ErrNoBinaries, strings.Join(missing, ", "), dir)
	}
	return t, nil
}

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	Tools Tools
	// Host is the API server's URL, https://127.0.0.1:<port>.
	Host string
	// CAData verifies the API server's self-signed serving certificate.
	CAData []byte
	// Admin is a member of system:masters.
	Admin Identity
	// AdminKubeconfig is a kubeconfig file for Admin.
	AdminKubeconfig string

	dir        string
	identities map[string]Identity // user -> identity
	etcd, api  *process
}

// Start starts etcd and kube-apiserver in a new temporary directory and
// waits until the API server is ready. Stop ends both and removes it.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	tools, err := FindTools()
	if err != nil {
		return nil, err
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "gpuledger-kube-")
	if err != nil {
		return nil, fmt.Errorf("cannot create the cluster directory: %w", err)
	}
	c := &Cluster{Tools: tools, dir: dir, identities: map[string]Identity{}}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()

	c.Admin = Identity{User: "gpuledger-test-admin", Groups: []string{"system:masters"}, Token: randomToken()}
	ids := append([]Identity{c.Admin}, opts.Identities...)
	for i := range ids {
		if ids[i].Token == "" {
			ids[i].Token = randomToken()
		}
		if _, dup := c.identities[ids[i].User]; dup {
			return nil, fmt.Errorf("identity %s given twice", ids[i].User)
		}
		c.identities[ids[i].User] = ids[i]
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(TokenFile(ids)), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the token file: %w", err)
	}
	if err := writeServiceAccountKey(filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}

	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.etcd, err = startProcess(dir, "etcd", tools.Etcd,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--log-level=warn",
		"--unsafe-no-fsync", // a test's data is thrown away
	)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(startCtx, c.etcd, &http.Client{Timeout: 5 * time.Second}, etcdURL+"/health", "", `"health":"true"`); err != nil {
		return nil, fmt.Errorf("etcd did not become healthy: %w", err)
	}
	logf("kubetest: etcd %s serving on %s", EtcdVersion, etcdURL)

	c.Host = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	certDir := filepath.Join(dir, "certs")
	c.api, err = startProcess(dir, "kube-apiserver", tools.APIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+certDir, // a self-signed serving certificate for 127.0.0.1 and localhost
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--anonymous-auth=false",
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true", // as kubeadm and managed clusters set it
		// Without controllers the kubernetes Service's endpoints would be
		// reconciled to an address nothing listens on.
		"--endpoint-reconciler-type=none",
		"--v=0",
	)
	if err != nil {
		return nil, err
	}
	// The self-signed serving certificate (with its CA) is what a client
	// trusts. The API server writes the certificate, then the key.
	if err := waitFile(startCtx, c.api, filepath.Join(certDir, "apiserver.key")); err != nil {
		return nil, fmt.Errorf("kube-apiserver wrote no serving certificate: %w", err)
	}
	if c.CAData, err = os.ReadFile(filepath.Join(certDir, "apiserver.crt")); err != nil {
		return nil, fmt.Errorf("cannot read the serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAData) {
		return nil, errors.New("the API server's serving certificate is not PEM")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	// /readyz turns ready after the post-start hooks, the RBAC bootstrap
	// roles among them.
	if err := waitHTTP(startCtx, c.api, hc, c.Host+"/readyz", c.Admin.Token, "ok"); err != nil {
		return nil, fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	logf("kubetest: kube-apiserver %s ready on %s", KubeVersion, c.Host)

	c.AdminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := c.WriteKubeconfig(c.AdminKubeconfig, c.Admin); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// Stop ends the API server, then etcd, and removes the cluster's directory.
func (c *Cluster) Stop() {
	if c.api != nil {
		c.api.stop()
	}
	if c.etcd != nil {
		c.etcd.stop()
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// StartT starts a cluster for t and stops it at t's cleanup. Missing
// binaries skip t (fail it when GPULEDGER_REQUIRE_INTEGRATION=1); a
// cluster that does not start fails it.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	c, err := Start(context.Background(), opts)
	Require(t, err)
	t.Cleanup(c.Stop)
	return c
}

// Require skips t when err says the binaries are missing (unless
// GPULEDGER_REQUIRE_INTEGRATION=1) and fails it on any other error.
func Require(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNoBinaries):
		testenv.RequireIntegration(t, "no kube-apiserver and etcd to run: "+err.Error(), "scripts/kube-tools.sh builds them")
	default:
		t.Fatalf("cannot start the test control plane: %v", err)
	}
}

// Identity returns the identity Start gave user (with its token).
func (c *Cluster) Identity(user string) (Identity, bool) {
	id, ok := c.identities[user]
	return id, ok
}

// Config returns a client config authenticating as id. id needs only its
// User: the token is the one Start gave it.
func (c *Cluster) Config(id Identity) (*rest.Config, error) {
	known, ok := c.identities[id.User]
	if !ok {
		return nil, fmt.Errorf("no token for %s: pass the identity to Start", id.User)
	}
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     known.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
	}, nil
}

// WriteKubeconfig writes a kubeconfig for id to path.
func (c *Cluster) WriteKubeconfig(path string, id Identity) error {
	known, ok := c.identities[id.User]
	if !ok {
		return fmt.Errorf("no token for %s: pass the identity to Start", id.User)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: known.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "user"}
	cfg.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("cannot write kubeconfig %s: %w", path, err)
	}
	return nil
}

// Kubectl runs kubectl as the admin with args and returns its stdout; the
// error carries stderr.
func (c *Cluster) Kubectl(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	return c.KubectlAs(ctx, c.AdminKubeconfig, stdin, args...)
}

// KubectlAs runs kubectl with the kubeconfig file at kubeconfig.
func (c *Cluster) KubectlAs(ctx context.Context, kubeconfig string, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Tools.Kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdin = stdin
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No cache or config outside the test's directory.
	cmd.Env = append(os.Environ(), "HOME="+c.dir, "KUBECACHEDIR="+filepath.Join(c.dir, "kubectl-cache"))
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// TokenFile renders identities in kube-apiserver's --token-auth-file
// format: token,user,uid,"group1,group2" (the user name doubles as UID).
func TokenFile(ids []Identity) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s,%s,%s", id.Token, id.User, id.User)
		if len(id.Groups) > 0 {
			fmt.Fprintf(&b, `,"%s"`, strings.Join(id.Groups, ","))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// writeServiceAccountKey writes an ECDSA key pair for signing and verifying
// service account tokens.
func writeServiceAccountKey(keyPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("cannot generate the service account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("cannot encode the service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("cannot encode the service account public key: %w", err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("cannot write the service account key: %w", err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return fmt.Errorf("cannot write the service account public key: %w", err)
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port: %w", err)
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is a started binary whose output goes to <dir>/<name>.log.
type process struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
	err       error // set before done closes
}

func startProcess(dir, name, bin string, args ...string) (*process, error) {
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, fmt.Errorf("cannot create %s's log: %w", name, err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error with the log's tail once the process has ended.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); its log ends:\n%s", p.name, p.err, p.tail())
	default:
		return nil
	}
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop sends SIGTERM and waits; after 20 s it kills.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTP polls url until it answers 200 with a body containing want, the
// process exits, or ctx ends.
func waitHTTP(ctx context.Context, p *process, hc *http.Client, url, token, want string) error {
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return nil
			}
			err = fmt.Errorf("%s: %s: %.500s", url, resp.Status, body)
		}
		last = err
		if err := waitTick(ctx, p); err != nil {
			return fmt.Errorf("%w (last: %v)", err, last)
		}
	}
}

// waitFile waits until path exists and is not empty.
func waitFile(ctx context.Context, p *process, path string) error {
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			return nil
		}
		if err := waitTick(ctx, p); err != nil {
			return err
		}
	}
}

func waitTick(ctx context.Context, p *process) error {
	if err := p.exited(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w; %s's log ends:\n%s", ctx.Err(), p.name, p.tail())
	case <-p.done:
		return p.exited()
	case <-time.After(200 * time.Millisecond):
		return nil
	}
}
