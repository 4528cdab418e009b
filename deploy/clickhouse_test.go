package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// clickhouseServerBinary is Debian's clickhouse-server (18.16 here), or
// the single clickhouse binary of a newer release.
func clickhouseServerBinary(t *testing.T) []string {
	t.Helper()
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return []string{p}
	}
	for _, name := range []string{"clickhouse", "/usr/sbin/clickhouse-server"} {
		if p, err := exec.LookPath(name); err == nil {
			if strings.HasSuffix(p, "clickhouse-server") {
				return []string{p}
			}
			return []string{p, "server"}
		}
	}
	if os.Getenv(requireIntegration) != "" {
		t.Fatalf("no clickhouse-server and %s is set", requireIntegration)
	}
	t.Skip("no clickhouse-server in PATH")
	return nil
}

func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// TestBundledClickHouseConfigLoads starts a real ClickHouse server on the
// configuration the chart ships (the ConfigMap's config.xml and users.xml,
// byte for byte) with the password hash in the environment variable the
// StatefulSet sets from the Secret, as a non-root user on a read-only
// configuration directory. Only the data path and the two ports are moved,
// through a config.d file beside them (the server merges it), so that the
// test needs no /var/lib/clickhouse and no fixed ports. Then the chart's
// user logs in with the password, the settings the chart sets are in
// force, no other user exists, and `gpuledger ledger migrate` creates the
// ledger's schema through the DSN the chart's Secret Job writes.
func TestBundledClickHouseConfigLoads(t *testing.T) {
	bin := clickhouseServerBinary(t)
	objs := render(t)
	cm := configMap(t, objs, "gpuledger-clickhouse")
	if len(cm.Data) != 2 || cm.Data["config.xml"] == "" || cm.Data["users.xml"] == "" {
		t.Fatalf("ConfigMap gpuledger-clickhouse keys %v, want config.xml and users.xml", keysOf(cm.Data))
	}
	// The StatefulSet reads exactly these files (the ConfigMap mounted as
	// the configuration directory) and the hash from the Secret.
	sts := named[*appsv1.StatefulSet](t, objs, "gpuledger-clickhouse")
	c := sts.Spec.Template.Spec.Containers[0]
	if want := []string{"--config-file=/etc/clickhouse-server/config.xml"}; strings.Join(c.Args, " ") != want[0] {
		t.Errorf("server args %q, want %q", c.Args, want)
	}
	hashEnv := env(t, c, "CLICKHOUSE_GPULEDGER_PASSWORD_SHA256")
	if ref := hashEnv.ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "gpuledger-clickhouse" || ref.SecretKeyRef.Key != "password-sha256" {
		t.Errorf("password hash env %+v, want from Secret gpuledger-clickhouse key password-sha256", hashEnv)
	}
	if !strings.Contains(cm.Data["users.xml"], `from_env="CLICKHOUSE_GPULEDGER_PASSWORD_SHA256"`) {
		t.Errorf("users.xml does not take the password hash from the StatefulSet's env:\n%s", cm.Data["users.xml"])
	}

	dir := t.TempDir()
	etc, data := filepath.Join(dir, "etc"), filepath.Join(dir, "data")
	for _, d := range []string{filepath.Join(etc, "config.d"), data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range cm.Data {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	ports := freeLoopbackPorts(t, 2)
	tcpPort, httpPort := ports[0], ports[1]
	override := fmt.Sprintf(`<?xml version="1.0"?>
<clickhouse>
  <tcp_port>%d</tcp_port>
  <http_port>%d</http_port>
  <path>%s/</path>
  <tmp_path>%s/tmp/</tmp_path>
  <user_files_path>%s/user_files/</user_files_path>
  <format_schema_path>%s/format_schemas/</format_schema_path>
</clickhouse>
`, tcpPort, httpPort, data, data, data, data)
	if err := os.WriteFile(filepath.Join(etc, "config.d", "test-paths.xml"), []byte(override), 0o444); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(etc, "config.d"), etc} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}

	const password = "Test0nlyPassw0rdOf32CharactersXy"
	sum := sha256.Sum256([]byte(password))
	cmd := exec.Command(bin[0], append(bin[1:], "--config-file="+filepath.Join(etc, "config.xml"))...)
	cmd.Dir = data
	cmd.Env = append(os.Environ(), "CLICKHOUSE_GPULEDGER_PASSWORD_SHA256="+hex.EncodeToString(sum[:]))
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Getuid() == 0 {
		// Not root, like the pod (uid 101 there): the data directory is
		// the only place it may write.
		const nobody = 65534
		// t.TempDir's directories are private to root.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(data, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	logTail := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		return string(b)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d/", httpPort)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "ping")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(string(body), "Ok.") {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("clickhouse-server exited on the chart's configuration (%v):\n%s", err, logTail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("clickhouse-server not answering /ping after 60 s:\n%s", logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := exec.Command(bin[0], "--version").CombinedOutput(); err == nil {
		t.Logf("server: %s", strings.TrimSpace(string(out)))
	}

	query := func(user, pass, q string) (string, int) {
		t.Helper()
		u := base + "?" + url.Values{"user": {user}, "password": {pass}, "query": {q}}.Encode()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(body)), resp.StatusCode
	}
	if out, code := query("gpuledger", password, "SELECT version()"); code != http.StatusOK {
		t.Fatalf("the chart's user cannot log in with the password: %d %s", code, out)
	} else {
		t.Logf("ClickHouse %s loaded the chart's configuration", out)
	}
	if out, code := query("gpuledger", password[:31], "SELECT 1"); code == http.StatusOK {
		t.Errorf("a wrong password was accepted: %s", out)
	}
	if out, code := query("default", "", "SELECT 1"); code == http.StatusOK {
		t.Errorf("the user default exists (the chart defines only gpuledger): %s", out)
	}
	// The profile's memory bound and the server settings are the chart's.
	wantMem := regexp.MustCompile(`<max_memory_usage>(\d+)</max_memory_usage>`).FindStringSubmatch(cm.Data["users.xml"])
	if wantMem == nil {
		t.Fatal("users.xml sets no max_memory_usage")
	}
	if out, _ := query("gpuledger", password, "SELECT value FROM system.settings WHERE name = 'max_memory_usage'"); out != wantMem[1] {
		t.Errorf("max_memory_usage %q, want the chart's %s", out, wantMem[1])
	}

	// gpuledger ledger migrate, through the DSN the Secret Job writes
	// (host and port moved to this server) and the password file the
	// pods mount.
	job := named[*batchv1.Job](t, objs, "gpuledger-clickhouse-secret")
	dsn := env(t, job.Spec.Template.Spec.Containers[0], "DSN").Value
	if want := "clickhouse://gpuledger@gpuledger-clickhouse.gpuledger.svc:9000/gpuledger"; dsn != want {
		t.Fatalf("bundled DSN %q, want %q", dsn, want)
	}
	dsn = strings.Replace(dsn, "gpuledger-clickhouse.gpuledger.svc:9000", fmt.Sprintf("127.0.0.1:%d", tcpPort), 1)
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(password), 0o400); err != nil {
		t.Fatal(err)
	}
	gl := buildGpuledger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mig := exec.CommandContext(ctx, gl, "ledger", "migrate")
	mig.Env = append(os.Environ(), "GPULEDGER_LEDGER="+dsn, "GPULEDGER_CLICKHOUSE_PASSWORD_FILE="+pwFile)
	if out, err := mig.CombinedOutput(); err != nil {
		t.Fatalf("gpuledger ledger migrate on the bundled configuration: %v\n%s\nserver log:\n%s", err, out, logTail())
	} else {
		t.Logf("ledger migrate: %s", strings.TrimSpace(string(out)))
	}
	out, _ := query("gpuledger", password, "SELECT count() FROM system.tables WHERE database = 'gpuledger'")
	if n := 0; func() bool { _, err := fmt.Sscan(out, &n); return err != nil || n < 2 }() {
		t.Errorf("tables in database gpuledger after migrate: %q", out)
	}
}

// buildGpuledger builds the gpuledger command once per test binary.
func buildGpuledger(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "gpuledger")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/gpuledger")
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gpuledger: %v\n%s", err, b)
	}
	return out
}

func keysOf[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	return k
}
