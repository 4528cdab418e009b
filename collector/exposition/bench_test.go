package exposition

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/tenancy"
)

// denseNode is the dense node of the performance budget: 8 time-sliced GPUs,
// 400 pods and 1,000 container slices (2-3 containers per pod).
func denseNode() (attribution.CycleResult, CycleMeta) { return nodeWithPods(400) }

// nodeWithPods is a node like the dense one with the given number of pods
// and 2.5 container slices per pod.
func nodeWithPods(pods int) (attribution.CycleResult, CycleMeta) {
	const gpus = 8
	slices := pods * 5 / 2
	s, end := window(0)
	res := attribution.CycleResult{Start: s, End: end}
	meta := CycleMeta{
		SourceUp:      map[string]bool{"nvml": true, "dcgm": true, "podresources": true, "kubemeta": true, "procfs": true},
		SourceErrors:  map[string]uint64{"dcgm": 1},
		Anomalies:     map[string]uint64{"bad_device_id": 1},
		CycleDuration: 40e6,
	}
	for g := range gpus {
		uuid := fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", g)
		res.GPUs = append(res.GPUs, attribution.GPUCycle{UUID: uuid, Model: modelA, Capacity: 10, Idle: 2})
		meta.GPUs = append(meta.GPUs, attribution.GPU{Index: g, UUID: uuid, Model: modelA})
	}
	for p := range pods {
		meta.Pods = append(meta.Pods, attribution.PodMeta{
			Namespace: fmt.Sprintf("ns-%d", p%20), Name: fmt.Sprintf("pod-%d", p),
			Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", p%50)},
		})
	}
	for k := range slices {
		g := &res.GPUs[k%gpus]
		p := k % pods
		g.Containers = append(g.Containers, attribution.ContainerCycle{
			SliceID: fmt.Sprintf("%s::%d", g.UUID, k/gpus), SharingMode: string(tenancy.Timeslicing),
			Namespace: fmt.Sprintf("ns-%d", p%20), Pod: fmt.Sprintf("pod-%d", p), Container: fmt.Sprintf("c%d", k/pods),
			Team: fmt.Sprintf("team-%d", p%7), Method: attribution.MethodMeasured,
			Share: 1.0 / 125, Allocated: 0.08, Used: 0.064, MemoryMiB: 100, Energy: 2,
		})
	}
	for k := 0; k < 40; k++ {
		res.Active = append(res.Active, attribution.Finding{Kind: attribution.FindingIdleAllocation,
			GPUUUID: res.GPUs[k%gpus].UUID, Namespace: fmt.Sprintf("ns-%d", k%20), Pod: fmt.Sprintf("pod-%d", k), Container: "c0"})
	}
	return res, meta
}

var denseOpts = Options{BuildVersion: "bench", PodLabelAllowlist: []string{"app.kubernetes.io/name"}}

// Accept headers of the benchmarks and tests.
const (
	acceptText        = "text/plain;version=0.0.4"
	acceptPrometheus2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	acceptProtobuf    = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3"
)

// discard is a ResponseWriter that counts the body and throws it away.
type discard struct {
	h http.Header
	n int
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) Write(b []byte) (int, error) {
	d.n += len(b)
	return len(b), nil
}
func (d *discard) WriteHeader(int) {}

// scrapeRequest is a GET /metrics with the given Accept and, unless empty,
// Accept-Encoding.
func scrapeRequest(accept, encoding string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", accept)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	return req
}

// benchScrape scrapes a node with the given number of pods through Handler
// with the given request headers, reporting the bytes sent per scrape.
func benchScrape(b *testing.B, pods int, accept, encoding string) {
	e := New(node, denseOpts)
	res, meta := nodeWithPods(pods)
	e.Update(res, meta)
	h, req := e.Handler(), scrapeRequest(accept, encoding)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.n = 0
		h.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(w.n), "bytes/scrape")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(w.n), "ns/byte")
}

// BenchmarkScrapeDenseNode is one scrape of the dense node in the text
// format 0.0.4, Go and process collectors included.
func BenchmarkScrapeDenseNode(b *testing.B) { benchScrape(b, 400, acceptText, "") }

