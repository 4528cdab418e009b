package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuledger/gpuledger/ledger"
)

// gatherText is reg's families whose names start with prefix, in the
// text format.
func gatherText(t *testing.T, g prometheus.Gatherer, prefix string) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), prefix) {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}

// Serve's collectors registered as one gather what they gather registered
// one by one: the same families, and the same text for serve's own series
// (the Go and process series change between two gatherings).
func TestMetricsGatheredAsOneCollector(t *testing.T) {
	db, prices := testLedger(t)
	s, err := New(Config{Open: fileOpener(db), Prices: BookFile(prices), Now: func() time.Time { return testNow }, AdviceRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Run(context.Background()) // the month-to-date charges
	s.m.requests.WithLabelValues("report", "200").Add(3)
	apart := prometheus.NewRegistry()
	for _, c := range s.m.own {
		apart.MustRegister(c)
	}
	names := func(g prometheus.Gatherer) string {
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, mf := range mfs {
			out = append(out, fmt.Sprintf("%s %s", mf.GetName(), mf.GetType()))
		}
		return strings.Join(out, "\n")
	}
	if got, want := names(s.m.reg), names(apart); got != want || !strings.Contains(got, "go_goroutines") || !strings.Contains(got, "process_cpu_seconds_total") {
		t.Errorf("families gathered as one:\n%s\nwant (one by one):\n%s", got, want)
	}
	got, want := gatherText(t, s.m.reg, "gpuledger_"), gatherText(t, apart, "gpuledger_")
	// November to date: 14 days of one A100 at 2.00 an hour, 672.00.
	if got != want || !strings.Contains(got, `gpuledger_charge_month_to_date{cluster="default",currency="USD",gpu_model="A100-SXM4-80GB",team="ml"} 672`) ||
		!strings.Contains(got, `gpuledger_serve_requests_total{code="200",handler="report"} 3`) {
		t.Errorf("gathered as one:\n%s\nwant (one by one, and November's 672.00 for ml):\n%s", got, want)
	}
}

// The advice's freshness series, written once per change rather than on
// every scrape, follow each refresh: a failed one counts, a successful one
// sets the time.
func TestMetricsRefreshSeriesFollowTheAdvice(t *testing.T) {
	db, prices := testLedger(t)
	var fail atomic.Bool
	fail.Store(true)
	open := func(ctx context.Context) (ledger.Store, error) {
		if fail.Load() {
			return nil, errors.New("connection refused")
		}
		return fileOpener(db)(ctx)
	}
	s, err := New(Config{Open: open, Prices: BookFile(prices), Now: func() time.Time { return testNow }, AdviceRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scrape := func() string {
		rec := httptest.NewRecorder()
		s.m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	for i, step := range []struct {
		fail      bool
		ts, fails string
	}{
		{true, "0", "1"},
		// testNow, 15 November 2026 06:00 UTC: 1,794,722,400 s.
		{false, "1.7947224e+09", "1"},
		{true, "1.7947224e+09", "2"},
	} {
		fail.Store(step.fail)
		if i == 2 {
			// The advice just built would be reused, on the store already
			// open: retire both, so the refresh opens the ledger again.
			s.Close()
			s.cfg.RunningTTL = -1
		}
		_ = s.RefreshAdvice(context.Background())
		got := scrape()
		for _, want := range []string{"gpuledger_advice_refresh_timestamp_seconds " + step.ts, "gpuledger_advice_refresh_failures_total " + step.fails} {
			if !strings.Contains(got, want+"\n") {
				t.Errorf("after refresh %d: lacks %q:\n%s", i+1, want, got)
			}
		}
	}
}
