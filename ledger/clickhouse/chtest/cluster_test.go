package chtest

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A started cluster is ready for ON CLUSTER DDL at once (both servers hold
// a ZooKeeper session and see both shards), and when a server goes away
// its logs say so: the end of its server log and how the process ended.
func TestClusterReadyAndItsLogsSayWhyAServerWentAway(t *testing.T) {
	c, err := StartCluster(context.Background(), t.TempDir())
	if errors.Is(err, ErrNoServer) || errors.Is(err, ErrNoZooKeeper) {
		t.Skipf("no cluster binaries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := context.Background()
	if _, err := c.Nodes[1].httpQuery(ctx, "CREATE TABLE default.ready ON CLUSTER "+ClusterName+
		" (a UInt8) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/ready', '{replica}') ORDER BY a"); err != nil {
		t.Fatalf("the first ON CLUSTER statement after start: %v", err)
	}
	for n, s := range c.Nodes {
		if got, err := s.httpQuery(ctx, "EXISTS TABLE default.ready"); err != nil || got != "1" {
			t.Errorf("node %d: table made ON CLUSTER exists = %q, %v", n+1, got, err)
		}
	}
	c.Nodes[1].Kill()
	logs := c.Logs()
	for _, want := range []string{"=== node 2 (" + c.Nodes[1].Addr() + ")", "Ready for connections", "the server process has exited: signal: killed",
		"=== ZooKeeper", "INFO org.apache.zookeeper"} {
		if !strings.Contains(logs, want) {
			t.Errorf("cluster logs lack %q:\n%s", want, logs)
		}
	}
}
