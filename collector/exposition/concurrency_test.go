package exposition

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestConcurrentScrapesDuringUpdates scrapes through the HTTP handler from
// several goroutines while Updates run (run it with -race), each scraper
// asking for another format: text, OpenMetrics, OpenMetrics gzipped (the
// text writer, sharing body buffers and gzip writers) and protobuf
// (promhttp). Every cycle adds 10 s to the trainer's allocation, so a
// scrape that sees one consistent snapshot always reads
// allocated == 10 x cycles_total.
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
	for i := range scrapers {
		wg.Go(func() {
			for range scrapes {
				if msg := scrapeOnce(h, scrapeKinds[i%len(scrapeKinds)]); msg != "" {
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
	for _, k := range scrapeKinds {
		if msg := scrapeOnce(h, k); msg != "" {
			t.Error(msg)
		}
	}
}

// scrapeKind is the Accept and Accept-Encoding of a scrape.
type scrapeKind struct{ accept, encoding string }

var scrapeKinds = []scrapeKind{
	{"", ""},
	{acceptPrometheus2, ""},
	{acceptPrometheus2, "gzip"},
	{acceptProtobuf, "gzip"},
}

// scrapeOnce scrapes h and checks the snapshot is consistent; it returns
// what is wrong, or "".
func scrapeOnce(h http.Handler, k scrapeKind) string {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", k.accept)
	req.Header.Set("Accept-Encoding", k.encoding)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return "scrape status " + strconv.Itoa(rec.Code) + ": " + rec.Body.String()
	}
	var r io.Reader = rec.Body
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			return "cannot read gzip body: " + err.Error()
		}
		r = zr
	}
	var cycles, allocated float64 = -1, -1
	format := expfmt.ResponseFormat(rec.Header())
	if format.FormatType() == expfmt.TypeProtoDelim {
		dec := expfmt.NewDecoder(r, format)
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err == io.EOF {
				break
			} else if err != nil {
				return "cannot decode protobuf: " + err.Error()
			}
			switch mf.GetName() {
			case "gpuledger_collector_cycles_total":
				cycles = metricValue(mf.GetMetric()[0])
			case "gpuledger_container_gpu_allocated_seconds_total":
				allocated = metricValue(mf.GetMetric()[0])
			}
		}
	} else {
		sc := bufio.NewScanner(r)
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
		if err := sc.Err(); err != nil {
			return "cannot read body: " + err.Error()
		}
	}
	if cycles < 1 || allocated != 10*cycles {
		return string(format) + ": inconsistent snapshot: cycles_total=" + ftoa(cycles) + " allocated=" + ftoa(allocated)
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
