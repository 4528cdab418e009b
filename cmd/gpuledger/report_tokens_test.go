package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// --prometheus adds a section to json and html only, with a bounded
// timeout; an unreachable Prometheus is an error and writes no file.
func TestReportPrometheusFlagErrors(t *testing.T) {
	db, _ := simulatedLedger(t)
	prices := pricesFile(t, "allocation")
	out := filepath.Join(t.TempDir(), "r.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "csv", "--prometheus", "http://127.0.0.1:1"}, "json and html only"},
		{[]string{"--format", "json", "--prometheus", "http://127.0.0.1:1", "--prometheus-timeout", "0s"}, "--prometheus-timeout"},
		{[]string{"--format", "json", "--prometheus", "ftp://x"}, "want http(s)"},
		{[]string{"--format", "json", "--out", out, "--prometheus", "http://127.0.0.1:1", "--prometheus-timeout", "2s"}, "cannot query Prometheus http://127.0.0.1:1"},
	} {
		args := append([]string{"--period", "2026-11", "--prices", prices, "--ledger", db}, c.args...)
		err := runReport(context.Background(), args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a report whose Prometheus was unreachable was written")
	}
}

// report --prometheus against a real Prometheus scraping a vLLM
// exposition of tenant-0/infer-0, one of seven MPS clients of an A100 for
// 180 s at 3600 per GPU-hour: its cost is 180 / 7 = 25.714285..., over
// 1,000,000 input and 250,000 output tokens. Costing the whole GPU would
// say 180 per million input tokens: seven times more.
func TestReportCostPerTokenFromPrometheus(t *testing.T) {
	prom, t1, _ := tokenPrometheus(t)
	if prom == "" {
		return
	}
	db, _ := simulatedLedger(t)
	prices := pricesFile(t, "allocation")

	out := filepath.Join(t.TempDir(), "r.json")
	if err := runReport(context.Background(), []string{"--from", "2026-11-01", "--to", t1.UTC().Format(time.RFC3339), "--prices", prices,
		"--ledger", db, "--format", "json", "--out", out, "--prometheus", prom}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc tokensDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tokens.Rows) != 1 {
		t.Fatalf("tokens rows: %+v", doc.Tokens.Rows)
	}
	r := doc.Tokens.Rows[0]
	// 180/7 = 25.7142857... within the ledger's rounding of each row to the
	// micro GPU-second; per million input tokens the same (one million of
	// them); per million output tokens four times it.
	num := func(n json.Number) float64 {
		f, err := n.Float64()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	cost := num(r.Cost)
	if r.Namespace != "tenant-0" || r.Workload != "infer" || r.Model != "llama" || r.Server != "vllm" || r.In != "1000000" || r.Out != "250000" ||
		math.Abs(cost-180.0/7) > 1e-5 || math.Abs(num(r.PerIn)-cost) > 1e-6 || math.Abs(num(r.PerOut)-4*cost) > 4e-6 {
		t.Errorf("row %+v, want tenant-0 infer llama vllm 1000000 250000, cost 180/7 = 25.714286 per million input, 102.857143 per million output", r)
	}
	// Costing the whole GPU the pod requested: 180 per million input
	// tokens, seven times (the MPS sharing factor) the exact figure.
	if f := 180 / num(r.PerIn); math.Abs(f-7) > 1e-5 {
		t.Errorf("whole-GPU figure / exact = %v, want the sharing factor 7", f)
	}
}

// tokensDoc is what the tests read of a JSON report's tokens section.
type tokensDoc struct {
	Tokens struct {
		Rows []struct {
			Namespace, Workload, Model, Server string
			In                                 json.Number `json:"input_tokens"`
			Out                                json.Number `json:"output_tokens"`
			Cost                               json.Number `json:"cost"`
			PerIn                              json.Number `json:"cost_per_million_input_tokens"`
			PerOut                             json.Number `json:"cost_per_million_output_tokens"`
		} `json:"rows"`
	} `json:"tokens"`
}

// tokenPrometheus starts a real Prometheus scraping a vLLM exposition of
// tenant-0/infer-0 (model llama) whose counters are 0 at t0, two minutes
// ago, and 1,000,000 input and 250,000 output tokens at t1, a minute ago:
// each sample carries its timestamp, so Prometheus holds exactly those two
// and the increase over a range ending at t1 is exact. It returns the
// server's URL, t1, and a stop that kills it (also run when the test
// ends); "" without Prometheus installed (the test is skipped).
func tokenPrometheus(t testing.TB) (url string, t1 time.Time, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.RequireIntegration(t, "prometheus", "apt-get install prometheus (make deps)")
		return "", t1, nil
	}
	now := time.Now().Truncate(time.Second)
	t0 := now.Add(-2 * time.Minute)
	t1 = now.Add(-time.Minute)
	var phase atomic.Int32
	// Samples carry their timestamps (t0: 0, t1: the counts), so the
	// increase over a range ending at t1 is exact.
	fixture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		in, out, ts := int64(0), int64(0), t0.UnixMilli()
		if phase.Load() == 1 {
			in, out, ts = 1_000_000, 250_000, t1.UnixMilli()
		}
		fmt.Fprintf(w, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=\"llama\",engine=\"0\"} %d %d\n"+
			"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"llama\",engine=\"0\"} %d %d\n", in, ts, out, ts)
	}))
	t.Cleanup(fixture.Close)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: inference\n    static_configs:\n"+
		"      - targets: [%q]\n        labels: {namespace: tenant-0, pod: infer-0}\n", strings.TrimPrefix(fixture.URL, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	samples := func(n int) func() error {
		return func() error {
			resp, err := http.Get("http://" + addr + "/api/v1/query?query=count_over_time(vllm:prompt_tokens_total[10m])>=" + fmt.Sprint(n) +
				"&time=" + fmt.Sprint(now.Add(time.Minute).Unix()))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var a struct {
				Data struct{ Result []any } `json:"data"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				return err
			}
			if len(a.Data.Result) != 1 {
				return fmt.Errorf("fewer than %d samples scraped", n)
			}
			return nil
		}
	}
	testenv.Eventually(t, 30*time.Second, samples(1))
	phase.Store(1)
	testenv.Eventually(t, 30*time.Second, samples(2))
	return "http://" + addr, t1, stop
}
