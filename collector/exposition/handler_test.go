package exposition

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuledger/gpuledger/attribution"
)

// The reference for every test here is promhttp itself: the Exporter
// registered as a plain prometheus.Collector and served by
// promhttp.HandlerFor, which is how it was served before the text writer
// existed. The Go and process collectors are replaced by fakeRuntime, whose
// values do not move between two scrapes, so the two bodies can be
// compared byte for byte.

// fakeRuntime stands in for the Go and process collectors: one family that
// sorts before gpuledger_ and two after, with labels that need escaping.
type fakeRuntime struct{ goInfo, procSeconds, procFDs *prometheus.Desc }

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		goInfo:      prometheus.NewDesc("go_fake_info", `Go "build" \ info.`, []string{"version"}, nil),
		procSeconds: prometheus.NewDesc("process_fake_cpu_seconds_total", "CPU seconds\nspent.", nil, nil),
		procFDs:     prometheus.NewDesc("process_fake_open_fds", "Open fds.", nil, nil),
	}
}

func (f *fakeRuntime) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.goInfo
	ch <- f.procSeconds
	ch <- f.procFDs
}

func (f *fakeRuntime) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(f.goInfo, prometheus.GaugeValue, 1, `go1.x "quoted"`)
	ch <- prometheus.MustNewConstMetric(f.procSeconds, prometheus.CounterValue, 12.5)
	ch <- prometheus.MustNewConstMetric(f.procFDs, prometheus.GaugeValue, 7)
}

// countingHandler counts the requests it passes on.
type countingHandler struct {
	h http.Handler
	n int
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n++
	c.h.ServeHTTP(w, r)
}

// testRig is an Exporter whose Handler uses fakeRuntime, next to the
// reference handler over the same Exporter.
type testRig struct {
	e    *Exporter
	ref  http.Handler     // promhttp over the Exporter and fakeRuntime
	slow *countingHandler // what Handler passes the protobuf formats to
}

func newRig(t testing.TB, e *Exporter) *testRig {
	t.Helper()
	rt := newFakeRuntime()
	runtimeReg := prometheus.NewPedanticRegistry()
	runtimeReg.MustRegister(rt)
	full := prometheus.NewPedanticRegistry()
	if err := full.Register(e); err != nil {
		t.Fatalf("cannot register exporter: %v", err)
	}
	full.MustRegister(rt)
	ref := promhttp.HandlerFor(full, promhttp.HandlerOpts{EnableOpenMetrics: true})
	r := &testRig{e: e, ref: ref, slow: &countingHandler{h: ref}}
	e.handler.runtime = runtimeReg
	e.handler.slow = r.slow
	return r
}

