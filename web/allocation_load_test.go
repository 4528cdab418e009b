package web

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestAllocationLoadHoldsNoMemory: 8 clients on loopback ask the API and
// the drill-down pages (JSON, CSV, pages, bad input) 40 times each; the
// heap after the load, once collected, is within 4 MiB of the heap after
// a warm-up round, and no goroutine is left behind. Figures in
// BENCHMARKS.md.
func TestAllocationLoadHoldsNoMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test")
	}
	db, prices := exploreLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	paths := []string{
		"/api/v1/allocation?window=2026-11&aggregate=team",
		"/api/v1/allocation?window=2026-11&aggregate=namespace,pod&step=day",
		"/api/v1/allocation.csv?window=2026-11-01,2026-11-08&aggregate=workload&step=hour",
		"/api/v1/allocation?window=2026-11&aggregate=node,container&filter=team:ads",
		"/explore?window=2026-11",
		"/explore?window=2026-11&aggregate=pod&filter=team:ads,namespace:ads-web",
		"/api/v1/allocation?window=soon",
	}
	client := &http.Client{Timeout: time.Minute}
	round := func(clients, each int) error {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					p := paths[(c+i)%len(paths)]
					resp, err := client.Get(hs.URL + p)
					if err != nil {
						errs <- err
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if want := 200; p == paths[len(paths)-1] {
						want = 400
						if resp.StatusCode != want {
							errs <- fmt.Errorf("%s: %d", p, resp.StatusCode)
							return
						}
					} else if resp.StatusCode != want {
						errs <- fmt.Errorf("%s: %d", p, resp.StatusCode)
						return
					}
				}
			}(c)
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	heap := func() uint64 {
		var m runtime.MemStats
		for i := 0; i < 3; i++ {
			runtime.GC()
		}
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	if err := round(8, len(paths)); err != nil {
		t.Fatal(err)
	}
	client.CloseIdleConnections()
	before, goroutines := heap(), runtime.NumGoroutine()
	began := time.Now()
	if err := round(8, 40); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	client.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	after := heap()
	t.Logf("320 requests from 8 clients in %s; heap %.1f MiB before, %.1f MiB after; goroutines %d before, %d after",
		took.Round(time.Millisecond), float64(before)/(1<<20), float64(after)/(1<<20), goroutines, runtime.NumGoroutine())
	if after > before+4<<20 {
		t.Errorf("the heap grew from %d to %d bytes under load", before, after)
	}
	if g := runtime.NumGoroutine(); g > goroutines+2 {
		t.Errorf("%d goroutines after the load, %d before", g, goroutines)
	}
}
