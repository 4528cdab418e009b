package exposition

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestConcurrentScrapesDuringUpdates scrapes through the HTTP handler from
// several goroutines while Updates run (run it with -race). Every cycle adds
// 10 s to the trainer's allocation, so a scrape that sees one consistent
// snapshot always reads allocated == 10 x cycles_total.
func TestConcurrentScrapesDuringUpdates(t *testing.T) {
	const (
		scrapers = 4
		scrapes  = 30
		updates  = 60
	)
	e := New(node, Options{})
	h := e.Handler()
	cycle := func(i int) attribution.CycleResult {
		s, end := window(i)
		return attribution.CycleResult{Start: s, End: end, GPUs: []attribution.GPUCycle{
			{UUID: gpuA, Model: modelA, Capacity: 10, Unattributed: 0.5, Idle: 2.5,
				Containers: []attribution.ContainerCycle{trainer(7)}},
		}}
	}
	e.Update(cycle(0), fixtureMeta(1))

	var wg sync.WaitGroup
	errs := make(chan string, scrapers*scrapes)
	for range scrapers {
		wg.Go(func() {
			for range scrapes {
				if msg := scrapeOnce(h); msg != "" {
					errs <- msg
				}
			}
		})
	}
	for i := 1; i < updates; i++ {
		e.Update(cycle(i), fixtureMeta(i+1))
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if msg := scrapeOnce(h); msg != "" {
		t.Error(msg)
	}
}

// scrapeOnce scrapes h and checks the snapshot is consistent; it returns
// what is wrong, or "".
func scrapeOnce(h http.Handler) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		return "scrape status " + strconv.Itoa(rec.Code) + ": " + rec.Body.String()
	}
	var cycles, allocated float64 = -1, -1
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "gpuledger_collector_cycles_total{"):
			cycles = lastFloat(line)
		case strings.HasPrefix(line, "gpuledger_container_gpu_allocated_seconds_total{"):
			allocated = lastFloat(line)
		}
	}
	if cycles < 1 || allocated != 10*cycles {
		return "inconsistent snapshot: cycles_total=" + ftoa(cycles) + " allocated=" + ftoa(allocated)
	}
	return ""
}

func lastFloat(line string) float64 {
	v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
	if err != nil {
		return -1
	}
	return v
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
