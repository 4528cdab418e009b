package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// adviseLedger writes November 2026 of seven inference replicas, each
// alone on an A100 using 3% or 8% of it, and a trainer at 90-95% of an
// H100, with every GPU's unallocated/idle rows, into an embedded ledger.
func adviseLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := filestore.OpenFile(context.Background(), path, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var batch []attribution.Row
	flush := func() {
		if err := st.Append(context.Background(), batch, nil); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	for m := range 30 * 24 * 60 {
		start := from.Add(time.Duration(m) * time.Minute)
		row := func(gpu, model, pod, team string, used float64) {
			batch = append(batch, attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: "n1", GPUUUID: gpu, GPUModel: model,
				SliceID: gpu, SharingMode: "exclusive", Kind: attribution.KindContainer, Namespace: team, Pod: pod, PodUID: pod + "-uid",
				Container: "main", Team: team, AllocatedGPUSeconds: 60, UsedGPUSeconds: used, MemoryMiBSeconds: 60 * 4000, Method: "measured"},
				attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: "n1", GPUUUID: gpu, GPUModel: model,
					SliceID: gpu, SharingMode: "exclusive", Kind: attribution.KindIdle, UsedGPUSeconds: 60 - used, Method: "measured"})
		}
		for i := range 7 {
			row(fmt.Sprintf("GPU-a%d", i), "A100-SXM4-80GB", fmt.Sprintf("infer-7d4b9c8f6d-%cxz2q", "bcdfghj"[i]), "search", 60*[]float64{0.03, 0.08}[m%2])
		}
		row("GPU-h0", "H100-SXM5-80GB", "trainer-0", "research", 60*(0.9+0.05*float64(m%2)))
		if len(batch) > 20000 {
			flush()
		}
	}
	flush()
	return path
}

