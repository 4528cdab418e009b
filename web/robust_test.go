package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/tokencost"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// overflowingProm is a tenant's hostile token counters: the pod
// ml/trainer-0 of testLedger served two models, each 1.7e308 input tokens,
// so the pod's total overflows a float64 to +Inf. tokencost drops such a
// pod with a note naming it (docs/tokens.md, "Absurd counts"), and the rest
// of the section stands.
type overflowingProm struct{ queries atomic.Int32 }

func (p *overflowingProm) Query(_ context.Context, expr string, _ time.Time) ([]tokencost.Sample, error) {
	p.queries.Add(1)
	vllm := tokencost.Servers[0]
	if !strings.Contains(expr, vllm.Input) {
		return nil, nil
	}
	return []tokencost.Sample{
		{Labels: map[string]string{"namespace": "ml", "pod": "trainer-0", vllm.ModelLabel: "a"}, Value: 1.7e308},
		{Labels: map[string]string{"namespace": "ml", "pod": "trainer-0", vllm.ModelLabel: "b"}, Value: 1.7e308},
	}, nil
}

func (p *overflowingProm) String() string { return "http://prometheus.test:9090" }

// failingProm answers every token query with an error of its own (not the
// ledger's).
type failingProm struct{}

func (failingProm) Query(context.Context, string, time.Time) ([]tokencost.Sample, error) {
	return nil, errors.New("bad_data: parse error at char 1")
}

func (failingProm) String() string { return "http://prometheus.test:9090" }

var ledgerFailuresPattern = regexp.MustCompile(`(?m)^gpuledger_serve_ledger_read_failures_total (\S+)$`)

// Tenants' numbers and a token section that fails for a reason of its own
// leave the month's page whole: 200 with October's 1,488.00 (744 GPU-hours
// x 2.00) and no ledger failure counted. Absurd counts are left out with a
// note naming the pod; a failing section is replaced by one line saying
// why, in the page and in a header, counted with the token failures.
func TestTokenSectionErrorIsNotTheBills(t *testing.T) {
	db, prices := testLedger(t)
	bill := func(body string) bool { return strings.Contains(body, "1,488.00") || strings.Contains(body, "1488.00") }

	hs := newTestServer(t, fileOpener(db), prices, func(c *Config) { c.Prometheus = &overflowingProm{} })
	for _, p := range []string{"/reports/2026-10", "/reports/2026-10.json"} {
		resp, body := fetch(t, hs.URL+p)
		if resp.StatusCode != 200 || !bill(body) || !strings.Contains(body, "trainer-0") {
			t.Errorf("absurd counts, %s: %d; want 200 with the bill and a note naming ml/trainer-0\n%.300s", p, resp.StatusCode, body)
		}
		if why := resp.Header.Get("X-Gpuledger-Tokens-Unavailable"); why != "" {
			t.Errorf("absurd counts, %s: the section is missing (%q); tenants' numbers must only be left out", p, why)
		}
	}
	if _, page := fetch(t, hs.URL+"/reports/2026-10"); !strings.Contains(page, `id="tokens-notes"`) {
		t.Error("absurd counts: the page lists no notes")
	}
	_, metrics := fetch(t, hs.URL+"/metrics")
	if m := ledgerFailuresPattern.FindStringSubmatch(metrics); m == nil || m[1] != "0" {
		t.Errorf("absurd counts: ledger failures %v, want 0", m)
	}

	hs = newTestServer(t, fileOpener(db), prices, func(c *Config) { c.Prometheus = failingProm{} })
	for _, p := range []string{"/reports/2026-10", "/reports/2026-10.json"} {
		resp, body := fetch(t, hs.URL+p)
		why := resp.Header.Get("X-Gpuledger-Tokens-Unavailable")
		if resp.StatusCode != 200 || !bill(body) || why == "" || strings.Contains(why, "\n") {
			t.Errorf("failing section, %s: %d, header %q; want 200 with the bill and the reason\n%.300s", p, resp.StatusCode, why, body)
		}
		if strings.HasSuffix(p, "10") && !strings.Contains(body, `id="tokens-unavailable">`) {
			t.Errorf("failing section, %s does not say why the section is missing", p)
		}
	}
	_, metrics = fetch(t, hs.URL+"/metrics")
	if m := ledgerFailuresPattern.FindStringSubmatch(metrics); m == nil || m[1] != "0" {
		t.Errorf("failing section: ledger failures %v, want 0: the token section's failure is not the ledger's", m)
	}
	if m := failuresPattern.FindStringSubmatch(metrics); m == nil || m[1] != "2" {
		t.Errorf("failing section: token failures %v, want 2 (one per page asked)", m)
	}
}

