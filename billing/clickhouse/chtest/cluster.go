package chtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
  <zookeeper><node><host>127.0.0.1</host><port>%d</port></node></zookeeper>
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
	return c, nil
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
