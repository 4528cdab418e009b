package chtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// ClusterName is the cluster the test cluster's servers define.
const ClusterName = "gpuledger_test"

// Cluster is a real multi-node ClickHouse: two servers, each the single
// replica of one shard of ClusterName, sharing a ZooKeeper for Replicated
// tables and ON CLUSTER DDL. It needs clickhouse-server, java and the
// ZooKeeper jars (Debian: clickhouse-server, zookeeper).
type Cluster struct {
	Nodes []*Server
	zk    *zooKeeper
}

// StartCluster starts ZooKeeper and the two servers under dir.
func StartCluster(ctx context.Context, dir string) (*Cluster, error) {
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	zk, err := startZooKeeper(ctx, filepath.Join(dir, "zookeeper"))
	if err != nil {
		return nil, err
	}
	c := &Cluster{zk: zk}
	// Every member lists every member's port, so all ports come first:
	// tcp, http and interserver for each of the two nodes.
	ports, err := freePorts(6)
	if err != nil {
		c.Stop()
		return nil, err
	}
	var shards strings.Builder
	for n := 0; n < 2; n++ {
		fmt.Fprintf(&shards, "<shard><internal_replication>true</internal_replication><replica><host>127.0.0.1</host><port>%d</port></replica></shard>", ports[3*n])
	}
	for n := 0; n < 2; n++ {
		extra := fmt.Sprintf(`  <interserver_http_port>%d</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <zookeeper><node><host>127.0.0.1</host><port>%d</port></node><session_timeout_ms>30000</session_timeout_ms></zookeeper>
  <remote_servers><%s>%s</%s></remote_servers>
  <macros><shard>%02d</shard><replica>r%d</replica></macros>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
`, ports[3*n+2], zk.port, ClusterName, shards.String(), ClusterName, n+1, n+1)
		nodeDir := filepath.Join(dir, fmt.Sprintf("node%d", n+1))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			c.Stop()
			return nil, fmt.Errorf("cannot create node dir: %w", err)
		}
		s := &Server{dir: nodeDir, bin: bin, tcpPort: ports[3*n], httpPort: ports[3*n+1]}
		if s.config, err = writeConfig(nodeDir, s.tcpPort, s.httpPort, extra); err != nil {
			c.Stop()
			return nil, err
		}
		if err := s.start(ctx); err != nil {
			c.Stop()
			return nil, fmt.Errorf("cannot start cluster node %d: %w", n+1, err)
		}
		c.Nodes = append(c.Nodes, s)
	}
	if err := c.waitReady(ctx); err != nil {
		err = fmt.Errorf("%w\n%s", err, c.Logs())
		c.Stop()
		return nil, err
	}
	return c, nil
}

// StartClusterT starts a cluster for t under t's temp dir and stops it at
// t's end. When t has failed by then, it logs the end of every server's
// and ZooKeeper's logs first, so a server that went away says why. A
// cluster without its binaries skips t (fails it when
// GPULEDGER_REQUIRE_INTEGRATION=1); one that does not come up fails it.
func StartClusterT(t testing.TB) *Cluster {
	t.Helper()
	c, err := StartCluster(context.Background(), t.TempDir())
	switch {
	case errors.Is(err, ErrNoServer) || errors.Is(err, ErrNoZooKeeper):
		testenv.RequireIntegration(t, "cannot start a ClickHouse cluster: "+err.Error(), "install clickhouse-server and zookeeper")
	case err != nil:
		// The binaries are there: a cluster that does not come up is a
		// failure to look at, with its logs in err.
		t.Fatalf("cannot start a ClickHouse cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.Logs())
		}
		c.Stop()
	})
	return c
}

// Logs returns the end of each server's logs and of ZooKeeper's.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for i, s := range c.Nodes {
		fmt.Fprintf(&b, "=== node %d (%s) ===\n%s", i+1, s.Addr(), s.Logs())
	}
	if c.zk != nil {
		path := filepath.Join(c.zk.dir, "zookeeper.log")
		fmt.Fprintf(&b, "=== ZooKeeper (127.0.0.1:%d) ===\n--- %s (end) ---\n%s\n", c.zk.port, path, fileTail(path, 4000))
	}
	return b.String()
}

// readyQueries are what "ready" means for a cluster: each server has a
// ZooKeeper session, sees both shards of ClusterName, and a trivial ON
// CLUSTER DDL completes on every host. A /ping answers before any of that
// (the DDL worker and the ZooKeeper session come up afterwards), and a
// test's first ON CLUSTER statement must not be the one that finds out.
var readyQueries = []struct{ query, want string }{
	{"SELECT count() > 0 FROM system.zookeeper WHERE path = '/'", "1"},
	{"SELECT count() FROM system.clusters WHERE cluster = '" + ClusterName + "'", "2"},
}

// waitReady waits, within readyTimeout, until every node answers
// readyQueries and then until an ON CLUSTER statement completes.
func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	check := func() error {
		for i, s := range c.Nodes {
			for _, q := range readyQueries {
				got, err := s.httpQuery(ctx, q.query)
				if err != nil {
					return fmt.Errorf("node %d: %s: %w", i+1, q.query, err)
				}
				if got != q.want {
					return fmt.Errorf("node %d: %s: %q, want %q", i+1, q.query, got, q.want)
				}
			}
		}
		_, err := c.Nodes[0].httpQuery(ctx, "CREATE DATABASE IF NOT EXISTS chtest_ready ON CLUSTER "+ClusterName)
		return err
	}
	for {
		if last = check(); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClickHouse cluster not ready after %s: %w", readyTimeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops the servers and ZooKeeper.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
	if c.zk != nil {
		c.zk.stop()
	}
}
