package tokencost

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/tenancy"
)

// tenant is one inference pod of the scenario: where it runs, the share
// of one physical GPU it holds (the sharing factor's inverse), and the
// exposition its server serves, in that server's documented names.
type tenant struct {
	namespace, pod, gpuModel, mode string
	// shareNum/shareDen is its allocation share of one GPU: a 1g MIG
	// slice is 1/7, one of four MPS clients 1/4, HAMi gpucores=30 3/10.
	shareNum, shareDen int64
	in, out            int64 // tokens counted over the period
	exposition         func(in, out int64, tsMillis int64) string
	server, model      string
}

const heldHours = 28 // every tenant holds its slice 28 hours in four 7-hour rows

func vllmText(model string) func(in, out, ts int64) string {
	return func(in, out, ts int64) string {
		return fmt.Sprintf(`# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name=%q,engine="0"} %d %d
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name=%q,engine="0"} %d %d
`, model, in, ts, model, out, ts)
	}
}

func sglangText(model string) func(in, out, ts int64) string {
	return func(in, out, ts int64) string {
		return fmt.Sprintf(`# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name=%q} %d %d
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name=%q} %d %d
`, model, in, ts, model, out, ts)
	}
}

// tgiText serves TGI's per-request histograms; only their _sum counts
// tokens. Requests of 100 input tokens each.
func tgiText(in, out, ts int64) string {
	return fmt.Sprintf(`# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="+Inf"} %d %d
tgi_request_input_length_sum %d %d
tgi_request_input_length_count %d %d
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="+Inf"} %d %d
tgi_request_generated_tokens_sum %d %d
tgi_request_generated_tokens_count %d %d
`, in/100, ts, in, ts, in/100, ts, in/100, ts, out, ts, in/100, ts)
}

// tritonText serves Triton's TensorRT-LLM backend histograms (labelled
// with Triton's model and version); their _sum counts tokens.
func tritonText(in, out, ts int64) string {
	return fmt.Sprintf(`# TYPE nv_llm_input_token_len histogram
nv_llm_input_token_len_bucket{model="ensemble",version="1",response_metric_type="total_input_tokens",le="+Inf"} %d %d
nv_llm_input_token_len_sum{model="ensemble",version="1",response_metric_type="total_input_tokens"} %d %d
nv_llm_input_token_len_count{model="ensemble",version="1",response_metric_type="total_input_tokens"} %d %d
# TYPE nv_llm_output_token_len histogram
nv_llm_output_token_len_bucket{model="ensemble",version="1",response_metric_type="total_output_tokens",le="+Inf"} %d %d
nv_llm_output_token_len_sum{model="ensemble",version="1",response_metric_type="total_output_tokens"} %d %d
nv_llm_output_token_len_count{model="ensemble",version="1",response_metric_type="total_output_tokens"} %d %d
`, in/100, ts, in, ts, in/100, ts, in/100, ts, out, ts, in/100, ts)
}

func nimText(model string) func(in, out, ts int64) string {
	return func(in, out, ts int64) string {
		return fmt.Sprintf(`# TYPE prompt_tokens_total counter
prompt_tokens_total{model_name=%q} %d %d
# TYPE generation_tokens_total counter
generation_tokens_total{model_name=%q} %d %d
`, model, in, ts, model, out, ts)
	}
}

var tenants = []tenant{
	{namespace: "chat", pod: "llama-7d9f8b6c5-x2k4p", gpuModel: "A100-SXM4-80GB", mode: string(tenancy.MIG), shareNum: 1, shareDen: 7,
		in: 42_000_000, out: 9_000_000, exposition: vllmText("meta-llama/Llama-3.1-8B-Instruct"), server: "vllm", model: "meta-llama/Llama-3.1-8B-Instruct"},
	{namespace: "search", pod: "qwen-0", gpuModel: "H100-SXM5-80GB", mode: string(tenancy.MPS), shareNum: 1, shareDen: 4,
		in: 25_000_000, out: 4_000_000, exposition: sglangText("Qwen/Qwen2.5-7B"), server: "sglang", model: "Qwen/Qwen2.5-7B"},
	{namespace: "docs", pod: "summarise-5b7c9d8f4-q8w2e", gpuModel: "A100-SXM4-80GB", mode: string(tenancy.HAMi), shareNum: 3, shareDen: 10,
		in: 12_000_000, out: 3_000_000, exposition: tgiText, server: "tgi", model: ""},
	{namespace: "agents", pod: "nim-llm-6c8d7f9b5-m3n7r", gpuModel: "H100-SXM5-80GB", mode: string(tenancy.MIG), shareNum: 2, shareDen: 7,
		in: 8_000_000, out: 2_000_000, exposition: nimText("meta/llama-3.1-70b-instruct"), server: "nim", model: "meta/llama-3.1-70b-instruct"},
	{namespace: "translate", pod: "triton-0", gpuModel: "A100-SXM4-80GB", mode: string(tenancy.Timeslicing), shareNum: 1, shareDen: 2,
		in: 6_000_000, out: 5_000_000, exposition: tritonText, server: "triton-trtllm", model: "ensemble"},
}

