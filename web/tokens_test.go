package web

import (
	"errors"
	"net"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuledger/gpuledger/billing/tokencost"
)

// newTokenServer is newTestServer with the month pages' token queries sent
// to prom, bounded by timeout.
func newTokenServer(t *testing.T, db, prices, prom string, timeout time.Duration) *httptest.Server {
	t.Helper()
	c, err := tokencost.NewClient(prom, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, fileOpener(db), prices, func(cfg *Config) { cfg.Prometheus, cfg.PrometheusTimeout = c, timeout })
}

var failuresPattern = regexp.MustCompile(`(?m)^gpuledger_serve_prometheus_query_failures_total (\S+)$`)

// A Prometheus that refuses connections, or accepts and never answers,
// does not break the month's page: HTML and JSON answer 200 with the
// chargeback (October: 744 GPU-hours x 2.00 = 1,488.00), without a cost
// per token section; the page says why in one line, a header says it to
// programs, and /metrics counts each failure (a failure is not cached:
// every page asks again). The files that never carry tokens (CSV) are
// untouched.
func TestMonthPageWithoutPrometheus(t *testing.T) {
	db, prices := testLedger(t)
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Accepted connections are held open, unanswered, until the test ends.
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		hung.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	for _, c := range []struct {
		name, addr, why string
	}{
		{"refused", refused, "is it reachable?"},
		{"silent", hung.Addr().String(), "deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := newTokenServer(t, db, prices, "http://"+c.addr, time.Second)
			for i, p := range []string{"/reports/2026-10", "/reports/2026-10.json", "/reports/2026-11"} {
				resp, body := fetch(t, hs.URL+p)
				note := resp.Header.Get("X-Gpuledger-Tokens-Unavailable")
				if resp.StatusCode != 200 || !strings.Contains(note, "Prometheus http://"+c.addr+" did not answer") || !strings.Contains(note, c.why) {
					t.Errorf("%s: %d, tokens header %q: want 200 and why (%q)", p, resp.StatusCode, note, c.why)
				}
				if strings.Contains(body, `id="tokens"`) || strings.Contains(body, `"tokens"`) {
					t.Errorf("%s has a tokens section", p)
				}
				if i == 0 {
					if !strings.Contains(body, "1,488.00") && !strings.Contains(body, "1488.00") {
						t.Errorf("%s lacks October's total 1,488.00", p)
					}
					line := regexp.MustCompile(`<p class="none" id="tokens-unavailable">Cost per token is not shown: Prometheus http://` +
						regexp.QuoteMeta(c.addr) + ` did not answer its token queries \([^<\n]*\)\. The rest of the month is complete; reload to try again\.</p>`)
					if !line.MatchString(body) {
						t.Errorf("%s does not say in one line why the cost per token is missing", p)
					}
				}
			}
			if resp, _ := fetch(t, hs.URL+"/reports/2026-10.csv"); resp.Header.Get("X-Gpuledger-Tokens-Unavailable") != "" {
				t.Error("the CSV, which carries no tokens, says they are unavailable")
			}
			_, metrics := fetch(t, hs.URL+"/metrics")
			if m := failuresPattern.FindStringSubmatch(metrics); m == nil || m[1] != "3" {
				t.Errorf("failures on /metrics: %v, want 3 (one per page asked)", m)
			}
			if !strings.Contains(metrics, "gpuledger_serve_prometheus_query_success_timestamp_seconds 0") {
				t.Error("/metrics lacks the token queries' last success (0: never)")
			}
		})
	}
}

// Without Config.Prometheus nothing of the above shows: no header, no
// line, no series.
func TestMonthPageWithoutTokensConfigured(t *testing.T) {
	db, prices := testLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	resp, body := fetch(t, hs.URL+"/reports/2026-10")
	if resp.StatusCode != 200 || resp.Header.Get("X-Gpuledger-Tokens-Unavailable") != "" || strings.Contains(body, "tokens") {
		t.Errorf("without Prometheus: %d, header %q, or the page mentions tokens", resp.StatusCode, resp.Header.Get("X-Gpuledger-Tokens-Unavailable"))
	}
	if _, metrics := fetch(t, hs.URL+"/metrics"); strings.Contains(metrics, "gpuledger_serve_prometheus") {
		t.Error("/metrics has the token queries' series without Prometheus")
	}
}

// The reason a page gives is one printable line of bounded length,
// whatever the error says (Prometheus's own error text included).
func TestTokensUnavailableIsOneBoundedLine(t *testing.T) {
	long := errors.New("prometheus refused q (HTTP 422):\r\nexecution:\t" + strings.Repeat("é", 400) + "\x00\x1b[31m")
	got := tokensUnavailable("http://prom:9090", long)
	if strings.ContainsAny(got, "\r\n\t\x00\x1b") || !utf8.ValidString(got) || len(got) > maxNote+200 ||
		!strings.HasPrefix(got, "Prometheus http://prom:9090 did not answer its token queries (prometheus refused q (HTTP 422): execution: éé") {
		t.Errorf("reason %q: want one printable line of at most %d bytes of the error", got, maxNote)
	}
}
