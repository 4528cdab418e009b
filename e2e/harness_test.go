package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpuledger/gpuledger/alerts"
	"github.com/gpuledger/gpuledger/internal/testenv"
)

// repoRoot is the module root, relative to this package's directory (go
// test runs tests in the package directory).
const repoRoot = ".."

// tool finds an external tool, skipping the test without it (failing when
// GPULEDGER_REQUIRE_INTEGRATION=1).
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		testenv.RequireIntegration(t, fmt.Sprintf("%s not found: %v", name, err), "install Debian's prometheus package")
	}
	return path
}

// buildBinary builds cmd/gpuledger into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("cannot find the go tool to build gpuledger: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gpuledger")
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/gpuledger")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build gpuledger: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a loopback address with a port free right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a child process whose output goes to a log file, killed with
// its process group when the test ends.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs a command until the test ends. Its stdout and stderr go to a
// file that is printed when the test fails.
func start(t *testing.T, name string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A process group of its own, so cleanup reaches anything it forks.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("cannot start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			p.dumpLog(t)
		}
	})
	return p
}

// stop kills the process group and waits for the process.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// exited says whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

func (p *process) dumpLog(t *testing.T) {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	s := string(data)
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	t.Logf("--- %s log:\n%s", p.name, s)
}

// waitHTTP waits until url answers 200 or the process exits.
func waitHTTP(ctx context.Context, p *process, url string) error {
	for {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited before serving %s: %v", p.name, url, err)
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not serve %s: %w", p.name, url, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// testRules writes the rule file with every `for:` shortened: to 1s, and
// to 5s for the alerts in slow, so that one failed scrape or one late cycle
// on a loaded machine makes them pending, not firing.
func testRules(t *testing.T, dir string, slow []string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "alerts", alerts.RulesFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := alerts.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for gi := range f.Groups {
		for ri := range f.Groups[gi].Rules {
			r := &f.Groups[gi].Rules[ri]
			switch {
			case slices.Contains(slow, r.Alert):
				r.For = "5s"
			case r.Alert != "":
				r.For = "1s"
			}
		}
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// prometheusConfig writes a config scraping targets every second as job
// gpuledger, with honor_labels as docs/alerts.md asks, and the rules.
func prometheusConfig(t *testing.T, dir, rules string, targets []string) string {
	t.Helper()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: gpuledger
    honor_labels: true
    static_configs:
      - targets: ['%s']
`, rules, strings.Join(targets, "', '"))
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// poll calls f until it returns nil or ctx ends; the last error explains
// the timeout.
func poll(ctx context.Context, every time.Duration, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(every):
		}
	}
}
