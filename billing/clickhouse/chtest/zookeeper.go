package chtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	return "/usr/share/java/zookeeper.jar:/usr/share/java/*", nil
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
	cfg := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n", data, ports[0])
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
	zk := &zooKeeper{port: ports[0], cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		out.Close()
		close(zk.exited)
	}()
	deadline := time.Now().Add(readyTimeout)
	for !zk.ok() {
		select {
		case <-zk.exited:
			return nil, fmt.Errorf("ZooKeeper exited at start (see %s)", filepath.Join(dir, "zookeeper.log"))
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

// ok asks the four-letter "ruok" and wants "imok".
func (z *zooKeeper) ok() bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", z.port), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line == "imok"
}

func (z *zooKeeper) stop() {
	_ = z.cmd.Process.Signal(syscall.SIGKILL)
	<-z.exited
}
