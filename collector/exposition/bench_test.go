package exposition

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// denseNode is the dense node of the performance budget: 8 time-sliced GPUs,
// 400 pods and 1,000 container slices (2-3 containers per pod).
func denseNode() (attribution.CycleResult, CycleMeta) {
	const gpus, pods, slices = 8, 400, 1000
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
			SliceID: fmt.Sprintf("%s::%d", g.UUID, k/gpus), SharingMode: attribution.ModeTimeslicing,
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

// discard is a ResponseWriter that throws the body away.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return io.Discard.Write(b) }
func (d *discard) WriteHeader(int)             {}

// BenchmarkScrapeDenseNode is one scrape of the full handler (Go and process
// collectors included), negotiated as Prometheus does by default.
func BenchmarkScrapeDenseNode(b *testing.B) {
	e := New(node, denseOpts)
	res, meta := denseNode()
	e.Update(res, meta)
	h := e.Handler()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
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
	b.ReportMetric(float64(len(e.snap.Load().metrics)), "series")
}
