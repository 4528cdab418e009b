package chtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// EnvZooKeeperClasspath overrides where the ZooKeeper server's jars are
// found (default: Debian's zookeeper package, /usr/share/java).
const EnvZooKeeperClasspath = "GPULEDGER_TEST_ZOOKEEPER_CLASSPATH"

// ErrNoZooKeeper says no Java or no ZooKeeper jars were found.
var ErrNoZooKeeper = errors.New("no java or ZooKeeper server jars (Debian package zookeeper)")

// zooKeeper is a standalone ZooKeeper server: what Replicated tables and
// ON CLUSTER DDL of ClickHouse 18.16 need (it has no built-in keeper).
type zooKeeper struct {
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

func zooKeeperClasspath() (string, error) {
	if cp := os.Getenv(EnvZooKeeperClasspath); cp != "" {
		return cp, nil
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return "", ErrNoZooKeeper
	}
	// SLF4J's simple binding first, so ZooKeeper's own log (sessions
	// opened, expired, closed) reaches zookeeper.log instead of the no-op
	// binding the wildcard would pick.
	return "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/*", nil
}

// startZooKeeper runs a ZooKeeper server with its data under dir on a free
// loopback port and waits until it answers "ruok".
func startZooKeeper(ctx context.Context, dir string) (*zooKeeper, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, ErrNoZooKeeper
	}
	cp, err := zooKeeperClasspath()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create ZooKeeper data dir: %w", err)
	}
	// tickTime 2000 (ZooKeeper's default) lets sessions last up to 40 s
	// (20 ticks), so ClickHouse's 30 s session survives a loaded machine's
	// stalls; with 500 it was cut to 10 s.
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n", data, ports[0])
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("cannot write ZooKeeper config: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		return nil, fmt.Errorf("cannot create ZooKeeper log: %w", err)
	}
	cmd := exec.Command(java, "-Xmx128m", "-cp", cp, "-Dzookeeper.log.dir="+dir,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("cannot start ZooKeeper: %w", err)
	}
	zk := &zooKeeper{dir: dir, port: ports[0], cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		out.Close()
		close(zk.exited)
	}()
	deadline := time.Now().Add(readyTimeout)
	for !zk.serving() {
		select {
		case <-zk.exited:
			return nil, fmt.Errorf("ZooKeeper exited at start: %s", fileTail(filepath.Join(dir, "zookeeper.log"), 3000))
		case <-ctx.Done():
			zk.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			zk.stop()
			return nil, fmt.Errorf("ZooKeeper not ready after %s (see %s)", readyTimeout, filepath.Join(dir, "zookeeper.log"))
		}
	}
	return zk, nil
}

// serving asks the four-letter "srvr" and wants a server in standalone
// mode. "ruok" is not enough: it answers "imok" as soon as the process
// runs, before the server accepts sessions, and a ClickHouse 18.16 whose
// first session handshake is dropped in that window crashes later (a NULL
// ZooKeeper dereferenced in zkutil::ZooKeeper::createImpl, at its first
// ON CLUSTER statement).
func (z *zooKeeper) serving() bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", z.port), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return false
	}
	b, _ := io.ReadAll(io.LimitReader(bufio.NewReader(c), 4096))
	return strings.Contains(string(b), "Mode: standalone")
}

func (z *zooKeeper) stop() {
	_ = z.cmd.Process.Signal(syscall.SIGKILL)
	<-z.exited
}
