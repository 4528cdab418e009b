package tokencost

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// BenchmarkTokenQueryMonth measures what the report's token query costs
// Prometheus over a month: a month of vLLM counters (input and output) for
// GPULEDGER_BENCH_TOKEN_PODS pods (default 100) scraped every minute is
// remote-written in time order into a real Prometheus (promtool's
// backfill reads its whole input once per two hours of data: hours for a
// month), then the queries of
// every server's counters (countTokens: 8 instant queries of increase over
// 30 days) run against it.
func BenchmarkTokenQueryMonth(b *testing.B) {
	pods := 100
	if v := os.Getenv("GPULEDGER_BENCH_TOKEN_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10_000 {
			b.Fatalf("GPULEDGER_BENCH_TOKEN_PODS=%q: want 1 to 10000", v)
		}
		pods = n
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.RequireIntegration(b, "prometheus", "apt-get install prometheus (make deps)")
		return
	}
	dir := b.TempDir()
	end := time.Now().Add(-time.Hour).Truncate(time.Minute)
	start := end.Add(-30 * 24 * time.Hour)
	data := filepath.Join(dir, "data")
	addr := freeAddr(b)
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=90d",
		"--web.listen-address="+addr, "--log.level=warn", "--web.enable-remote-write-receiver")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c, err := NewClient("http://"+addr, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	testenv.Eventually(b, time.Minute, func() error {
		_, err := c.Query(ctx, "up", time.Now())
		return err
	})
	began := time.Now()
	samples, err := pushMonth(ctx, "http://"+addr+"/api/v1/write", pods, start, end)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("remote-wrote %d samples (%d pods x 2 series, one a minute over 30 days) in %s", samples, pods, time.Since(began).Round(time.Second))
	b.ResetTimer()
	for b.Loop() {
		toks, _, err := countTokens(ctx, c, start, end)
		if err != nil {
			b.Fatal(err)
		}
		if len(toks) != pods {
			b.Fatalf("%d pods counted, want %d", len(toks), pods)
		}
		for k, p := range toks {
			// 43200 one-minute steps of 900 and 150 tokens.
			if c := p.model("m"); c == nil || c.in != 900*43200 || c.out != 150*43200 {
				b.Fatalf("pod %v: %+v, want %d in and %d out", k, c, 900*43200, 150*43200)
			}
		}
	}
}

// pushMonth remote-writes a month of vLLM counters for pods to url: one
// sample a minute per series, input growing 900 and output 150 tokens a
// minute from zero at start. Requests carry 30 minutes of every series, in
// time order, so each sample lies within the head's appendable window.
func pushMonth(ctx context.Context, url string, pods int, start, end time.Time) (int, error) {
	samples := 0
	for lo := start; !lo.After(end); lo = lo.Add(30 * time.Minute) {
		var req []byte
		for p := range pods {
			for _, m := range []struct {
				name string
				per  float64
			}{{"vllm:prompt_tokens_total", 900}, {"vllm:generation_tokens_total", 150}} {
				var ts []byte
				for _, l := range [][2]string{{"__name__", m.name}, {"job", "inference"}, {"model_name", "m"},
					{"namespace", fmt.Sprintf("ns-%d", p%10)}, {"pod", fmt.Sprintf("llm-%d", p)}} {
					var lb []byte
					lb = protowire.AppendTag(lb, 1, protowire.BytesType)
					lb = protowire.AppendString(lb, l[0])
					lb = protowire.AppendTag(lb, 2, protowire.BytesType)
					lb = protowire.AppendString(lb, l[1])
					ts = protowire.AppendTag(ts, 1, protowire.BytesType)
					ts = protowire.AppendBytes(ts, lb)
				}
				for t := lo; t.Before(lo.Add(30*time.Minute)) && !t.After(end); t = t.Add(time.Minute) {
					var sb []byte
					sb = protowire.AppendTag(sb, 1, protowire.Fixed64Type)
					sb = protowire.AppendFixed64(sb, math.Float64bits(m.per*t.Sub(start).Minutes()))
					sb = protowire.AppendTag(sb, 2, protowire.VarintType)
					sb = protowire.AppendVarint(sb, uint64(t.UnixMilli()))
					ts = protowire.AppendTag(ts, 2, protowire.BytesType)
					ts = protowire.AppendBytes(ts, sb)
					samples++
				}
				req = protowire.AppendTag(req, 1, protowire.BytesType)
				req = protowire.AppendBytes(req, ts)
			}
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(s2.EncodeSnappy(nil, req)))
		if err != nil {
			return 0, err
		}
		hr.Header.Set("Content-Encoding", "snappy")
		hr.Header.Set("Content-Type", "application/x-protobuf")
		hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			return 0, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return 0, fmt.Errorf("remote write at %s: HTTP %d: %s", lo, resp.StatusCode, body)
		}
	}
	return samples, nil
}