// serve sends one GET to h with the given Accept and Accept-Encoding
// headers (empty: not sent) and query.
func serve(h http.Handler, accept, encoding, query string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/metrics"+query, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// body returns the response body, gunzipped with the standard library when
// it says it is gzip.
func body(t testing.TB, rec *httptest.ResponseRecorder) []byte {
	t.Helper()
	if rec.Header().Get("Content-Encoding") != "gzip" {
		return rec.Body.Bytes()
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("cannot read gzip body: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("cannot gunzip body: %v", err)
	}
	return out
}

// Accept headers scrapers send. The text ones must take the fast path.
var textAccepts = []struct{ name, accept string }{
	{"none (curl)", ""},
	{"any", "*/*"},
	{"text 0.0.4", acceptText},
	{"text with utf-8 escaping", "text/plain;version=0.0.4;escaping=allow-utf-8"},
	{"prometheus 2", acceptPrometheus2},
	{"openmetrics 0.0.1", "application/openmetrics-text;version=0.0.1"},
	{"openmetrics 1.0.0 dots escaping", "application/openmetrics-text;version=1.0.0;escaping=dots"},
	{"prometheus 3 without protobuf", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"},
}

// nastyNode has label values that need escaping or sort in ways a naive
// writer would get wrong: prefixes, NUL bytes, quotes, backslashes,
// newlines, non-ASCII, empty values.
func nastyNode() (attribution.CycleResult, CycleMeta) {
	s, end := window(0)
	pods := []string{"p", "p!", "p\x00", "p\x00x", "p\"q", `p\q`, "p\nq", "pé", "", "p,q"}
	var cs []attribution.ContainerCycle
	var meta CycleMeta
	for i, pod := range pods {
		c := infer(pod, fmt.Sprintf("%s::%d", gpuB, i), float64(i)/3, float64(i))
		c.Team = []string{"t", "t ", `t"`, ""}[i%4]
		cs = append(cs, c)
		meta.Pods = append(meta.Pods, attribution.PodMeta{Namespace: "ml", Name: pod,
			Labels: map[string]string{"app": []string{"a\\b", "x\"y", "line\nbreak", "", "ü"}[i%5]}})
	}
	meta.SourceUp = map[string]bool{"a\"b": true, "a": false, "a\nb": true}
	return attribution.CycleResult{Start: s, End: end,
		GPUs: []attribution.GPUCycle{{UUID: gpuB, Model: "T4 \"rev\\2\"", Capacity: 10, Containers: cs}},
		Active: []attribution.Finding{
			{Kind: attribution.FindingStarved, GPUUUID: gpuB, Namespace: "ml", Pod: "p\x00", Container: "server", Team: "t", NoisyPod: "ml/p\"q"},
			{Kind: attribution.FindingStarved, GPUUUID: gpuB, Namespace: "ml", Pod: "p", Container: "server", Team: "t", NoisyPod: "ml/p\"q"},
		}}, meta
}

// exporters are the cases every comparison runs on.
func exporters(t testing.TB) map[string]*Exporter {
	t.Helper()
	out := map[string]*Exporter{
		"before first update": New(node, Options{}),
		"fixture":             runFixture(t, 3, Options{BuildVersion: "1.2.3", PodLabelAllowlist: []string{"app.kubernetes.io/name"}}),
		"invalid build label": runFixture(t, 2, Options{BuildVersion: "bad\xff"}),
	}
	dense := New(node, denseOpts)
	dense.Update(denseNode())
	out["dense node"] = dense
	nasty := New("node \"n\"\\1", Options{PodLabelAllowlist: []string{"app"}})
	res, meta := nastyNode()
	nasty.Update(res, meta)
	out["nasty labels"] = nasty
	return out
}

// TestTextPathMatchesPromhttp serves every case through Handler and through
// promhttp with every Accept header a scraper sends, and wants the same
// families, series and values (parsed back with expfmt's TextParser for the
// text format), the same headers, and in fact the same bytes.
func TestTextPathMatchesPromhttp(t *testing.T) {
	for name, e := range exporters(t) {
		rig := newRig(t, e)
		for _, a := range textAccepts {
			t.Run(name+"/"+a.name, func(t *testing.T) {
				got, want := serve(e.Handler(), a.accept, "", ""), serve(rig.ref, a.accept, "", "")
				if rig.slow.n != 0 {
					t.Fatalf("a text scrape went to promhttp")
				}
				assertSameResponse(t, got, want)
			})
		}
	}
}

// assertSameResponse compares a response of Handler with promhttp's.
func assertSameResponse(t *testing.T, got, want *httptest.ResponseRecorder) {
	t.Helper()
	if got.Code != http.StatusOK || want.Code != http.StatusOK {
		t.Fatalf("status %d, promhttp %d: %s", got.Code, want.Code, got.Body)
	}
	for _, h := range []string{"Content-Type", "Content-Encoding"} {
		if g, w := got.Header().Get(h), want.Header().Get(h); g != w {
			t.Errorf("%s = %q, promhttp says %q", h, g, w)
		}
	}
	if g, w := got.Header().Values("Vary"), want.Header().Values("Vary"); !slices.Equal(g, w) {
		t.Errorf("Vary = %q, promhttp says %q", g, w)
	}
	gb, wb := body(t, got), body(t, want)
	switch expfmt.ResponseFormat(got.Header()).FormatType() {
	case expfmt.TypeTextPlain:
		assertSameFamilies(t, parseText(t, gb), parseText(t, wb))
	case expfmt.TypeOpenMetrics:
		assertOpenMetrics(t, gb)
		if g, w := sortedLines(gb), sortedLines(wb); !slices.Equal(g, w) {
			t.Errorf("OpenMetrics lines differ from promhttp's:\n%s", lineDiff(strings.Join(w, "\n"), strings.Join(g, "\n")))
		}
	}
	if !bytes.Equal(gb, wb) {
		t.Errorf("body differs from promhttp's (%d bytes, promhttp %d):\n%s", len(gb), len(wb), lineDiff(string(wb), string(gb)))
	}
}

func parseText(t testing.TB, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("cannot parse text exposition: %v\n%s", err, b)
	}
	return mfs
}

// assertSameFamilies compares parsed families: names, HELP, type, and each
// series' labels and value (exact float equality, NaN equal to NaN).
func assertSameFamilies(t *testing.T, got, want map[string]*dto.MetricFamily) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("family %s missing", name)
			continue
		}
		if g.GetHelp() != w.GetHelp() || g.GetType() != w.GetType() {
			t.Errorf("family %s: help %q type %v, want %q %v", name, g.GetHelp(), g.GetType(), w.GetHelp(), w.GetType())
		}
		gs, ws := seriesValues(g), seriesValues(w)
		if len(gs) != len(ws) {
			t.Errorf("family %s: %d series, want %d", name, len(gs), len(ws))
		}
		for k, wv := range ws {
			gv, ok := gs[k]
			if !ok {
				t.Errorf("family %s: series %s missing", name, k)
			} else if gv != wv && !(math.IsNaN(gv) && math.IsNaN(wv)) {
				t.Errorf("family %s: series %s = %v, want %v", name, k, gv, wv)
			}
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected family %s", name)
		}
	}
}