// TestAdviseCommand: the month's advice from the embedded store: the
// seven replicas go to one A100 under MPS (4320 h x 2.40 = 10,368.00), the
// trainer stays; the charge lines of the report for the same period equal
// the workloads' held hours at the book's rates (5040 x 2.40 + 720 x
// 4.123456789 = 12,096.00 + 2,968.89).
func TestAdviseCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a month of ledger rows")
	}
	db := adviseLedger(t)
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	os.WriteFile(prices, []byte("currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\n  H100-SXM5-80GB: 4.123456789\ndefaultRate: 1\n"), 0o644)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"advise", "--period", "2026-11", "--ledger", db, "--prices", prices, "--format", "json"}, &out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Saving         json.Number `json:"saving"`
		Reconciliation struct {
			ReportCharges json.Number `json:"report_charge_lines"`
			HeldAtRates   json.Number `json:"held_at_rates"`
		} `json:"reconciliation"`
		Recommendations []struct {
			Kind      string      `json:"kind"`
			Workloads []string    `json:"workloads"`
			Saving    json.Number `json:"saving"`
			AfterGPUs json.Number `json:"after_gpus"`
		} `json:"recommendations"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.Saving != "10368.00" || len(doc.Recommendations) != 2 {
		t.Fatalf("saving %s, %d recommendations:\n%s", doc.Saving, len(doc.Recommendations), out.String())
	}
	r0, r1 := doc.Recommendations[0], doc.Recommendations[1]
	if r0.Kind != "consolidate" || r0.Saving != "10368.00" || r0.AfterGPUs != "1.000" || r1.Kind != "keep" || r1.Workloads[0] != "research/trainer" {
		t.Errorf("recommendations %+v", doc.Recommendations)
	}
	if doc.Reconciliation.ReportCharges != "15064.89" || doc.Reconciliation.HeldAtRates != "15064.89" {
		t.Errorf("reconciliation %+v, want 15064.89 both", doc.Reconciliation)
	}
	for _, format := range []string{"text", "html"} {
		out.Reset()
		if err := run(context.Background(), []string{"advise", "--period", "2026-11", "--ledger", db, "--prices", prices, "--format", format}, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "10368.00") || !strings.Contains(out.String(), "search/infer") {
			t.Errorf("%s output lacks the saving or the workload:\n%s", format, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"advise", "--period", "2026-11", "--ledger", db, "--prices", prices, "--format", "prom"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`gpuledger_advice_saving_total{currency="USD"} 10368`,
		`gpuledger_advice_saving{currency="USD",gpu_model="A100-SXM4-80GB",kind="consolidate",namespace="search",team="search",workloads="search/infer"} 10368`,
		`gpuledger_advice_gpus_after{gpu_model="A100-SXM4-80GB",kind="consolidate",namespace="search",team="search",workloads="search/infer"} 1`,
		`gpuledger_advice_recommendations{kind="keep"} 1`,
		`gpuledger_advice_recommendations{kind="reclaim"} 0`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prom output lacks %s:\n%s", want, out.String())
		}
	}
	// With pod metadata and the service-time annotation the consolidation
	// says what whatif predicts on its one MPS GPU.
	var items []string
	for i := range 7 {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"infer-7d4b9c8f6d-%cxz2q","namespace":"search","annotations":{"gpuledger.io/service-time":"10ms"},
			"ownerReferences":[{"kind":"ReplicaSet","name":"infer-7d4b9c8f6d","controller":true}]}}`, "bcdfghj"[i]))
	}
	podsFile := filepath.Join(t.TempDir(), "pods.json")
	os.WriteFile(podsFile, []byte(`{"kind":"List","items":[`+strings.Join(items, ",")+`]}`), 0o644)
	out.Reset()
	if err := run(context.Background(), []string{"advise", "--period", "2026-11", "--ledger", db, "--prices", prices, "--pods", podsFile, "--format", "json"}, &out); err != nil {
		t.Fatal(err)
	}
	var withPods struct {
		Recommendations []struct {
			Latency *struct {
				Mode    string   `json:"mode"`
				Tenants int      `json:"tenants_per_gpu"`
				Rate    float64  `json:"rate_rps_per_replica"`
				P99     *float64 `json:"p99_ms"`
			} `json:"latency"`
		} `json:"recommendations"`
	}
	if err := json.Unmarshal(out.Bytes(), &withPods); err != nil {
		t.Fatal(err)
	}
	// Mean use 5.5% / 10 ms = 5.5 rps per replica, seven on one GPU.
	if l := withPods.Recommendations[0].Latency; l == nil || l.Mode != "mps" || l.Tenants != 7 || l.Rate != 5.5 || l.P99 == nil || *l.P99 < 10 {
		t.Errorf("latency with --pods: %+v\n%s", l, out.String())
	}
	// An empty period is an error, not a zero.
	err := run(context.Background(), []string{"advise", "--period", "2026-10", "--ledger", db, "--prices", prices}, &out)
	if err == nil || !strings.Contains(err.Error(), "no GPU allocations") {
		t.Errorf("empty period: %v", err)
	}
}

func TestAdviseBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ledger", "x", "--prices", "p"}, "needs --period"},
		{[]string{"--period", "2026-11", "--ledger", "x"}, "needs --prices"},
		{[]string{"--period", "2026-11", "--prices", "p", "--ledger", "x", "--format", "csv"}, "want text, json, html or prom"},
		{[]string{"--period", "2026-11", "--prices", "p", "--ledger", "x", "--headroom", "-1"}, "--headroom"},
		{[]string{"--period", "2026-11", "--prices", "p", "--ledger", "x", "--reclaim", "2"}, "--reclaim"},
	} {
		err := run(context.Background(), append([]string{"advise"}, c.args...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// adviseFleetLedger is the month benchmarks' embedded ledger: days of a
// 100-GPU fleet at one-minute rows (GPULEDGER_BENCH_ADVISE_DAYS, default
// 30: 4.32 M container rows and as many idle rows, 1.7 GB), built once
// (about a minute) and kept in the temp dir for later runs.
func adviseFleetLedger(b *testing.B) (path string, from, to time.Time) {
	days := 30
	if v, err := strconv.Atoi(os.Getenv("GPULEDGER_BENCH_ADVISE_DAYS")); err == nil && v > 0 {
		days = v
	}
	from = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to = from.AddDate(0, 0, days)
	path = filepath.Join(os.TempDir(), fmt.Sprintf("gpuledger-bench-advise-%dd.db", days))
	if _, err := os.Stat(path + ".done"); err == nil {
		return path, from, to
	}
	ctx := context.Background()
	os.Remove(path)
	st, err := filestore.OpenFile(ctx, path, filestore.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var batch []attribution.Row
	for m := range days * 24 * 60 {
		batch = append(batch, adviseFleetMinute(from.Add(time.Duration(m)*time.Minute), m)...)
		if len(batch) >= 20000 {
			if err := st.Append(ctx, batch, nil); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := st.Append(ctx, batch, nil); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path+".done", nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return path, from, to
}

// BenchmarkAdviseEmbeddedMonth: advise end to end (report, container
// rows, findings, plan) on adviseFleetLedger.
//
//	go test -run '^$' -bench AdviseEmbeddedMonth -benchtime 2x -timeout 30m ./cmd/gpuledger
func BenchmarkAdviseEmbeddedMonth(b *testing.B) {
	path, from, to := adviseFleetLedger(b)
	prices := filepath.Join(b.TempDir(), "prices.yaml")
	os.WriteFile(prices, []byte("currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\ndefaultRate: 1\n"), 0o644)
	ctx := context.Background()
	b.ResetTimer()
	// CPU time next to wall time: on a machine shared with other work the
	// wall time moves with the load, the CPU time much less.
	cpu := processCPU(b)
	for b.Loop() {
		if err := run(ctx, []string{"advise", "--from", from.Format(time.DateOnly), "--to", to.Format(time.DateOnly), "--ledger", path, "--prices", prices, "--format", "json"}, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((processCPU(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkAdviseRead: the embedded store's read alone over
// adviseFleetLedger, as advise did it before (every row through Rows) and
// does it now (ContainerRows).
//
//	go test -run '^$' -bench AdviseRead -benchtime 2x -timeout 30m ./cmd/gpuledger
func BenchmarkAdviseRead(b *testing.B) {
	path, from, to := adviseFleetLedger(b)
	ctx := context.Background()
	st, err := filestore.OpenFile(ctx, path, filestore.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for name, read := range map[string]func(context.Context, time.Time, time.Time, func(attribution.Row) error) error{
		"rows": st.Rows, "container-rows": st.ContainerRows} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				if err := read(ctx, from, to, func(r attribution.Row) error {
					if r.Kind == attribution.KindContainer {
						n++
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n), "container-rows")
			}
		})
	}
}

// adviseFleetMinute is one minute of the benchmark fleet: 100 whole
// A100s, each with one replica of one of 25 Deployments and the GPU's
// idle remainder.
func adviseFleetMinute(start time.Time, m int) []attribution.Row {
	rows := make([]attribution.Row, 0, 200)
	for i := range 100 {
		gpu, pod, team := fmt.Sprintf("GPU-%d", i), fmt.Sprintf("svc%d-7d4b9c8f6d-%cxz2q", i/4, "bcdf"[i%4]), fmt.Sprintf("team-%d", i/20)
		used := 60 * float64((m*7+i*13)%100) / 100 * float64(i%5) / 5
		rows = append(rows, attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: fmt.Sprintf("n%d", i/8), GPUUUID: gpu,
			GPUModel: "A100-SXM4-80GB", SliceID: gpu, SharingMode: "exclusive", Kind: attribution.KindContainer, Namespace: team, Pod: pod,
			PodUID: pod, Container: "main", Team: team, AllocatedGPUSeconds: 60, UsedGPUSeconds: used, MemoryMiBSeconds: 60 * 4000, Method: "measured"},
			attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: fmt.Sprintf("n%d", i/8), GPUUUID: gpu,
				GPUModel: "A100-SXM4-80GB", SliceID: gpu, SharingMode: "exclusive", Kind: attribution.KindIdle, UsedGPUSeconds: 60 - used, Method: "measured"})
	}
	return rows
}