var rates = map[string]*big.Rat{"A100-SXM4-80GB": big.NewRat(250, 100), "H100-SXM5-80GB": big.NewRat(410, 100)}

const bookYAML = `currency: EUR
timezone: UTC
policy: allocation
idle: shared
rates:
  A100-SXM4-80GB: 2.50
  H100-SXM5-80GB: 4.10
defaultRate: 2.00
`

// writeLedger stores each tenant's slice as four 7-hour container rows
// from start, with allocated GPU-seconds = share x 25200, an integer for
// every share of the scenario (so the sum is exact in float64).
func writeLedger(ctx context.Context, t *testing.T, start time.Time) ledger.Store {
	t.Helper()
	return writeLedgerOf(ctx, t, start, tenants)
}

func writeLedgerOf(ctx context.Context, t *testing.T, start time.Time, tenants []tenant) ledger.Store {
	t.Helper()
	st, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var rows []attribution.Row
	for i, tn := range tenants {
		alloc := float64(25200 * tn.shareNum / tn.shareDen)
		for k := range heldHours / 7 {
			s := start.Add(time.Duration(k*7) * time.Hour)
			rows = append(rows, attribution.Row{IntervalStart: s, IntervalEnd: s.Add(7 * time.Hour), Node: "n1",
				GPUUUID: fmt.Sprintf("GPU-%d", i), GPUModel: tn.gpuModel, SliceID: fmt.Sprintf("GPU-%d::0", i), SharingMode: tn.mode,
				Kind: attribution.KindContainer, Namespace: tn.namespace, Pod: tn.pod, PodUID: "uid-" + tn.pod, Container: "server",
				Team: tn.namespace, AllocatedGPUSeconds: alloc, UsedGPUSeconds: alloc / 2, Method: attribution.MethodMeasured})
		}
	}
	if err := st.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

// fixtures serves each tenant's exposition on its own httptest server:
// before phase 1 every counter is 0 at t0, after it the period's counts
// at t1, each sample carrying its timestamp. So Prometheus holds exactly
// two samples per series at instants the test knows, and the increase
// over a range ending at t1 is the count itself: no extrapolation, since
// a counter starting at zero is not extrapolated back and none is needed
// forward.
func fixtures(t *testing.T, phase *atomic.Int32, t0, t1 time.Time) []string {
	t.Helper()
	return fixturesOf(t, phase, t0, t1, tenants)
}

func fixturesOf(t *testing.T, phase *atomic.Int32, t0, t1 time.Time, tenants []tenant) []string {
	t.Helper()
	var addrs []string
	for _, tn := range tenants {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			if phase.Load() == 0 {
				fmt.Fprint(w, tn.exposition(0, 0, t0.UnixMilli()))
				return
			}
			fmt.Fprint(w, tn.exposition(tn.in, tn.out, t1.UnixMilli()))
		}))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	return addrs
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startPrometheus runs a real Prometheus scraping the fixtures every
// second, each target labelled with its pod's namespace and name as
// Kubernetes service discovery would.
func startPrometheus(ctx context.Context, t *testing.T, targets []string) *Client {
	t.Helper()
	return startPrometheusOf(ctx, t, targets, tenants)
}

func startPrometheusOf(ctx context.Context, t *testing.T, targets []string, tenants []tenant) *Client {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.RequireIntegration(t, "prometheus", "apt-get install prometheus (make deps)")
		return nil
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: inference\n    static_configs:\n")
	for i, tn := range tenants {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels: {namespace: %q, pod: %q}\n", targets[i], tn.namespace, tn.pod)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c, err := NewClient("http://"+addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		_, err := c.Query(ctx, "up", time.Now())
		return err
	})
	return c
}

// waitForSamples waits until every token series has n samples at or
// before at.
func waitForSamples(ctx context.Context, t *testing.T, c *Client, n int, at time.Time) {
	t.Helper()
	waitForSeries(ctx, t, c, n, at, 2*len(tenants))
}

// waitForSeries waits until want token series have n samples at or
// before at.
func waitForSeries(ctx context.Context, t *testing.T, c *Client, n int, at time.Time, want int) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() error {
		// One query per metric: count_over_time drops the name, so an "or"
		// of them would merge a server's input and output series.
		seen := 0
		for _, m := range MetricNames() {
			s, err := c.Query(ctx, "count_over_time("+m+"[10m]) >= "+fmt.Sprint(n), at)
			if err != nil {
				return err
			}
			seen += len(s)
		}
		if seen != want {
			return fmt.Errorf("%d of %d token series have %d samples", seen, want, n)
		}
		return nil
	})
}

