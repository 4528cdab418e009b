package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/tenancy"
	"github.com/gpuledger/gpuledger/web"
)

// currentMonthLedger holds tenant-0/infer-0 as one of four MPS clients of
// an A100 for the first minute of the month that holds at: 15 allocated
// GPU-seconds, with the GPU's other 45 idle.
func currentMonthLedger(t testing.TB, at time.Time) (db string, month string) {
	t.Helper()
	start := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
	db = filepath.Join(t.TempDir(), "ledger.db")
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base := attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: "n1", GPUUUID: "GPU-1", GPUModel: "A100-SXM4-80GB",
		SliceID: "GPU-1", SharingMode: string(tenancy.MPS), Method: attribution.MethodMeasured}
	c := base
	c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container, c.Team = attribution.KindContainer, "tenant-0", "infer-0", "uid-infer-0", "server", "tenant-0"
	c.AllocatedGPUSeconds, c.UsedGPUSeconds = 15, 10
	idle := base
	idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 45
	if err := st.Append(context.Background(), []attribution.Row{c, idle}, nil); err != nil {
		t.Fatal(err)
	}
	return db, start.Format("2006-01")
}

// serveWithTokens serves the web app over db and prices, its month pages'
// token queries sent to prom.
func serveWithTokens(t *testing.T, db, prices, prom string) *httptest.Server {
	t.Helper()
	opt, err := withPrometheus(prom, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return startServe(t, db, prices, opt, rebuildRunningMonth)
}

// serve --prometheus against a real Prometheus (tokenPrometheus: 1,000,000
// input and 250,000 output tokens of tenant-0/infer-0 between two samples
// 60 s apart) and a ledger holding that pod for 15 GPU-seconds at 3600 per
// GPU-hour, so 15.00: the month's page and JSON are byte for byte what
// report --period --prometheus writes, while the month runs and once it
// has ended. The figures, by hand: the month's query is evaluated at its
// end, after the last sample, so Prometheus extrapolates the counters
// half the 60 s between the samples beyond it (and not before the first,
// a counter at zero): 1.5 x the counts, 1,500,000 input and 375,000
// output tokens; 15 / 1.5 = 10 per million input tokens, 40 per million
// output. Then Prometheus is killed: the ended month's section is kept
// (cached per price book version), the running month's page answers 200
// without it and says why.
func TestServeCostPerTokenMatchesReport(t *testing.T) {
	prom, t1, stop := tokenPrometheus(t)
	if prom == "" {
		return
	}
	running := time.Now().Truncate(time.Second)
	if start := time.Date(running.Year(), running.Month(), 1, 0, 0, 0, 0, time.UTC); t1.Add(-time.Minute).Before(start) {
		t.Skip("the fixture's samples straddle the start of a month: run again in a few minutes")
	}
	db, month := currentMonthLedger(t, running)
	from, _ := time.Parse("2006-01", month)
	ended := from.AddDate(0, 1, 0).Add(time.Minute)
	prices := pricesFile(t, "allocation")
	clock := running
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	hs := serveWithTokens(t, db, prices, prom)

	same := func(state string) []byte {
		t.Helper()
		var body []byte
		for _, f := range []struct{ suffix, format string }{{"", "html"}, {".json", "json"}} {
			var want bytes.Buffer
			if err := run(context.Background(), []string{"report", "--ledger", db, "--prices", prices, "--period", month, "--format", f.format,
				"--prometheus", prom}, &want); err != nil {
				t.Fatalf("report --prometheus: %v", err)
			}
			resp, got := getBody(t, hs.URL+"/reports/"+month+f.suffix)
			if f.suffix == "" {
				got = web.WithoutNav(got) // serve's header around the report's page
			}
			if resp.StatusCode != 200 || !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%s: /reports/%s%s: %d, %d bytes; report --format %s --prometheus wrote %d bytes that differ", state, month, f.suffix,
					resp.StatusCode, len(got), f.format, want.Len())
			}
			if !bytes.Contains(got, []byte(`id="tokens"`)) && !bytes.Contains(got, []byte(`"tokens"`)) {
				t.Errorf("%s: /reports/%s%s has no tokens section", state, month, f.suffix)
			}
			if f.format == "json" {
				body = got
			}
		}
		return body
	}
	var doc tokensDoc
	if err := json.Unmarshal(same("month running"), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tokens.Rows) != 1 {
		t.Fatalf("tokens rows: %+v, want tenant-0's", doc.Tokens.Rows)
	}
	if r := doc.Tokens.Rows[0]; r.Namespace != "tenant-0" || r.Workload != "infer" || r.Model != "llama" || r.Server != "vllm" ||
		r.In != "1500000" || r.Out != "375000" || r.Cost != "15.000000" || r.PerIn != "10.000000" || r.PerOut != "40.000000" {
		t.Errorf("row %+v, want tenant-0 infer llama vllm, 1500000 in, 375000 out, cost 15.000000, 10.000000 per M input, 40.000000 per M output", r)
	}

	clock = ended
	endedJSON := same("month ended")
	_, endedPage := getBody(t, hs.URL+"/reports/"+month)

	stop()
	if resp, got := getBody(t, hs.URL+"/reports/"+month+".json"); resp.StatusCode != 200 || !bytes.Equal(got, endedJSON) {
		t.Errorf("ended month, Prometheus gone: %d, and not the section served before (kept two minutes per price book)", resp.StatusCode)
	}
	if _, got := getBody(t, hs.URL+"/reports/"+month); !bytes.Equal(got, endedPage) {
		t.Error("ended month, Prometheus gone: the page differs from the one served before")
	}
	clock = running
	resp, page := getBody(t, hs.URL+"/reports/"+month)
	if resp.StatusCode != 200 || bytes.Contains(page, []byte(`id="tokens"`)) ||
		!bytes.Contains(page, []byte(`id="tokens-unavailable">Cost per token is not shown: Prometheus `+prom+` did not answer its token queries`)) ||
		!strings.Contains(resp.Header.Get("X-Gpuledger-Tokens-Unavailable"), "did not answer") {
		t.Errorf("running month, Prometheus gone: %d, header %q; want 200 without the section, saying why", resp.StatusCode,
			resp.Header.Get("X-Gpuledger-Tokens-Unavailable"))
	}
	want := cliReport(t, db, prices, month, "csv")
	if resp, got := getBody(t, hs.URL+"/reports/"+month+".csv"); resp.StatusCode != 200 || !bytes.Equal(got, want) {
		t.Error("Prometheus gone: the month's CSV is not report's")
	}
	_, metrics := getBody(t, hs.URL+"/metrics")
	if !bytes.Contains(metrics, []byte("gpuledger_serve_prometheus_query_failures_total 1\n")) {
		t.Error("/metrics does not count the one failed token query")
	}
}