// seriesValues maps each series of a family, keyed by its sorted labels, to
// its value.
func seriesValues(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			kv = append(kv, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		slices.Sort(kv)
		out[strings.Join(kv, ",")] = metricValue(m)
	}
	return out
}

func sortedLines(b []byte) []string {
	lines := strings.Split(string(b), "\n")
	slices.Sort(lines)
	return lines
}

// assertOpenMetrics checks the rules of OpenMetrics 1.0 the text format does
// not have: a counter family is named without _total in its HELP and TYPE
// lines while its samples keep it, and the body ends with # EOF.
func assertOpenMetrics(t *testing.T, b []byte) {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\n# EOF\n")) {
		t.Errorf("OpenMetrics body does not end with # EOF")
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		name, ok := strings.CutPrefix(l, "# TYPE ")
		if !ok || !strings.HasSuffix(name, " counter") {
			continue
		}
		name = strings.TrimSuffix(name, " counter")
		if strings.HasSuffix(name, "_total") {
			t.Errorf("counter family %s keeps _total in its TYPE line", name)
		}
		if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], name+"_total") {
			t.Errorf("first sample of counter family %s is %q, want %s_total...", name, lines[i+1], name)
		}
	}
}

// TestRealRuntimeCollectors compares Handler with promhttp over Registry,
// with the real Go and process collectors: the gpuledger families must be
// equal, and the same runtime families present (their values move).
func TestRealRuntimeCollectors(t *testing.T) {
	e := New(node, denseOpts)
	e.Update(denseNode())
	ref := promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{EnableOpenMetrics: true})
	got := parseText(t, body(t, serve(e.Handler(), acceptText, "gzip", "")))
	want := parseText(t, body(t, serve(ref, acceptText, "", "")))
	split := func(mfs map[string]*dto.MetricFamily) (own map[string]*dto.MetricFamily, runtime []string) {
		own = map[string]*dto.MetricFamily{}
		for name, mf := range mfs {
			if strings.HasPrefix(name, namespace+"_") {
				own[name] = mf
			} else {
				runtime = append(runtime, name+" "+mf.GetType().String())
			}
		}
		slices.Sort(runtime)
		return own, runtime
	}
	gotOwn, gotRuntime := split(got)
	wantOwn, wantRuntime := split(want)
	assertSameFamilies(t, gotOwn, wantOwn)
	if !slices.Equal(gotRuntime, wantRuntime) {
		t.Errorf("runtime families %v, want %v", gotRuntime, wantRuntime)
	}
	if len(gotRuntime) < 10 || !slices.ContainsFunc(gotRuntime, func(s string) bool { return strings.HasPrefix(s, "process_") }) {
		t.Errorf("runtime families look incomplete: %v", gotRuntime)
	}
	if n := len(gotOwn["gpuledger_container_gpu_allocated_seconds_total"].GetMetric()); n != 1000 {
		t.Errorf("dense node serves %d allocated series, want 1000", n)
	}
}

