package tokencost

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/tenancy"
)

// vllmValues serves vLLM's counters at zero before the period's counts
// (in == out == 0) and at the given values, as written on /metrics, after.
func vllmValues(model, in, out string) func(int64, int64, int64) string {
	return func(i, o, ts int64) string {
		in, out := in, out
		if i == 0 && o == 0 {
			in, out = "0", "0"
		}
		return fmt.Sprintf(`# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name=%q} %s %d
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name=%q} %s %d
`, model, in, ts, model, out, ts)
	}
}

// hostile is a month of one well-behaved tenant, tenants whose counters
// are absurd, and one workload of two pods whose counts are large but
// within the bounds. Every pod holds a 1g MIG slice of an A100 for 28
// hours: 4 GPU-hours at 2.50, 10 EUR.
func hostile() []tenant {
	pod := func(namespace, pod string, exposition func(int64, int64, int64) string) tenant {
		return tenant{namespace: namespace, pod: pod, gpuModel: "A100-SXM4-80GB", mode: string(tenancy.MIG), shareNum: 1, shareDen: 7,
			in: 1, out: 1, exposition: exposition, server: "vllm", model: "m"}
	}
	ok := pod("chat", "llama-7d9f8b6c5-x2k4p", vllmText("m"))
	ok.in, ok.out = 42_000_000, 9_000_000
	return []tenant{
		ok,
		// Each finite, so a parser accepts them; their sum is +Inf.
		pod("huge", "big-0", vllmValues("m", "1e308", "1e308")),
		// Denormal: a cost per token of about 2e330.
		pod("tiny", "small-0", vllmValues("m", "5e-324", "1000")),
		pod("nan", "nan-0", vllmValues("m", "NaN", "5")),
		// A counter that falls below zero: Prometheus's increase of it is
		// negative.
		pod("neg", "neg-0", vllmValues("m", "-5", "7")),
		pod("inf", "inf-0", vllmValues("m", "+Inf", "1")),
		// One pod's counter scraped by two targets: Prometheus's sum of the
		// two series, each 1e308, is +Inf.
		pod("twice", "dup-0", vllmValues("m", "1e308", "1")),
		pod("twice", "dup-0", vllmValues("m", "1e308", "1")),
		// Two pods of one workload: each within MaxSeriesTokens, their sum
		// (1.2e15) above it, as a workload may.
		pod("web", "web-5b7c9d8f4-x2k4p", vllmValues("m", "600000000000000", "1000000000000")),
		pod("web", "web-5b7c9d8f4-z9w2b", vllmValues("m", "600000000000000", "1000000000000")),
	}
}

// TestAbsurdCountsAgainstPrometheus: a real Prometheus scrapes counters
// at 1e308 (input and output), 5e-324, NaN, a negative increase and +Inf,
// and a pod scraped twice at 1e308, beside a well-behaved tenant and a
// two-pod workload. The section is built without an error: each absurd
// pod is left out with a note
// naming its namespace, pod, server and metric, and the others' figures
// are those computed here by hand.
func TestAbsurdCountsAgainstPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tns := hostile()
	now := time.Now().Truncate(time.Second)
	t0, t1 := now.Add(-2*time.Minute), now.Add(-time.Minute)
	var phase atomic.Int32
	c := startPrometheusOf(ctx, t, fixturesOf(t, &phase, t0, t1, tns), tns)
	from, to := t1.Add(-30*24*time.Hour), t1
	st := writeLedgerOf(ctx, t, from.Add(24*time.Hour).Truncate(time.Hour), tns)
	waitForSeries(ctx, t, c, 1, now.Add(time.Minute), 2*len(tns))
	phase.Store(1)
	waitForSeries(ctx, t, c, 2, now.Add(time.Minute), 2*len(tns))
	book, err := pricebook.Parse("prices.yaml", []byte(bookYAML))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Build(ctx, c, st, book, from, to)
	if err != nil {
		t.Fatalf("a tenant's counts failed the section: %v", err)
	}
	ten := big.NewRat(10, 1)
	million := big.NewRat(1_000_000, 1)
	want := []report.TokenRow{
		{Namespace: "web", Workload: "web", Model: "m", Server: "vllm", Pods: 2, InputTokens: 1.2e15, OutputTokens: 2e12, Cost: big.NewRat(20, 1),
			PerMillionInput: big.NewRat(20_000_000, 1.2e15), PerMillionOutput: big.NewRat(20_000_000, 2e12), PerMillion: big.NewRat(20_000_000, 1.2e15+2e12)},
		{Namespace: "chat", Workload: "llama", Model: "m", Server: "vllm", Pods: 1, InputTokens: 42e6, OutputTokens: 9e6, Cost: ten,
			PerMillionInput:  new(big.Rat).Quo(new(big.Rat).Mul(ten, million), big.NewRat(42e6, 1)),
			PerMillionOutput: new(big.Rat).Quo(new(big.Rat).Mul(ten, million), big.NewRat(9e6, 1)),
			PerMillion:       new(big.Rat).Quo(new(big.Rat).Mul(ten, million), big.NewRat(51e6, 1))},
	}
	if len(got.Rows) != len(want) || got.Unpriced != 0 {
		t.Fatalf("rows %+v, %d unpriced; want %d rows, none unpriced", got.Rows, got.Unpriced, len(want))
	}
	for i, w := range want {
		g := got.Rows[i]
		if g.Namespace != w.Namespace || g.Workload != w.Workload || g.Model != w.Model || g.Server != w.Server || g.Pods != w.Pods ||
			g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens || g.Cost.Cmp(w.Cost) != 0 ||
			g.PerMillionInput.Cmp(w.PerMillionInput) != 0 || g.PerMillionOutput.Cmp(w.PerMillionOutput) != 0 || g.PerMillion.Cmp(w.PerMillion) != 0 {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	const in, out = "vllm:prompt_tokens_total", "vllm:generation_tokens_total"
	wantNotes := []struct{ namespace, pod, metric, says string }{
		{"huge", "big-0", out, "1e+308 is above the maximum of 1e+15"},
		{"huge", "big-0", in, "1e+308 is above the maximum of 1e+15"},
		{"inf", "inf-0", in, "is +Inf"},
		{"nan", "nan-0", in, "is NaN"},
		// Prometheus extrapolates a falling counter to the range's start
		// by half its 60 s between samples: -5 x (60+30)/60.
		{"neg", "neg-0", in, "-7.5 is negative"},
		{"tiny", "small-0", in, "4.94066e-324 is positive but below 0.5"},
		{"twice", "dup-0", in, "is +Inf"},
	}
	if len(got.Notes) != len(wantNotes) || got.NotesMore != 0 {
		t.Fatalf("notes %+v (%d more), want %d", got.Notes, got.NotesMore, len(wantNotes))
	}
	for i, w := range wantNotes {
		n := got.Notes[i]
		if n.Namespace != w.namespace || n.Pod != w.pod || n.Server != "vllm" || n.Metric != w.metric || n.Model != "m" ||
			!strings.Contains(n.Note, w.says) || !strings.HasSuffix(n.Note, "the pod is left out") {
			t.Errorf("note %d: %+v, want %s/%s/vllm/%s saying %q", i, n, w.namespace, w.pod, w.metric, w.says)
		}
	}
}
