package kubequota

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuledger/gpuledger/internal/kubetest"
)

// Scale of the memory benchmark: namespaces, each with a ResourceQuota
// and a LocalQueue, and ClusterQueues over two flavors.
const (
	scaleNamespaces    = 1000
	scaleClusterQueues = 200
)

// envScaleChild, set to a kubeconfig path, makes TestScaleChild run the
// watcher alone in this process and print its memory figures.
const envScaleChild = "GPULEDGER_KUBEQUOTA_SCALE_CHILD"

// BenchmarkWatcherMemory measures the watcher holding 1,000 namespaces
// with a ResourceQuota and a LocalQueue each and 200 ClusterQueues: the
// objects are created on a real API server, then a fresh process (this
// test binary, TestScaleChild) runs only the watcher until it has synced
// and reports its heap after a GC and its peak RSS.
//
//	go test -run '^$' -bench WatcherMemory -benchtime 1x ./quota/kubequota
func BenchmarkWatcherMemory(b *testing.B) {
	c := kubetest.StartT(b, kubetest.Options{})
	ctx := context.Background()
	for _, f := range allCRDs[:3] {
		if _, err := c.Kubectl(ctx, nil, "create", "-f", "testdata/crds/"+f); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/clusterqueues.kueue.x-k8s.io",
		"crd/localqueues.kueue.x-k8s.io", "crd/resourceflavors.kueue.x-k8s.io"); err != nil {
		b.Fatal(err)
	}
	var y strings.Builder
	doc := func(format string, args ...any) { fmt.Fprintf(&y, "---\n"+format+"\n", args...) }
	doc("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: h100}\nspec: {nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}")
	doc("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: a100}\nspec: {nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}")
	for i := range scaleClusterQueues {
		doc(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-%d}
spec:
  cohortName: pool
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 256}
      - {name: memory, nominalQuota: 2Ti}
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8}
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 128}
      - {name: memory, nominalQuota: 1Ti}
      - {name: nvidia.com/gpu, nominalQuota: 4}`, i)
	}
	for i := range scaleNamespaces {
		doc("apiVersion: v1\nkind: Namespace\nmetadata: {name: ns-%d, labels: {team: team-%d, kubernetes.io/metadata.name: ns-%d}}", i, i%50, i)
		doc(`apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: ns-%d}
spec:
  hard: {requests.cpu: "64", requests.memory: 512Gi, pods: "200", requests.nvidia.com/gpu: "%d", requests.nvidia.com/mig-1g.10gb: "7"}`, i, 1+i%16)
		doc("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: lq, namespace: ns-%d}\nspec: {clusterQueue: cq-%d}", i, i%scaleClusterQueues)
	}
	start := time.Now()
	if out, err := c.Kubectl(ctx, strings.NewReader(y.String()), "create", "-f", "-"); err != nil {
		b.Fatalf("%v\n%.2000s", err, out)
	}
	b.Logf("created %d namespaces, ResourceQuotas and LocalQueues and %d ClusterQueues in %v",
		scaleNamespaces, scaleClusterQueues, time.Since(start).Round(time.Second))

	b.ResetTimer()
	for range b.N {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScaleChild$", "-test.v")
		cmd.Env = append(os.Environ(), envScaleChild+"="+c.AdminKubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		found := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			rest, ok := strings.CutPrefix(line, "kubequota-scale:")
			if !ok {
				continue
			}
			found = true
			b.Log(line)
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				if f, err := strconv.ParseFloat(v, 64); err == nil && strings.HasSuffix(k, "_MiB") {
					b.ReportMetric(f, k)
				}
			}
		}
		if !found {
			b.Fatalf("child printed no figures:\n%s", out)
		}
	}
}

// TestScaleChild is BenchmarkWatcherMemory's child process; without its
// environment variable it does nothing.
func TestScaleChild(t *testing.T) {
	path := os.Getenv(envScaleChild)
	if path == "" {
		t.Skip("the child of BenchmarkWatcherMemory only")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(cfg, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	sctx, scancel := context.WithTimeout(ctx, 5*time.Minute)
	defer scancel()
	start := time.Now()
	if err := w.WaitForSync(sctx); err != nil {
		t.Fatal(err)
	}
	synced := time.Since(start)
	// Every namespace gives a gpu and a MIG entry; every ClusterQueue an
	// H100 and an A100 entry.
	if n, want := len(w.Snapshot()), 2*scaleNamespaces+2*scaleClusterQueues; n != want {
		t.Fatalf("%d entries, want %d", n, want)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st, _ := os.ReadFile("/proc/self/status")
	kb := func(field string) float64 {
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, field+":"); ok {
				f, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				return f / 1024
			}
		}
		return -1
	}
	fmt.Printf("kubequota-scale: heap_inuse_MiB=%.1f heap_alloc_MiB=%.1f VmHWM_MiB=%.1f VmRSS_MiB=%.1f RssAnon_MiB=%.1f synced_in=%v\n",
		float64(ms.HeapInuse)/(1<<20), float64(ms.HeapAlloc)/(1<<20), kb("VmHWM"), kb("VmRSS"), kb("RssAnon"), synced.Round(time.Millisecond))
}
