package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// TestClusterLabelWinsInPrometheus runs a real Prometheus with the
// ServiceMonitor's metricRelabelings as the operator writes them
// (metric_relabel_configs) under the worst case for them, honor_labels
// true and a target label cluster: series exposed with a cluster label of
// their own, or none, are all stored with the chart's cluster.name, so
// nothing on a node's /metrics (a collector's series, or a label a tenant
// could smuggle onto one) moves its GPU-seconds to another cluster.
func TestClusterLabelWinsInPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.RequireIntegration(t, fmt.Sprintf("prometheus not found: %v", err), "install Debian's prometheus package")
	}
	objs := render(t, "--set", "cluster.name=gpu-eu-west-1", "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.honorLabels=true")
	rules := only[*serviceMonitor](t, objs).Spec.Endpoints[0].MetricRelabelings
	// The operator's camelCase fields, as Prometheus spells them.
	field := map[string]string{"action": "action", "targetLabel": "target_label", "replacement": "replacement",
		"sourceLabels": "source_labels", "regex": "regex", "separator": "separator"}
	var relabel []map[string]any
	for _, r := range rules {
		m := map[string]any{}
		for k, v := range r {
			f, ok := field[k]
			if !ok {
				t.Fatalf("metricRelabelings field %q: no Prometheus name known here", k)
			}
			m[f] = v
		}
		relabel = append(relabel, m)
	}
	if len(relabel) == 0 {
		t.Fatal("the ServiceMonitor has no metricRelabelings with cluster.name set")
	}

	exposition := strings.Join([]string{
		`gpuledger_gpu_capacity_seconds_total{cluster="gpu-us-east-2",node="n1",gpu="0"} 60`,
		`gpuledger_gpu_capacity_seconds_total{node="n1",gpu="1"} 60`,
		`gpuledger_container_gpu_allocated_seconds_total{cluster="",node="n1",gpu="1",team="ml"} 60`,
	}, "\n") + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, exposition)
	}))
	t.Cleanup(srv.Close)
	target := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	cfg, err := yaml.Marshal(map[string]any{
		"global": map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": []any{map[string]any{
			"job_name":               "gpuledger",
			"honor_labels":           true,
			"static_configs":         []any{map[string]any{"targets": []string{target}, "labels": map[string]string{"cluster": "target-label"}}},
			"metric_relabel_configs": relabel,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPorts(t, 1)[0])
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", out)
		}
	})

	// Each series' name and cluster, once all three are scraped.
	want := []string{
		"gpuledger_container_gpu_allocated_seconds_total gpu-eu-west-1",
		"gpuledger_gpu_capacity_seconds_total gpu-eu-west-1",
		"gpuledger_gpu_capacity_seconds_total gpu-eu-west-1",
	}
	var got []string
	testenv.Eventually(t, 60*time.Second, func() error {
		got, err = seriesClusters(ctx, "http://"+addr, `{__name__=~"gpuledger_.*"}`)
		if err != nil {
			return err
		}
		if len(got) != len(want) {
			return fmt.Errorf("series %q, want %d", got, len(want))
		}
		return nil
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored series (name cluster):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// seriesClusters queries expr and lists each series' name and cluster, sorted.
func seriesClusters(ctx context.Context, base, expr string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			Result []struct{ Metric map[string]string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		return nil, fmt.Errorf("query %s: status %q, %v", expr, body.Status, err)
	}
	var out []string
	for _, r := range body.Data.Result {
		out = append(out, r.Metric["__name__"]+" "+r.Metric["cluster"])
	}
	sort.Strings(out)
	return out, nil
}
