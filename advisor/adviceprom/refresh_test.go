package adviceprom

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// scrape is what a Refresher serves, as Prometheus scrapes it.
func scrape(t *testing.T, r *Refresher) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("scrape: %d, Content-Type %q", rec.Code, ct)
	}
	var b strings.Builder
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != rec.Body.String() {
		t.Fatalf("WriteTo and ServeHTTP differ:\n%s\n---\n%s", b.String(), rec.Body.String())
	}
	return rec.Body.String()
}

// The refresher serves the newest advice and its freshness: nothing but
// a zero timestamp before the first refresh; a failed refresh keeps the
// previous advice and is counted, unless it was cut short by shutdown
// (canceled); one that ran out of time is a failure.
func TestRefresherKeepsNewestAdvice(t *testing.T) {
	r := &Refresher{}
	got := scrape(t, r)
	if !strings.Contains(got, "\ngpuledger_advice_refresh_timestamp_seconds 0\n") || !strings.Contains(got, "\ngpuledger_advice_refresh_failures_total 0\n") ||
		strings.Contains(got, "gpuledger_advice_saving_total") {
		t.Fatalf("before the first refresh:\n%s", got)
	}
	// 12345 cents in EUR: 123.45; the period ends 2026-12-01T00:00:00Z,
	// 1796083200 (date -u -d 2026-12-01 +%s).
	plan := &advise.Plan{From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Currency: pricebook.Currency{Code: "EUR", MinorUnit: 2}, SavingMinor: 12345}
	at := time.Date(2026, 11, 20, 10, 30, 0, 500e6, time.UTC) // 1795170600.5 (date -u -d 2026-11-20T10:30:00Z +%s)
	ctx := context.Background()
	if err := r.Refresh(ctx, at, func(context.Context) (*advise.Plan, error) { return plan, nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{`gpuledger_advice_saving_total{currency="EUR"} 123.45`, "gpuledger_advice_period_end_timestamp_seconds 1.7960832e+09",
		"gpuledger_advice_refresh_timestamp_seconds 1.7951706005e+09", "gpuledger_advice_refresh_failures_total 0"}
	check := func(when string, failures int) {
		t.Helper()
		got := scrape(t, r)
		want[3] = "gpuledger_advice_refresh_failures_total " + string(rune('0'+failures))
		for _, w := range want {
			if !strings.Contains(got, "\n"+w+"\n") {
				t.Errorf("%s: no line %q in:\n%s", when, w, got)
			}
		}
	}
	check("after a refresh", 0)

	failed := errors.New("no data in the window")
	fail := func(context.Context) (*advise.Plan, error) { return nil, failed }
	if err := r.Refresh(ctx, at.Add(time.Hour), fail); !errors.Is(err, failed) {
		t.Fatalf("failed refresh: %v", err)
	}
	check("after a failed refresh", 1)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Refresh(canceled, at.Add(2*time.Hour), fail); err == nil {
		t.Fatal("a refresh that failed when canceled succeeded")
	}
	check("after a refresh cut short by shutdown", 1)

	late, cancel := context.WithDeadline(ctx, at)
	defer cancel()
	if err := r.Refresh(late, at.Add(3*time.Hour), fail); err == nil {
		t.Fatal("a refresh that ran out of time succeeded")
	}
	check("after a refresh that ran out of time", 2)
}

// Every refreshes at once, then every interval, and returns when ctx ends.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, 10*time.Millisecond, func() {
			if n.Add(1) == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d refreshes, want 3 (the third cancels)", got)
	}
}
