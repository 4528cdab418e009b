package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/web"
)

// serveNow is the clock of the serve tests: 2 November 2026, noon UTC,
// so the demo fleet's two backfilled days (31 October and 1 November)
// make two months, both partial.
var serveNow = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// serveFixture backfills the demo fleet (a simulated node per sharing
// mechanism, as `gpuledger demo` runs it) into an embedded ledger and
// copies the shipped price book beside it: 31 October and 1 November, or
// GPULEDGER_SERVE_DAYS days to 1 November.
func serveFixture(t *testing.T) (db, prices string) {
	t.Helper()
	if testing.Short() {
		t.Skip("simulates the demo fleet")
	}
	now = func() time.Time { return serveNow }
	t.Cleanup(func() { now = time.Now })
	dir := t.TempDir()
	db, prices = filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prices, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	days := 2
	if v, err := strconv.Atoi(os.Getenv("GPULEDGER_SERVE_DAYS")); err == nil && v > days {
		days = v // longer histories for the docs' screenshots
	}
	if _, err := backfill(context.Background(), st, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -days+1), days); err != nil {
		t.Fatal(err)
	}
	return db, prices
}

// startServe serves the web app over dsn and prices on a test server.
func startServe(t *testing.T, dsn, prices string, opts ...func(*web.Config)) *httptest.Server {
	t.Helper()
	srv, err := newWebServer(dsn, web.BookFile(prices), 24, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// rebuildRunningMonth makes a test's server rebuild the running month on
// every request instead of reusing it for ten seconds, so a change under
// it (an outage, Prometheus gone) shows on the next request.
func rebuildRunningMonth(c *web.Config) { c.RunningTTL = -1 }

func getBody(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// cliReport is what `gpuledger report` writes to stdout.
func cliReport(t *testing.T, dsn, prices, month, format string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"report", "--ledger", dsn, "--prices", prices, "--period", month, "--format", format}, &out); err != nil {
		t.Fatalf("report %s %s: %v", month, format, err)
	}
	return out.Bytes()
}

// The files and pages of /reports are byte for byte what `gpuledger
// report` writes for the same ledger, book and month (the page with
// serve's header around it); a month not yet
// ended says so in a header and in the file's name.
func checkReportsMatchCLI(t *testing.T, base, dsn, prices string) {
	t.Helper()
	for _, month := range []string{"2026-10", "2026-11"} {
		var partial string
		for _, f := range []struct{ suffix, format string }{{"", "html"}, {".csv", "csv"}, {".json", "json"}, {".focus.csv", "focus"}} {
			want := cliReport(t, dsn, prices, month, f.format)
			resp, got := getBody(t, base+"/reports/"+month+f.suffix)
			if f.suffix == "" {
				got = web.WithoutNav(got) // serve's header around the report's page
			}
			if resp.StatusCode != 200 || !bytes.Equal(got, want) {
				t.Errorf("/reports/%s%s: %d, %d bytes; report --format %s wrote %d bytes that differ", month, f.suffix, resp.StatusCode, len(got), f.format, len(want))
			}
			if f.format == "json" {
				var doc struct {
					Partial string `json:"partial_note"`
				}
				_ = json.Unmarshal(want, &doc)
				partial = doc.Partial
			}
			if h := resp.Header.Get("X-Gpuledger-Partial"); h == "" || (partial != "" && h != partial) {
				t.Errorf("/reports/%s%s: partial header %q, the report's note %q", month, f.suffix, h, partial)
			}
			if f.suffix != "" && !strings.Contains(resp.Header.Get("Content-Disposition"), "gpuledger-chargeback-"+month+"-partial"+f.suffix) {
				t.Errorf("/reports/%s%s: Content-Disposition %q does not name a partial file", month, f.suffix, resp.Header.Get("Content-Disposition"))
			}
		}
		if partial == "" {
			t.Errorf("%s: the CLI's JSON does not say partial", month)
		}
	}
}

func TestServeMatchesReport(t *testing.T) {
	db, prices := serveFixture(t)
	hs := startServe(t, db, prices)
	checkReportsMatchCLI(t, hs.URL, db, prices)

	// What is not a month, or has no bill, is said so.
	for path, want := range map[string]struct {
		code int
		text string
	}{
		"/reports/2026-13":     {400, "is not a month"},
		"/reports/november":    {400, "is not a month"},
		"/reports/2026-1.csv":  {400, "is not a month"},
		"/advice/2026-00.json": {400, "is not a month"},
		"/reports/2025-01":     {404, "the ledger has no data in it"},
		"/reports/2025-01.csv": {404, "the ledger has no data in it"},
		"/reports/2026-12":     {404, "has not started"},
		"/advice/2026-11.csv":  {404, "the advice is a page"},
		"/nothing":             {404, "no page at /nothing"},
	} {
		resp, body := getBody(t, hs.URL+path)
		if resp.StatusCode != want.code || !strings.Contains(string(body), want.text) {
			t.Errorf("%s: %d %q, want %d with %q", path, resp.StatusCode, body, want.code, want.text)
		}
	}

	// The index lists both months with the totals the CLI's JSON has,
	// and every link of every page answers 200.
	_, index := getBody(t, hs.URL+"/")
	for _, month := range []string{"2026-10", "2026-11"} {
		var doc struct {
			Total json.Number `json:"total"`
		}
		if err := json.Unmarshal(cliReport(t, db, prices, month, "json"), &doc); err != nil {
			t.Fatal(err)
		}
		row := regexp.MustCompile(`href="reports/` + month + `"><b>[^<]+</b></a>.*?<td class="num"[^>]*><b>([^<]+)</b>`).FindSubmatch(index)
		if row == nil || string(row[1]) != grouped(doc.Total.String()) {
			t.Errorf("index total of %s: %q, the report's %s", month, row, doc.Total)
		}
	}
	if !bytes.Contains(index, []byte(`<svg class="chart"`)) || !bytes.Contains(index, []byte(`<rect class="s-t1"`)) {
		t.Error("the index has no cost-per-team chart")
	}
	crawl(t, hs.URL)

	// Month-to-date charges on /metrics add up to November's total.
	var nov struct {
		Total float64 `json:"total"`
	}
	_ = json.Unmarshal(cliReport(t, db, prices, "2026-11", "json"), &nov)
	_, metrics := getBody(t, hs.URL+"/metrics")
	sum := 0.0
	for _, m := range regexp.MustCompile(`(?m)^gpuledger_charge_month_to_date\{[^}]*currency="USD"[^}]*\} (\S+)$`).FindAllSubmatch(metrics, -1) {
		var v float64
		fmt.Sscan(string(m[1]), &v)
		sum += v
	}
	if d := sum - nov.Total; d > 0.005 || d < -0.005 || nov.Total == 0 {
		t.Errorf("month-to-date charges add up to %.2f, the report's total is %.2f", sum, nov.Total)
	}
	for _, want := range []string{"gpuledger_build_info{", `gpuledger_serve_requests_total{code="200",handler="report"}`,
		`gpuledger_serve_requests_total{code="400",handler="report"}`, "gpuledger_serve_ledger_read_success_timestamp_seconds 1.79",
		"gpuledger_advice_refresh_timestamp_seconds"} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A price book change shows on the next request.
	data, _ := os.ReadFile(prices)
	changed := strings.Replace(string(data), "A100-SXM4-80GB: 2.40", "A100-SXM4-80GB: 3.10", 1)
	if changed == string(data) {
		t.Fatal("the shipped price book has no A100 rate of 2.40 to change")
	}
	if err := os.WriteFile(prices, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	_ = os.Chtimes(prices, later, later)
	want := cliReport(t, db, prices, "2026-10", "csv")
	if _, got := getBody(t, hs.URL+"/reports/2026-10.csv"); !bytes.Equal(got, want) || !bytes.Contains(got, []byte("3.10")) {
		t.Errorf("after the price book changed, /reports/2026-10.csv is not the new book's:\n%s", got)
	}
}

var hrefPattern = regexp.MustCompile(`href="([^"]+)"`)

// crawl follows every link of every page reachable from base (same host)
// and wants each to answer 200.
func crawl(t *testing.T, base string) {
	t.Helper()
	seen := map[string]bool{}
	queue := []string{base + "/"}
	for len(queue) > 0 && len(seen) < 200 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		resp, body := getBody(t, u)
		if resp.StatusCode != 200 {
			t.Errorf("link %s: %d", u, resp.StatusCode)
			continue
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			continue
		}
		page, _ := url.Parse(u)
		for _, m := range hrefPattern.FindAllSubmatch(body, -1) {
			ref, err := url.Parse(string(m[1]))
			if err != nil {
				t.Errorf("%s links to %q: %v", u, m[1], err)
				continue
			}
			next := page.ResolveReference(ref)
			next.Fragment = ""
			if next.Host == page.Host && !seen[next.String()] {
				queue = append(queue, next.String())
			}
		}
	}
	if len(seen) < 11 {
		t.Errorf("crawled %d pages and files, want the index, 2 months × 4 files and 2 advice pages at least", len(seen))
	}
}

// A ledger that cannot be read makes pages answer 503 and /readyz fail;
// once it is there, the next request serves it (no broken store kept).
func TestServeLedgerComesBack(t *testing.T) {
	db, prices := serveFixture(t)
	missing := filepath.Join(t.TempDir(), "ledger.db")
	hs := startServe(t, missing, prices)
	for _, p := range []string{"/", "/reports/2026-11", "/reports/2026-11.csv", "/readyz"} {
		resp, body := getBody(t, hs.URL+p)
		if resp.StatusCode != 503 || !strings.Contains(string(body), "cannot") {
			t.Errorf("%s with no ledger: %d %q", p, resp.StatusCode, body)
		}
	}
	if resp, _ := getBody(t, hs.URL+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz: %d: the server is alive without its ledger", resp.StatusCode)
	}
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(missing, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/readyz", "/", "/reports/2026-11"} {
		if resp, body := getBody(t, hs.URL+p); resp.StatusCode != 200 {
			t.Errorf("%s once the ledger is back: %d %q", p, resp.StatusCode, body)
		}
	}
}

func TestServeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prices", "p"}, "needs --ledger"},
		{[]string{"--ledger", "x"}, "needs --prices"},
		{[]string{"--ledger", "x", "--prices", "p", "--period", "2026-11"}, "-period"},
		{[]string{"--ledger", "x", "--prices", "p", "--months", "0"}, "--months 0"},
		{[]string{"--ledger", "x", "--prices", "p", "--advice-refresh", "5s"}, "--advice-refresh"},
		{[]string{"--ledger", "mysql://x", "--prices", "p"}, "unsupported scheme"},
		{[]string{"--ledger", "x", "--prices", "p", "--prometheus", "ftp://x"}, "want http(s)"},
		{[]string{"--ledger", "x", "--prices", "p", "--prometheus", "http://p:9090", "--prometheus-timeout", "0s"}, "--prometheus-timeout 0s"},
		{[]string{"--ledger", "x", "--prices", "p", "--prometheus", "http://p:9090", "--prometheus-timeout", "11m"}, "at most 10m"},
	} {
		err := run(context.Background(), append([]string{"serve"}, c.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v, want %q", c.args, err, c.want)
		}
	}
	f, err := parseServeFlags([]string{"--ledger", "x", "--prices", "p"})
	if err != nil || f.listen != ":8080" || f.adviceRefresh != time.Hour || f.prometheus != "" || f.promTimeout != time.Minute {
		t.Errorf("defaults %+v, %v: want --listen :8080, --advice-refresh 1h, no --prometheus, --prometheus-timeout 1m", f, err)
	}
	t.Setenv("GPULEDGER_PROMETHEUS", "http://prometheus.monitoring:9090")
	if f, err := parseServeFlags([]string{"--ledger", "x", "--prices", "p"}); err != nil || f.prometheus != "http://prometheus.monitoring:9090" {
		t.Errorf("GPULEDGER_PROMETHEUS: --prometheus %q, %v", f.prometheus, err)
	}
}