// TestCostPerTokenAgainstPrometheus: a real Prometheus scrapes vLLM,
// SGLang, TGI, NIM and Triton (TensorRT-LLM backend) expositions of five
// tenants on a MIG slice, an MPS client, a HAMi fraction, a 2g MIG slice
// and half a time-sliced GPU; the section's figures are
// the ledger's exact cost over the tokens counted, computed here by hand,
// and each differs from costing the whole requested GPU by exactly the
// tenant's sharing factor.
func TestCostPerTokenAgainstPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Second)
	t0, t1 := now.Add(-2*time.Minute), now.Add(-time.Minute)
	var phase atomic.Int32
	c := startPrometheus(ctx, t, fixtures(t, &phase, t0, t1))
	// The period: 30 days ending at t1; the ledger rows lie inside it.
	from, to := t1.Add(-30*24*time.Hour), t1
	st := writeLedger(ctx, t, from.Add(24*time.Hour).Truncate(time.Hour))
	waitForSamples(ctx, t, c, 1, now.Add(time.Minute))
	phase.Store(1)
	waitForSamples(ctx, t, c, 2, now.Add(time.Minute))

	book, err := pricebook.Parse("prices.yaml", []byte(bookYAML))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Build(ctx, c, st, book, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if got.Basis != "allocated" || got.Unpriced != 0 || len(got.Rows) != len(tenants) {
		t.Fatalf("section: basis %q, %d unpriced, %d rows, want allocated, 0, %d: %+v", got.Basis, got.Unpriced, len(got.Rows), len(tenants), got.Rows)
	}
	million := big.NewRat(1_000_000, 1)
	for _, tn := range tenants {
		idx := -1
		for i, r := range got.Rows {
			if r.Namespace == tn.namespace {
				idx = i
			}
		}
		if idx < 0 {
			t.Errorf("%s: no row", tn.namespace)
			continue
		}
		r := got.Rows[idx]
		if r.Server != tn.server || r.Model != tn.model || r.Pods != 1 || r.InputTokens != float64(tn.in) || r.OutputTokens != float64(tn.out) {
			t.Errorf("%s: server %q model %q pods %d tokens %v/%v, want %q %q 1 %d/%d", tn.namespace, r.Server, r.Model, r.Pods,
				r.InputTokens, r.OutputTokens, tn.server, tn.model, tn.in, tn.out)
		}
		// Exact cost: 28 h x share x rate. Requested-GPU costing: 28 h x 1 GPU x rate.
		whole := new(big.Rat).Mul(big.NewRat(heldHours, 1), rates[tn.gpuModel])
		exact := new(big.Rat).Mul(whole, big.NewRat(tn.shareNum, tn.shareDen))
		if r.Cost.Cmp(exact) != 0 {
			t.Errorf("%s: cost %s, want %s", tn.namespace, r.Cost.FloatString(9), exact.FloatString(9))
		}
		wantIn := new(big.Rat).Quo(new(big.Rat).Mul(exact, million), big.NewRat(tn.in, 1))
		wantOut := new(big.Rat).Quo(new(big.Rat).Mul(exact, million), big.NewRat(tn.out, 1))
		if r.PerMillionInput == nil || r.PerMillionInput.Cmp(wantIn) != 0 || r.PerMillionOutput == nil || r.PerMillionOutput.Cmp(wantOut) != 0 {
			t.Errorf("%s: per million input/output %v/%v, want %s/%s", tn.namespace, r.PerMillionInput, r.PerMillionOutput,
				wantIn.FloatString(9), wantOut.FloatString(9))
			continue
		}
		// Requested-GPU costing over the same tokens is larger by exactly the sharing factor.
		wholeIn := new(big.Rat).Quo(new(big.Rat).Mul(whole, million), big.NewRat(tn.in, 1))
		factor := big.NewRat(tn.shareDen, tn.shareNum)
		if ratio := new(big.Rat).Quo(wholeIn, r.PerMillionInput); ratio.Cmp(factor) != 0 {
			t.Errorf("%s (%s): requested-GPU figure / ours = %s, want the sharing factor %s", tn.namespace, tn.mode, ratio.RatString(), factor.RatString())
		}
		t.Logf("%s %s on %s (%s): %s EUR per M input, %s per M output; whole-GPU costing says %s per M input",
			tn.namespace, tn.server, tn.gpuModel, tn.mode, r.PerMillionInput.FloatString(4), r.PerMillionOutput.FloatString(4), wholeIn.FloatString(4))
	}
}
