package web

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/tokencost"
	"github.com/gpuledger/gpuledger/internal/testenv"
)

// tokenPods is how many inference pods the load test's Prometheus holds
// counters of: two series each (vLLM's input and output tokens), 200,000
// series in all. The first loadGPUs are the ledger's pods (priced); the
// rest are unknown to it.
const tokenPods = 100_000

// tokenTSDB writes the counters of tokenPods pods over the previous and
// the running month (four samples a series: each month's start and end,
// or now) as OpenMetrics and turns them into TSDB blocks with promtool.
func tokenTSDB(b *testing.B, now time.Time) string {
	b.Helper()
	dir := b.TempDir()
	om := filepath.Join(dir, "tokens.om")
	f, err := os.Create(om)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	prev := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC)
	cur := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	times := []int64{prev.Add(time.Minute).Unix(), cur.Add(-time.Minute).Unix(), cur.Add(time.Minute).Unix(), now.Add(-10 * time.Minute).Unix()}
	vllm := tokencost.Servers[0]
	for mi, metric := range []string{vllm.Input, vllm.Output} {
		fmt.Fprintf(w, "# TYPE %s counter\n", metric[:len(metric)-len("_total")])
		for p := range tokenPods {
			ns, pod := fmt.Sprintf("tenant-%d", p%500), fmt.Sprintf("infer-%d", p)
			if p < loadGPUs {
				ns, pod = fmt.Sprintf("team-%d", p), fmt.Sprintf("GPU-%02d-pod", p)
			}
			per := int64(1000 * (mi + 1))
			for i, ts := range times {
				fmt.Fprintf(w, "%s{namespace=%q,pod=%q,%s=\"llama\"} %d %d\n", metric, ns, pod, vllm.ModelLabel, per*int64(i), ts)
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	data := filepath.Join(dir, "data")
	out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput()
	if err != nil {
		b.Fatalf("promtool: %v\n%s", err, out)
	}
	os.Remove(om)
	return data
}

// startPrometheus serves the TSDB at data on loopback.
func startPrometheus(b *testing.B, data string) string {
	b.Helper()
	cfg := filepath.Join(b.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("scrape_configs: []\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=10y",
		"--web.listen-address="+addr, "--log.level=warn", "--query.timeout=2m")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	testenv.Eventually(b, 2*time.Minute, func() error {
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("not ready: %s", resp.Status)
		}
		return nil
	})
	return url
}

var queryCount = regexp.MustCompile(`(?m)^prometheus_http_requests_total\{code="200",handler="/api/v1/query"\} (\S+)$`)

// promQueries is how many instant queries Prometheus answered.
func promQueries(b *testing.B, url string) float64 {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := queryCount.FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// BenchmarkServeLoadTokens is BenchmarkServeLoad with --prometheus: a
// real Prometheus holding 200,000 token series (promtool-made blocks),
// the month pages and JSON of the previous and the running month
// carrying their cost per token section. It also reports how many
// instant queries Prometheus answered during the 1,000 requests.
//
//	go test -run '^$' -bench ServeLoadTokens -benchtime 1x -timeout 30m ./web
func BenchmarkServeLoadTokens(b *testing.B) {
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.RequireIntegration(b, bin, "apt-get install prometheus (make deps)")
			return
		}
	}
	now := time.Now()
	db := loadLedger(b, now)
	url := startPrometheus(b, tokenTSDB(b, now))
	prom, err := tokencost.NewClient(url, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		before := promQueries(b, url)
		runLoad(b, Config{Open: fileOpener(db), AdviceRefresh: -1, LedgerFile: db, Prometheus: prom, PrometheusTimeout: time.Minute},
			loadPaths(now, 2))
		b.ReportMetric(promQueries(b, url)-before, "prom-queries")
	}
}