// BenchmarkScrapeDenseNodeOpenMetrics negotiates as Prometheus 2.x does by
// default, which prefers OpenMetrics, without compression.
func BenchmarkScrapeDenseNodeOpenMetrics(b *testing.B) { benchScrape(b, 400, acceptPrometheus2, "") }

// BenchmarkScrapeDenseNodeGzip is Prometheus's default request: OpenMetrics
// preferred, gzip accepted.
func BenchmarkScrapeDenseNodeGzip(b *testing.B) { benchScrape(b, 400, acceptPrometheus2, "gzip") }

// BenchmarkScrapeDenseNodeProtobuf is the registry path (promhttp), for
// comparison: what every scrape cost before the text writer.
func BenchmarkScrapeDenseNodeProtobuf(b *testing.B) { benchScrape(b, 400, acceptProtobuf, "") }

// BenchmarkScrapeScaling shows a text scrape's cost against the number of
// pods: the bytes grow with the pods and the time with the bytes, on top of
// a fixed cost (the Go and process collectors).
func BenchmarkScrapeScaling(b *testing.B) {
	for _, pods := range []int{100, 400, 1600} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) { benchScrape(b, pods, acceptText, "") })
	}
}

// BenchmarkScrapeDuringUpdates scrapes the dense node while another
// goroutine runs Update, either back to back (the worst case: every scrape
// overlaps several cycles and competes with them for the CPU) or once a
// millisecond (still a thousand times the rate of a 1 s poll), and reports
// the scrape latency percentiles. Prometheus's request is OpenMetrics with
// gzip.
func BenchmarkScrapeDuringUpdates(b *testing.B) {
	for _, c := range []struct {
		name             string
		every            time.Duration
		accept, encoding string
	}{
		{"gzip/back-to-back", 0, acceptPrometheus2, "gzip"},
		{"gzip/every-1ms", time.Millisecond, acceptPrometheus2, "gzip"},
		{"text/back-to-back", 0, acceptText, ""},
	} {
		b.Run(c.name, func(b *testing.B) { benchScrapeDuringUpdates(b, c.every, c.accept, c.encoding) })
	}
}

func benchScrapeDuringUpdates(b *testing.B, every time.Duration, accept, encoding string) {
	e := New(node, denseOpts)
	res, meta := denseNode()
	e.Update(res, meta)
	stop, done := make(chan struct{}), make(chan struct{})
	go updateUntil(e, res, meta, every, stop, done)
	h, req := e.Handler(), scrapeRequest(accept, encoding)
	w := &discard{h: http.Header{}}
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		t := time.Now()
		h.ServeHTTP(w, req)
		lat = append(lat, time.Since(t))
	}
	close(stop)
	<-done
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// updateUntil runs Update every interval (back to back when 0) until stop
// is closed, then closes done.
func updateUntil(e *Exporter, res attribution.CycleResult, meta CycleMeta, every time.Duration, stop, done chan struct{}) {
	defer close(done)
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		if tick != nil {
			select {
			case <-stop:
				return
			case <-tick:
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		e.Update(res, meta)
	}
}

// BenchmarkUpdateDenseNode is one steady-state cycle: the same series as the
// cycle before, so the totals maps only update in place.
func BenchmarkUpdateDenseNode(b *testing.B) {
	e := New(node, denseOpts)
	res, meta := denseNode()
	e.Update(res, meta)
	b.ReportAllocs()
	for b.Loop() {
		e.Update(res, meta)
	}
	b.ReportMetric(float64(e.snap.Load().series), "series")
}

// BenchmarkUpdateChurn is a cycle in which a tenth of the containers are
// new and as many went away, so series are labelled, sorted and merged in.
func BenchmarkUpdateChurn(b *testing.B) {
	e := New(node, denseOpts)
	res, meta := denseNode()
	e.Update(res, meta)
	// Two cycles that differ in a tenth of their containers: alternating
	// them churns 100 containers each Update.
	alt, _ := denseNode()
	for g := range alt.GPUs {
		cs := slices.Clone(alt.GPUs[g].Containers)
		for i := range cs {
			if i%10 == 0 {
				cs[i].Container += "-new"
			}
		}
		alt.GPUs[g].Containers = cs
	}
	cycles := [2]attribution.CycleResult{alt, res}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e.Update(cycles[i%2], meta)
		i++
	}
}
