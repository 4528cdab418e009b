package tokencost

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// BenchmarkTokenQueryMonth measures what the report's token query costs
// Prometheus over a month: a month of vLLM counters (input and output) for
// GPULEDGER_BENCH_TOKEN_PODS pods (default 100) scraped every minute is
// backfilled with promtool into a real Prometheus, then the queries of
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
	promtool, err1 := exec.LookPath("promtool")
	prom, err2 := exec.LookPath("prometheus")
	if err1 != nil || err2 != nil {
		testenv.RequireIntegration(b, "prometheus and promtool", "apt-get install prometheus (make deps)")
		return
	}
	dir := b.TempDir()
	end := time.Now().Add(-time.Hour).Truncate(time.Minute)
	start := end.Add(-30 * 24 * time.Hour)
	om := filepath.Join(dir, "month.om")
	f, err := os.Create(om)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	samples := 0
	for _, fam := range []struct {
		name string
		per  int64
	}{{"vllm:prompt_tokens", 900}, {"vllm:generation_tokens", 150}} {
		fmt.Fprintf(w, "# TYPE %s counter\n", fam.name)
		for p := range pods {
			var v int64
			for t := start; !t.After(end); t = t.Add(time.Minute) {
				fmt.Fprintf(w, "%s_total{job=\"inference\",namespace=\"ns-%d\",pod=\"llm-%d\",model_name=\"m\"} %d %d\n", fam.name, p%10, p, v, t.Unix())
				v += fam.per
				samples++
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	began := time.Now()
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		b.Fatalf("promtool backfill: %v\n%s", err, out)
	}
	os.Remove(om)
	b.Logf("backfilled %d samples (%d pods x 2 series x %d minutes) in %s", samples, pods, samples/(2*pods), time.Since(began).Round(time.Second))
	addr := freeAddr(b)
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=90d",
		"--web.listen-address="+addr, "--log.level=warn")
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
	b.ResetTimer()
	for b.Loop() {
		toks, err := countTokens(ctx, c, start, end)
		if err != nil {
			b.Fatal(err)
		}
		if len(toks) != pods {
			b.Fatalf("%d pods counted, want %d", len(toks), pods)
		}
		for k, p := range toks {
			// 43200 one-minute steps of 900 and 150 tokens.
			if c := p.models["m"]; c == nil || c.in != 900*43200 || c.out != 150*43200 {
				b.Fatalf("pod %v: %+v, want %d in and %d out", k, c, 900*43200, 150*43200)
			}
		}
	}
}
