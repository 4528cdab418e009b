package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// benchGPUs is the benchmark fleet: 100 A100s, each held all month by one
// container of one of ten teams, used 0-80% of the time.
const benchGPUs = 100

// benchLedger writes March 2026 of the fleet at one-minute rows (a
// container row and an idle row per GPU and minute: 8.9 million rows) into
// an embedded ledger. GPULEDGER_BENCH_SERVE_LEDGER=FILE keeps it for the
// next run (building it takes minutes).
func benchLedger(b *testing.B) string {
	b.Helper()
	path := os.Getenv("GPULEDGER_BENCH_SERVE_LEDGER")
	if path == "" {
		path = filepath.Join(b.TempDir(), "ledger.db")
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx := context.Background()
	st, err := filestore.OpenFile(ctx, path+".tmp", filestore.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for m := range 31 * 24 * 60 {
		start := from.Add(time.Duration(m) * time.Minute)
		for g := range benchGPUs {
			gpu := fmt.Sprintf("GPU-%03d", g)
			team := fmt.Sprintf("team-%d", g%10)
			used := 60 * float64(g%5) / 5
			base := attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: fmt.Sprintf("n%02d", g/8), GPUUUID: gpu,
				GPUModel: "A100-SXM4-80GB", SliceID: gpu, SharingMode: "exclusive", Method: "measured"}
			c, idle := base, base
			c.Kind, c.Namespace, c.Team, c.Pod, c.PodUID, c.Container = attribution.KindContainer, team, team, gpu+"-pod", gpu+"-uid", "main"
			c.AllocatedGPUSeconds, c.UsedGPUSeconds = 60, used
			idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 60-used
			rows = append(rows, c, idle)
		}
		if len(rows) >= 100000 {
			if err := st.Append(ctx, rows, nil); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := st.Append(ctx, rows, nil); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	for _, sfx := range []string{"", "-wal", "-shm"} {
		if _, err := os.Stat(path + ".tmp" + sfx); err == nil {
			if err := os.Rename(path+".tmp"+sfx, path+sfx); err != nil {
				b.Fatal(err)
			}
		}
	}
	return path
}

// BenchmarkServeMonthEmbedded: the month page (/reports/2026-03, the HTML
// report) of a 100-GPU March from the embedded store (target: under 1 s).
// Each request builds the report afresh: each is a new server's first
// (a server reuses an ended month's report for two minutes). The page's
// total is the fleet priced by hand: 100 GPUs x 744 h x 2.40 = 178,560.00.
//
//	GPULEDGER_BENCH_SERVE_LEDGER=/tmp/serve100.db go test -run '^$' -bench ServeMonthEmbedded -benchtime 10x -timeout 30m ./web
func BenchmarkServeMonthEmbedded(b *testing.B) {
	db := benchLedger(b)
	book, err := pricebook.Parse("bench.yaml", []byte("currency: USD\npolicy: allocation\nidle: shared\nrates:\n  A100-SXM4-80GB: 2.40\ndefaultRate: 2\n"))
	if err != nil {
		b.Fatal(err)
	}
	clock := time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC)
	b.Run("month-page", func(b *testing.B) {
		var body string
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s, err := New(Config{Open: fileOpener(db), Prices: FixedBook(book), AdviceRefresh: -1, Now: func() time.Time { return clock }})
			if err != nil {
				b.Fatal(err)
			}
			h := s.Handler()
			b.StartTimer()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/reports/2026-03", nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("/reports/2026-03: %d %.300s", rec.Code, rec.Body.String())
			}
			body = rec.Body.String()
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		b.StopTimer()
		if !strings.Contains(body, "178,560.00") {
			b.Fatal("the month page does not show 100 x 744 h x 2.40 = 178,560.00")
		}
	})
}
