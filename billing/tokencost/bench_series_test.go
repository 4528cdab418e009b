package tokencost

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchSeries is the answer size of BenchmarkCountSeries: MaxSeries, the
// most one query may return.
const benchSeries = 200_000

// vectorAnswer is a /api/v1/query answer of n vLLM series, one per pod,
// as Prometheus writes it.
func vectorAnswer(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"model_name":"meta-llama/Llama-3.1-8B-Instruct","namespace":"ns-%d","pod":"llm-%d-7d9f8b6c5-x2k4p"},"value":[1764547200,"%d"]}`, i%1000, i, 1000+i)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// BenchmarkCountSeries measures the client side of a report's token count
// when vLLM's two queries each answer benchSeries series (the other
// servers' none): what decoding and aggregating them costs in time and
// memory, over real HTTP from a server that writes the answer as
// Prometheus does.
func BenchmarkCountSeries(b *testing.B) {
	answer := vectorAnswer(benchSeries)
	empty := []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			b.Error(err)
		}
		if strings.Contains(r.Form.Get("query"), "(vllm:") {
			w.Write(answer)
			return
		}
		w.Write(empty)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, pages := range []int{1, 4} {
		// pages Counts at once share the client, as serve's concurrent
		// requests for the running month's page do.
		b.Run(fmt.Sprintf("pages=%d", pages), func(b *testing.B) {
			b.SetBytes(int64(2 * pages * len(answer)))
			b.ReportAllocs()
			runtime.GC()
			peak, stop := peakHeap()
			for b.Loop() {
				var wg sync.WaitGroup
				for range pages {
					wg.Go(func() {
						got, err := count(context.Background(), c, from, from.AddDate(0, 1, 0))
						if err != nil {
							b.Error(err)
							return
						}
						if len(got.pods) != benchSeries {
							b.Errorf("%d pods, want %d", len(got.pods), benchSeries)
						}
					})
				}
				wg.Wait()
			}
			stop()
			b.ReportMetric(float64(*peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// peakHeap samples the live heap objects' bytes every millisecond until
// stop, into *peak: the benchmark's high-water mark, which B/op (the
// total allocated) does not show.
func peakHeap() (peak *uint64, stop func()) {
	peak = new(uint64)
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, s[0].Value.Uint64())
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return peak, func() { close(quit); <-done }
}
