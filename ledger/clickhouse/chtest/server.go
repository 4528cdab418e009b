// Package chtest starts a real ClickHouse server for tests: the
// clickhouse-server binary from PATH on loopback ports with a temp data dir,
// or the server named by GPULEDGER_TEST_CLICKHOUSE_DSN. StartCluster starts
// a two-shard cluster with its own ZooKeeper. Tests never talk to a
// mock: the ledger's exactness claims are about what a real server does with
// replays, merges and restarts.
package chtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoServer says no ClickHouse binary was found.
var ErrNoServer = errors.New("no clickhouse-server or clickhouse binary in PATH")

// readyTimeout bounds how long a start may take; 18.16 is ready in well
// under a second, current releases in a few.
const readyTimeout = 60 * time.Second

// Server is a ClickHouse server process this package started.
type Server struct {
	dir       string
	bin       []string // binary and leading arguments
	config    string
	tcpPort   int
	httpPort  int
	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	stdoutLog *os.File
}

// findBinary returns the command that runs a server: clickhouse-server, or
// the single clickhouse binary with its "server" argument.
func findBinary() ([]string, error) {
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return []string{p}, nil
	}
	for _, name := range []string{"clickhouse", "/usr/bin/clickhouse", "/usr/sbin/clickhouse-server"} {
		if p, err := exec.LookPath(name); err == nil {
			if strings.HasSuffix(p, "clickhouse-server") {
				return []string{p}, nil
			}
			return []string{p, "server"}, nil
		}
	}
	return nil, ErrNoServer
}

// Start starts a server with its data under dir (created if missing) and
// waits until it answers.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create server dir: %w", err)
	}
	var lastErr error
	// Free ports are picked by binding :0 and closing; another process may
	// take one in between, so a few attempts.
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		s := &Server{dir: dir, bin: bin, tcpPort: ports[0], httpPort: ports[1]}
		if s.config, err = writeConfig(dir, s.tcpPort, s.httpPort, ""); err != nil {
			return nil, err
		}
		if lastErr = s.start(ctx); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot find a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start runs the process and waits for /ping.
func (s *Server) start(ctx context.Context) error {
	out, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open server stdout log: %w", err)
	}
	args := append(append([]string{}, s.bin[1:]...), "--config-file="+s.config)
	cmd := exec.Command(s.bin[0], args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = out, out
	// The server dies with the test binary, even on a crash.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("cannot start %s: %w", s.bin[0], err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		out.Close()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.stdoutLog = cmd, exited, out
	s.mu.Unlock()
	if err := s.waitReady(ctx, exited); err != nil {
		s.Kill()
		return err
	}
	return nil
}

func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	url := fmt.Sprintf("http://127.0.0.1:%d/ping", s.httpPort)
	client := &http.Client{Timeout: time.Second}
	for {
		if resp, err := client.Get(url); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(string(body), "Ok.") {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("clickhouse server exited during start: %s", s.logTail())
		case <-deadline.C:
			return fmt.Errorf("clickhouse server not ready after %s: %s", readyTimeout, s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// logTail returns the end of the server's error log for failure messages.
func (s *Server) logTail() string {
	for _, name := range []string{"server.err.log", "stdout.log"} {
		if t := fileTail(filepath.Join(s.dir, name), 2000); t != "" {
			return name + ": " + t
		}
	}
	return "(no server log)"
}

// Logs returns the ends of the server's logs (errors, the full log, and
// what the process printed), newest last: what a failed test prints to say
// why a server stopped answering.
func (s *Server) Logs() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		max  int
	}{{"server.err.log", 6000}, {"server.log", 8000}, {"stdout.log", 2000}} {
		path := filepath.Join(s.dir, f.name)
		if t := fileTail(path, f.max); t != "" {
			fmt.Fprintf(&b, "--- %s (end) ---\n%s\n", path, t)
		}
	}
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd != nil && exited != nil {
		select {
		case <-exited:
			fmt.Fprintf(&b, "--- the server process has exited: %v ---\n", cmd.ProcessState)
		default:
			fmt.Fprintf(&b, "--- the server process (pid %d) is running ---\n", cmd.Process.Pid)
		}
	}
	return b.String()
}

// fileTail is the last max bytes of path, or "" when it is missing or
// empty.
func fileTail(path string, max int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// httpQuery runs query as the default user over the HTTP interface and
// returns its output without the trailing newline.
func (s *Server) httpQuery(ctx context.Context, query string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.HTTPAddr()+"/", strings.NewReader(query))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return strings.TrimSuffix(string(body), "\n"), nil
}

// Addr is the native protocol address.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.tcpPort) }

// HTTPAddr is the HTTP interface address.
func (s *Server) HTTPAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.httpPort) }

// DSN is a ledger DSN for database db as the password-protected test user.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("clickhouse://%s:%s@%s/%s", User, Password, s.Addr(), db)
}

// CPUTime is the user+system CPU time the running server process has used,
// read from /proc (Linux only); benchmarks report it per row.
func (s *Server) CPUTime() (time.Duration, error) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0, errors.New("server not running")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("cannot read server CPU time: %w", err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15, in clock ticks (100 per second on Linux).
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, errors.New("cannot parse /proc stat of the server")
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		return 0, fmt.Errorf("cannot parse server utime: %w", err)
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		return 0, fmt.Errorf("cannot parse server stime: %w", err)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// Kill sends SIGKILL and waits for the process to be gone: the crash a
// power cut or OOM kill gives.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart starts the server again on the same data dir and ports.
func (s *Server) Restart(ctx context.Context) error {
	s.Kill()
	return s.start(ctx)
}

// Stop asks the server to shut down and kills it if it does not within a
// few seconds.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}
