package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/web"
)

// envBenchBodies names a directory BenchmarkAllocationClickHouse writes
// each case's last answer to (a file per case), so that two builds'
// answers can be compared byte for byte.
const envBenchBodies = "GPULEDGER_BENCH_BODIES"

// BenchmarkAllocationClickHouse: serve's allocation API and drill-down
// pages over benchFleet's March out of ClickHouse, 1,000 GPUs unless
// GPULEDGER_BENCH_GPUS says otherwise (targets: a month under 1 s, a day
// under 200 ms). The API keeps no answer between requests, so every
// request reads the ledger and prices afresh. The month by team is
// checked against the fleet priced by hand.
//
//	go test -run '^$' -bench AllocationClickHouse -benchtime 5x -timeout 30m ./ledger/clickhouse
func BenchmarkAllocationClickHouse(b *testing.B) {
	ctx := context.Background()
	f := benchFleet{gpus: benchGPUs(b)}
	s := benchStore(b, f)
	if err := f.ensure(ctx, b, s); err != nil {
		b.Fatal(err)
	}
	if err := s.RebuildRollups(ctx, f.from(), f.to()); err != nil {
		b.Fatal(err)
	}
	_, to := benchMonth(time.UTC)
	book := benchBook(b, "UTC")
	clock := to.Add(24 * time.Hour)
	// The server on the store itself, coverage included (read from the
	// coverage rollups of schema 9).
	handler := func(st ledger.Store) http.Handler {
		srv, err := web.New(web.Config{
			// The server is never closed, so it never closes the store.
			Open:   func(context.Context) (ledger.Store, error) { return st, nil },
			Prices: web.FixedBook(book), Now: func() time.Time { return clock }, AdviceRefresh: -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		return srv.Handler()
	}
	servers := map[string]http.Handler{"": handler(unclosed{s})}
	get := func(b *testing.B, h http.Handler, path string) []byte {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %.300s", path, rec.Code, rec.Body.String())
		}
		return rec.Body.Bytes()
	}
	day := "window=2026-03-10,2026-03-11"
	for _, prefix := range []string{""} {
		h := servers[prefix]
		for _, c := range []struct{ name, path string }{
			{"month-team", "/api/v1/allocation?window=2026-03&aggregate=team"},
			{"month-namespace-model-by-day", "/api/v1/allocation?window=2026-03&aggregate=namespace,gpu_model&step=day"},
			{"month-team-by-week", "/api/v1/allocation?window=2026-03&aggregate=team&step=week"},
			{"month-pod", "/api/v1/allocation?window=2026-03&aggregate=pod"},
			// The finest grouping there is: every container on its node.
			{"month-container", "/api/v1/allocation?window=2026-03&aggregate=container,node"},
			{"month-pod-by-day", "/api/v1/allocation?window=2026-03&aggregate=pod&step=day"},
			{"month-team-by-hour", "/api/v1/allocation?window=2026-03&aggregate=team&step=hour"},
			{"month-workload-of-a-team", "/api/v1/allocation?window=2026-03&aggregate=workload&filter=team:team-3"},
			{"month-node", "/api/v1/allocation?window=2026-03&aggregate=node"},
			{"month-container-of-a-namespace", "/api/v1/allocation?window=2026-03&aggregate=container&filter=namespace:ns-3"},
			{"page-month-teams", "/explore?window=2026-03"},
			{"page-month-pods-of-a-namespace", "/explore?window=2026-03&aggregate=pod&filter=team:team-3,namespace:ns-3"},
			{"day-team", "/api/v1/allocation?" + day + "&aggregate=team"},
			{"day-team-by-hour", "/api/v1/allocation?" + day + "&aggregate=team&step=hour"},
			{"day-pod", "/api/v1/allocation?" + day + "&aggregate=pod"},
			{"page-day-pods-of-a-namespace", "/explore?" + day + "&aggregate=pod&filter=team:team-3,namespace:ns-3"},
			{"day-node", "/api/v1/allocation?" + day + "&aggregate=node"},
			{"hour-container", "/api/v1/allocation?window=2026-03-10T10:00:00Z,2026-03-10T11:00:00Z&aggregate=container"},
		} {
			b.Run(prefix+c.name, func(b *testing.B) {
				var body []byte
				for i := 0; i < b.N; i++ {
					body = get(b, h, c.path)
				}
				b.ReportMetric(float64(len(body)), "bytes")
				if dir := os.Getenv(envBenchBodies); dir != "" {
					if err := os.WriteFile(filepath.Join(dir, c.name), body, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				if c.name != "month-team" {
					return
				}
				// The month by team is the fleet priced by hand
				// (checkReport's 74.90 per 25 GPUs an hour).
				var r struct{ Total json.Number }
				if err := json.Unmarshal(body, &r); err != nil {
					b.Fatal(err)
				}
				cents := int64(f.gpus/25) * 7490 * 744
				if want := fmt.Sprintf("%d.%02d", cents/100, cents%100); string(r.Total) != want {
					b.Fatalf("March by team: total %s, want %s", r.Total, want)
				}
			})
		}
	}
}

// unclosed is the store with every ability, that a server retiring it
// (after a failed read) does not close under the other server.
type unclosed struct{ *Store }

func (unclosed) Close() error { return nil }