// Twenty readers of an ended month's page at once share one set of token
// queries (tokencost's ten: two per server), and the running month's
// section is not read again within runningTTL.
func TestTokenQueriesAreShared(t *testing.T) {
	db, prices := testLedger(t)
	prom := &overflowingProm{}
	hs := newTestServer(t, fileOpener(db), prices, func(c *Config) { c.Prometheus = prom })
	perMonth := int32(2 * len(tokencost.Servers))
	for _, month := range []string{"2026-10", "2026-11"} {
		prom.queries.Store(0)
		// The section fails (its tokens cannot be priced), so nothing is
		// kept: only requests at the same time share its queries. A first
		// request builds the month's report, so the twenty race only on
		// the tokens.
		fetch(t, hs.URL+"/reports/"+month+".csv")
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 20 {
			wg.Go(func() {
				<-start
				resp, err := http.Get(hs.URL + "/reports/" + month)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			})
		}
		close(start)
		wg.Wait()
		if n := prom.queries.Load(); n < perMonth || n > 20*perMonth/2 {
			t.Errorf("%s: 20 readers at once sent %d token queries, want about %d (shared)", month, n, perMonth)
		}
	}
}

// fullStore is a store with the abilities a report requires of it, which
// a wrapper must pass on (report.Build reads quota changes, node labels
// and coverage, and fails naming a store without them).
type fullStore interface {
	ledger.Store
	ledger.QuotaReader
	ledger.NodeLabelReader
	ledger.CoverageReader
	ledger.ClosingStore
}

// full is st with the abilities a report requires.
func full(st ledger.Store) (fullStore, error) {
	f, ok := st.(fullStore)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("ledger %T lacks quota changes, node labels, coverage or closings", st)
	}
	return f, nil
}

// countingStore is the real embedded ledger with its reads counted.
type countingStore struct {
	fullStore
	reads *atomic.Int32
}

func (c countingStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	c.reads.Add(1)
	return c.fullStore.Aggregate(ctx, q)
}

// With data in 119 of the last 120 months, the index's second view
// within the caches' lifetime reads the ledger not at all: every month's
// report is kept (the cache holds every month the index can show), and
// the list of months too.
func TestIndexDoesNotRebuildEveryMonth(t *testing.T) {
	dir := t.TempDir()
	db, prices := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte(testBook), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []attribution.Row
	for i := 1; i < MaxMonths; i++ {
		h := time.Date(2026, 11-time.Month(i), 3, 0, 0, 0, 0, time.UTC)
		c := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", GPUModel: "A100-SXM4-80GB",
			SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured", Kind: attribution.KindContainer, Namespace: "ml", Pod: "p", PodUID: "u",
			Container: "main", Team: "ml", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600}
		rows = append(rows, c)
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var reads atomic.Int32
	open := func(ctx context.Context) (ledger.Store, error) {
		st, err := fileOpener(db)(ctx)
		if err != nil {
			return nil, err
		}
		f, err := full(st)
		if err != nil {
			return nil, err
		}
		return countingStore{f, &reads}, nil
	}
	hs := newTestServer(t, open, prices, func(c *Config) { c.Months = MaxMonths })
	resp, body := fetch(t, hs.URL+"/")
	if resp.StatusCode != 200 || strings.Count(body, `<td class="nowrap"><a href="reports/`) != MaxMonths-1 || !strings.Contains(body, "<b>2.00</b>") {
		t.Fatalf("index: %d, %d months, want 119 of 2.00 (one GPU-hour at 2.00)\n%.500s", resp.StatusCode, strings.Count(body, `<td class="nowrap"><a href="reports/`), body)
	}
	first := reads.Load()
	if first < MaxMonths-1 {
		t.Fatalf("the first view read the ledger %d times, fewer than its 119 months: is the counter wired?", first)
	}
	fetch(t, hs.URL+"/")
	if n := reads.Load() - first; n != 0 {
		t.Errorf("the second view read the ledger %d times, want 0 (every month kept)", n)
	}
}