// BenchmarkServeMonthPageTokens: what --prometheus adds to the running
// month's page, built afresh on every request (rebuildRunningMonth: the
// server's ten-second reuse of the running month is off): the same page through the server's handler without and with its
// token section, against tokenPrometheus's real Prometheus (one pod, two
// samples a series: the ten queries' round trips and the join, not
// Prometheus decoding a month of samples, which BenchmarkTokenQueryMonth
// of billing/tokencost measures).
//
//	go test -run '^$' -bench ServeMonthPageTokens -benchtime 50x ./cmd/gpuledger
func BenchmarkServeMonthPageTokens(b *testing.B) {
	prom, _, _ := tokenPrometheus(b)
	if prom == "" {
		return
	}
	db, month := currentMonthLedger(b, time.Now())
	prices := filepath.Join("..", "..", "deploy", "prices.yaml")
	opt, err := withPrometheus(prom, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		opts   []func(*web.Config)
		marker string
	}{{"page", nil, "Finance lines"}, {"page-with-tokens", []func(*web.Config){opt}, `<td class="muted">vllm</td>`}} {
		srv, err := newWebServer(db, web.BookFile(prices), 24, 0, append(c.opts, rebuildRunningMonth)...)
		if err != nil {
			b.Fatal(err)
		}
		h := srv.Handler()
		b.Run(c.name, func(b *testing.B) {
			var body string
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/reports/"+month, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("/reports/%s: %d %.300s", month, rec.Code, rec.Body.String())
				}
				body = rec.Body.String()
			}
			if !strings.Contains(body, c.marker) {
				b.Fatalf("/reports/%s lacks %s", month, c.marker)
			}
		})
		srv.Close()
	}
}
