package clickhouse

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/web"
)

// keepOpen hands the benchmark's store to the web server without letting
// it close the store. It embeds the *Store, not a ledger.Store, so the
// server sees every ability of it (closed months among them: through a
// ledger.Store the month page answered 503).
type keepOpen struct{ *Store }

func (keepOpen) Close() error { return nil }

// BenchmarkServeMonthClickHouse: gpuledger serve's month page
// (/reports/2026-03, the HTML report) of benchFleet's March out of
// ClickHouse, 100 GPUs unless GPULEDGER_BENCH_GPUS says otherwise (target:
// under 1 s). Each request builds the report afresh: each is a new
// server's first (a server reuses an ended month's report). The
// month's money is checked against the fleet priced by hand.
//
//	go test -run '^$' -bench ServeMonthClickHouse -benchtime 10x -timeout 30m ./ledger/clickhouse
func BenchmarkServeMonthClickHouse(b *testing.B) {
	ctx := context.Background()
	f, s, from, to, book := focusBenchMonth(ctx, b)
	clock := to.Add(24 * time.Hour)
	// A new server per request: a server reuses an ended month's report
	// for two minutes of wall-clock time.
	handler := func() http.Handler {
		srv, err := web.New(web.Config{
			Open:   func(context.Context) (ledger.Store, error) { return keepOpen{s}, nil },
			Prices: web.FixedBook(book), Now: func() time.Time { return clock }, AdviceRefresh: -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		return srv.Handler()
	}
	// The same work without the server: what report --format html does.
	b.Run("report-html", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := report.Build(ctx, s, book, from, to)
			if err != nil {
				b.Fatal(err)
			}
			if err := report.WriteHTML(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("month-page", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			h := handler()
			b.StartTimer()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/reports/2026-03", nil))
			if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
				b.Fatalf("/reports/2026-03: %d %.300s", rec.Code, rec.Body.String())
			}
		}
		b.StopTimer()
		// The page's money is the fleet's, priced by hand.
		r, err := report.Build(ctx, s, book, from, to)
		if err != nil {
			b.Fatal(err)
		}
		f.checkReport(b, r, from, to)
		rec := httptest.NewRecorder()
		handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/reports/2026-03", nil))
		if total := r.Money(r.Total); !strings.Contains(rec.Body.String(), grouped(total)) {
			b.Fatalf("the month page does not show the total %s", total)
		}
		b.ReportMetric(float64(f.minutes(from, to)*f.rowsPerMinute()), "ledger-rows")
	})
}

// grouped writes "178560.00" as the report's page does, "178,560.00".
func grouped(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + "." + frac
}