// serve only reads: other methods are 405 with an Allow header, and a
// HEAD answers the page's type without building the page (no ledger
// opened).
func TestMethodsAndHead(t *testing.T) {
	db, prices := testLedger(t)
	var opens atomic.Int32
	open := func(ctx context.Context) (ledger.Store, error) { opens.Add(1); return fileOpener(db)(ctx) }
	hs := newTestServer(t, open, prices)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, p := range []string{"/", "/reports/2026-10", "/metrics", "/nowhere"} {
			req, _ := http.NewRequest(m, hs.URL+p, strings.NewReader("x"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow \"GET, HEAD\"", m, p, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
	}
	for p, ctype := range map[string]string{"/": "text/html", "/reports/2026-10": "text/html", "/reports/2026-10.csv": "text/csv",
		"/reports/2026-10.json": "application/json", "/advice/2026-10": "text/html"} {
		resp, err := http.Head(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
			t.Errorf("HEAD %s: %d %q", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if resp, _ := http.Head(hs.URL + "/reports/2026-13"); resp.StatusCode != 400 {
		t.Errorf("HEAD of a month that is not one: %d, want 400", resp.StatusCode)
	}
	if n := opens.Load(); n != 0 {
		t.Errorf("HEADs opened the ledger %d times, want 0: a HEAD builds nothing", n)
	}
}

// Credentials in the Prometheus URL are never echoed (page, header, log),
// and a broken price book's 500 does not show where the book lies.
func TestErrorsTellNothingSecret(t *testing.T) {
	db, prices := testLedger(t)
	c, err := tokencost.NewClient("http://alice-cred:s3cret@127.0.0.1:1/", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	hs := newTestServer(t, fileOpener(db), prices, func(cfg *Config) { cfg.Prometheus, cfg.Log = c, log })
	resp, body := fetch(t, hs.URL+"/reports/2026-10")
	all := body + resp.Header.Get("X-Gpuledger-Tokens-Unavailable")
	logMu.Lock()
	all += logs.String()
	logMu.Unlock()
	if resp.StatusCode != 200 || !strings.Contains(body, "127.0.0.1:1") {
		t.Errorf("Prometheus refused: %d\n%.300s", resp.StatusCode, body)
	}
	for _, secret := range []string{"alice-cred", "s3cret"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q echoed:\n%s", secret, all)
		}
	}
	if err := os.WriteFile(prices, []byte("currency: USD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, body = fetch(t, hs.URL+"/reports/2026-10")
	if resp.StatusCode != 500 || !strings.Contains(body, "price book") || strings.Contains(body, filepath.Dir(prices)) {
		t.Errorf("a broken book: %d, want 500 naming the book but not its path %s\n%.500s", resp.StatusCode, filepath.Dir(prices), body)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		`Get "http://u:p@h:9090/api/v1/query?query=x&token=t": refused`: `Get "http://h:9090/api/v1/query": refused`,
		"clickhouse://default:pw@ch:9000/gpuledger?secret=1 down":       "clickhouse://ch:9000/gpuledger down",
		"no URL here":                      "no URL here",
		"https://h/p#frag and http://x/?a": "https://h/p and http://x/",
	} {
		if got := RedactURLs(in); got != want {
			t.Errorf("RedactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}

// panickyStore is the real ledger whose month aggregates panic, as a
// defect in the report's arithmetic would.
type panickyStore struct{ fullStore }

func (p panickyStore) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.Bucket != ledger.BucketNone {
		panic("a defect")
	}
	return p.fullStore.Aggregate(ctx, q)
}

// A computation that panics is the page's 500, with the server still up:
// the computations shared between requests run outside net/http's own
// recovery, so they recover themselves.
func TestPanicIsAPageError(t *testing.T) {
	db, prices := testLedger(t)
	open := func(ctx context.Context) (ledger.Store, error) {
		st, err := fileOpener(db)(ctx)
		if err != nil {
			return nil, err
		}
		f, err := full(st)
		if err != nil {
			return nil, err
		}
		return panickyStore{f}, nil
	}
	hs := newTestServer(t, open, prices)
	resp, err := http.Get(hs.URL + "/reports/2026-10.csv")
	if err != nil {
		t.Fatalf("the page: %v, want a 500 answer", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("the page: %d, want 500", resp.StatusCode)
	}
	if resp, _ := fetch(t, hs.URL+"/readyz"); resp.StatusCode != 200 {
		t.Errorf("/readyz after the panic: %d, want 200", resp.StatusCode)
	}
}