// TestProtobufGoesToPromhttp checks the formats the text writer does not
// write are served by promhttp, unchanged.
func TestProtobufGoesToPromhttp(t *testing.T) {
	e := runFixture(t, 3, Options{})
	rig := newRig(t, e)
	for _, accept := range []string{
		acceptProtobuf,
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
	} {
		before := rig.slow.n
		got, want := serve(e.Handler(), accept, "", ""), serve(rig.ref, accept, "", "")
		if rig.slow.n != before+1 {
			t.Errorf("Accept %q was not passed to promhttp", accept)
		}
		if got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Errorf("Accept %q: response differs from promhttp's", accept)
		}
	}
}

// TestGzipNegotiation wants Handler to compress exactly when promhttp does,
// and the gunzipped body to be the plain one.
func TestGzipNegotiation(t *testing.T) {
	e := runFixture(t, 3, Options{})
	rig := newRig(t, e)
	plain := body(t, serve(e.Handler(), acceptPrometheus2, "", ""))
	for _, enc := range []string{
		"", "gzip", "identity", "gzip;q=0", "gzip, identity", "identity;q=0.5, gzip", "*",
		"deflate, gzip, br, zstd", "br", "gzip;q=0.8,identity;q=0.9", "x-gzip", "gzip;q=abc", "GZIP",
	} {
		t.Run(enc, func(t *testing.T) {
			got, want := serve(e.Handler(), acceptPrometheus2, enc, ""), serve(rig.ref, acceptPrometheus2, enc, "")
			assertSameResponse(t, got, want)
			if b := body(t, got); !bytes.Equal(b, plain) {
				t.Errorf("decoded body differs from the uncompressed one")
			}
		})
	}
}

// TestNameFilter checks the name[] parameters promhttp supports.
func TestNameFilter(t *testing.T) {
	e := runFixture(t, 3, Options{})
	rig := newRig(t, e)
	for _, q := range []string{
		"?name[]=gpuledger_gpu_capacity_seconds_total&name[]=go_fake_info&name[]=process_fake_open_fds",
		"?name[]=nothing",
		"?name=gpuledger_gpu_capacity_seconds_total",
		"?name%5B%5D=gpuledger_collector_cycles_total",
	} {
		for _, accept := range []string{acceptText, acceptPrometheus2} {
			assertSameResponse(t, serve(e.Handler(), accept, "", q), serve(rig.ref, accept, "", q))
		}
	}
}

// TestSeriesOrderThroughChurn runs cycles in which containers come and go
// and change method, and after each wants Handler's body to equal
// promhttp's, which sorts every scrape from scratch: the kept order (merged
// on each Update) must stay the sorted one.
func TestSeriesOrderThroughChurn(t *testing.T) {
	e := New(node, Options{PodLabelAllowlist: []string{"app"}})
	rig := newRig(t, e)
	rng := rand.New(rand.NewPCG(1, 2))
	methods := []string{attribution.MethodMeasured, attribution.MethodEstimated}
	for cycle := range 30 {
		s, end := window(cycle)
		res := attribution.CycleResult{Start: s, End: end}
		var meta CycleMeta
		for range 3 {
			uuid := fmt.Sprintf("GPU-%d", rng.IntN(4))
			gc := attribution.GPUCycle{UUID: uuid, Model: modelB, Capacity: 10}
			for range rng.IntN(12) {
				pod := fmt.Sprintf("pod-%d", rng.IntN(20))
				c := infer(pod, fmt.Sprintf("%s::%d", uuid, rng.IntN(4)), rng.Float64(), float64(rng.IntN(100)))
				c.Method = methods[rng.IntN(2)]
				gc.Containers = append(gc.Containers, c)
				meta.Pods = append(meta.Pods, attribution.PodMeta{Namespace: "ml", Name: pod,
					Labels: map[string]string{"app": fmt.Sprintf("app-%d", rng.IntN(3))}})
			}
			res.GPUs = append(res.GPUs, gc)
		}
		e.Update(res, meta)
		for _, accept := range []string{acceptText, acceptPrometheus2} {
			got, want := serve(e.Handler(), accept, "", ""), serve(rig.ref, accept, "", "")
			assertSameResponse(t, got, want)
		}
		if t.Failed() {
			t.Fatalf("cycle %d", cycle)
		}
	}
}

