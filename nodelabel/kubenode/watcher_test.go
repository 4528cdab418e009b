package kubenode

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpuledger/gpuledger/internal/kubetest"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/nodelabel"
)

const (
	region    = "topology.kubernetes.io/region"
	waitLimit = time.Minute
)

func kubectl(t *testing.T, c *kubetest.Cluster, stdin string, args ...string) {
	t.Helper()
	if out, err := c.Kubectl(context.Background(), strings.NewReader(stdin), args...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// On a real API server: the watcher sees nodes with and without the
// label, a relabel, a label removed and a node deleted, and a recorder on
// it writes to the embedded ledger exactly the changes the cluster made,
// the deleted node keeping its last value.
func TestWatcherOnRealCluster(t *testing.T) {
	c := kubetest.StartT(t, kubetest.Options{})
	kubectl(t, c, `
apiVersion: v1
kind: Node
metadata: {name: gpu-a, labels: {topology.kubernetes.io/region: eu-north-1, other: x}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-b, labels: {topology.kubernetes.io/region: us-east-1}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-c}
`, "apply", "-f", "-")
	cfg, err := c.Config(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(cfg, region, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after its context ended")
		}
	})
	sctx, scancel := context.WithTimeout(ctx, waitLimit)
	defer scancel()
	if err := w.WaitForSync(sctx); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rec := &nodelabel.Recorder{Store: st, Key: region, Snapshot: w.Snapshot, Now: func() time.Time { return now }}
	// record waits until the watcher shows labels (nodes present), then
	// records at the next hour.
	record := func(labels map[string]string, nodes ...string) {
		t.Helper()
		testenv.Eventually(t, waitLimit, func() error {
			got, present, err := w.Snapshot()
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, labels) {
				return fmt.Errorf("labels %v, want %v", got, labels)
			}
			for _, n := range nodes {
				if !present(n) {
					return fmt.Errorf("node %s not present", n)
				}
			}
			return nil
		})
		now = now.Add(time.Hour)
		if _, err := rec.Record(ctx); err != nil {
			t.Fatal(err)
		}
	}
	record(map[string]string{"gpu-a": "eu-north-1", "gpu-b": "us-east-1"}, "gpu-a", "gpu-b", "gpu-c")
	kubectl(t, c, "", "label", "node", "gpu-b", region+"=ap-south-1", "--overwrite")
	kubectl(t, c, "", "label", "node", "gpu-c", region+"=eu-north-1")
	record(map[string]string{"gpu-a": "eu-north-1", "gpu-b": "ap-south-1", "gpu-c": "eu-north-1"})
	kubectl(t, c, "", "label", "node", "gpu-c", region+"-")
	kubectl(t, c, "", "delete", "node", "gpu-a")
	record(map[string]string{"gpu-b": "ap-south-1"}, "gpu-c")
	if _, present, _ := w.Snapshot(); present("gpu-a") {
		t.Error("a deleted node is present")
	}
	h := func(hour int) time.Time { return time.Date(2026, 11, 1, hour, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		at   time.Time
		want map[string]string
	}{
		{h(1), map[string]string{"gpu-a": "eu-north-1", "gpu-b": "us-east-1"}},
		{h(2), map[string]string{"gpu-a": "eu-north-1", "gpu-b": "ap-south-1", "gpu-c": "eu-north-1"}},
		// gpu-a deleted from the cluster keeps its value; gpu-c lost it.
		{h(3), map[string]string{"gpu-a": "eu-north-1", "gpu-b": "ap-south-1"}},
	} {
		got, err := st.NodeLabels(ctx, region, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ledger at %s: %v, want %v", c.at.Format(time.RFC3339), got, c.want)
		}
	}
	// The informer keeps only the name and the label.
	if objs := w.store.List(); len(objs) == 0 {
		t.Error("no nodes in the informer's store")
	} else {
		for _, o := range objs {
			s := fmt.Sprintf("%+v", o)
			if strings.Contains(s, "other") {
				t.Errorf("the informer keeps more than the label: %s", s)
			}
		}
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	if _, err := New(nil, region, nil); err == nil || !strings.Contains(err.Error(), "no Kubernetes config") {
		t.Errorf("no config: %v", err)
	}
	if _, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, "Region Name", nil); err == nil || !strings.Contains(err.Error(), `node label "Region Name": not a Kubernetes label key`) {
		t.Errorf("bad key: %v", err)
	}
}