// TestFloatFormatting compares the value formatting with expfmt's for the
// values where formats differ: integers, exponents, -0, NaN and infinities.
func TestFloatFormatting(t *testing.T) {
	f := newDescs(node, nil).outboxAge
	ls := newLabelSet(f.desc, t0, nil)
	for _, v := range []float64{
		0, math.Copysign(0, -1), 1, -1, 2, -2, 0.5, 12.75, 1e5, 999999, 1e6, 123456789, 1.5e21, 1e-4, 1e-5,
		0.1 + 0.2, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 1 << 53,
	} {
		mf := &dto.MetricFamily{
			Name: &f.name, Help: ptr("Age of the oldest row waiting in the outbox, in seconds; 0 when the outbox is empty."),
			Type:   dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: ls.pairs, Gauge: &dto.Gauge{Value: ptr(v)}}},
		}
		fs := &familySamples{f: f, samples: []sample{{ls, v}}}
		var text, om bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&text, mf); err != nil {
			t.Fatal(err)
		}
		if _, err := expfmt.MetricFamilyToOpenMetrics(&om, mf); err != nil {
			t.Fatal(err)
		}
		if got := appendFamily(nil, fs, false); string(got) != text.String() {
			t.Errorf("text %v: got %q, want %q", v, got, text.String())
		}
		if got := appendFamily(nil, fs, true); string(got) != om.String() {
			t.Errorf("OpenMetrics %v: got %q, want %q", v, got, om.String())
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestSortKeyOrdersLikeValueLists checks sortKey against a direct
// element-by-element comparison of the value lists.
func TestSortKeyOrdersLikeValueLists(t *testing.T) {
	values := []string{"", "a", "a!", "a\x00", "a\x00\x00", "a\x00\x01", "a\x01", "ab", "b", "\x00", "é"}
	pairs := func(vs ...string) []*dto.LabelPair {
		var out []*dto.LabelPair
		for i, v := range vs {
			out = append(out, &dto.LabelPair{Name: ptr(fmt.Sprint("l", i)), Value: ptr(v)})
		}
		return out
	}
	for _, a1 := range values {
		for _, a2 := range values {
			for _, b1 := range values {
				for _, b2 := range values {
					want := slices.Compare([]string{a1, a2}, []string{b1, b2})
					got := strings.Compare(sortKey(pairs(a1, a2)), sortKey(pairs(b1, b2)))
					if got != want {
						t.Fatalf("(%q,%q) vs (%q,%q): key order %d, want %d", a1, a2, b1, b2, got, want)
					}
				}
			}
		}
	}
}

// TestBufferReuse checks a reused body buffer holds nothing of the scrape
// before, when the exposition shrinks.
func TestBufferReuse(t *testing.T) {
	e := New(node, denseOpts)
	rig := newRig(t, e)
	e.Update(denseNode())
	_ = serve(e.Handler(), acceptText, "gzip", "")
	s, end := window(1)
	e.Update(attribution.CycleResult{Start: s, End: end}, CycleMeta{})
	for _, enc := range []string{"", "gzip"} {
		assertSameResponse(t, serve(e.Handler(), acceptText, enc, ""), serve(rig.ref, acceptText, enc, ""))
	}
}

// brokenCollector fails, as the process collector does where /proc is
// unreadable.
type brokenCollector struct{ d *prometheus.Desc }

func (b brokenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.d }
func (b brokenCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(b.d, errors.New("cannot read /proc"))
}

// TestRuntimeGatherErrorKeepsOwnSeries checks that a failing runtime
// collector costs only its own family, not the scrape: the gpuledger series
// do not depend on it.
func TestRuntimeGatherErrorKeepsOwnSeries(t *testing.T) {
	e := runFixture(t, 3, Options{})
	runtimeReg := prometheus.NewRegistry()
	runtimeReg.MustRegister(newFakeRuntime(), brokenCollector{prometheus.NewDesc("process_broken", "Broken.", nil, nil)})
	e.handler.runtime = runtimeReg
	rec := serve(e.Handler(), acceptText, "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	mfs := parseText(t, rec.Body.Bytes())
	for _, name := range []string{"gpuledger_collector_cycles_total", "gpuledger_gpu_capacity_seconds_total", "go_fake_info", "process_fake_open_fds"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	if _, ok := mfs["process_broken"]; ok {
		t.Errorf("the broken family was served")
	}
}
