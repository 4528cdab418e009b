package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/allocation"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// exploreLedger: 1 to 14 November 2026, every hour, GPU-1 held by
// ads-web's frontend pod (2.00/h), GPU-2 by ads-batch's job pod, GPU-3
// by search's indexer StatefulSet pod; 14 days x 24 h x 3 GPUs x 2.00 =
// 2,016.00, 672.00 each. Idle time costs nothing under allocation.
func exploreLedger(t *testing.T) (db, prices string) {
	t.Helper()
	dir := t.TempDir()
	db, prices = filepath.Join(dir, "ledger.db"), filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte(testBook), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pods := []struct{ gpu, team, ns, pod string }{
		{"GPU-1", "ads", "ads-web", "frontend-7c9f8d6b5-x7kqz"},
		{"GPU-2", "ads", "ads-batch", "nightly-29384756-x2kq9"},
		{"GPU-3", "search", "search", "indexer-0"},
	}
	var rows []attribution.Row
	for h := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC); h.Before(time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)); h = h.Add(time.Hour) {
		for _, p := range pods {
			base := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n-" + p.gpu, GPUUUID: p.gpu, GPUModel: "A100-SXM4-80GB",
				SliceID: p.gpu, SharingMode: "exclusive", Method: "measured"}
			c := base
			c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container, c.Team = attribution.KindContainer, p.ns, p.pod, "uid-"+p.pod, "main", p.team
			c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, 1800
			idle := base
			idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 1800
			rows = append(rows, c, idle)
		}
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	return db, prices
}

func getJSON(t *testing.T, u string, v any) *http.Response {
	t.Helper()
	resp, body := fetch(t, u)
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%s: %d %v\n%s", u, resp.StatusCode, err, body)
	}
	return resp
}

func TestAllocationAPI(t *testing.T) {
	db, prices := exploreLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	var r allocation.Result
	resp := getJSON(t, hs.URL+"/api/v1/allocation?window=2026-11&aggregate=team", &r)
	if resp.StatusCode != 200 || r.Total != "2016.00" || len(r.Sets) != 1 || len(r.Sets[0].Entries) != 3 ||
		r.Sets[0].Entries[0].Name != "ads" || r.Sets[0].Entries[0].Total != "1344.00" || r.Sets[0].Entries[1].Total != "672.00" {
		t.Errorf("by team: %d %+v", resp.StatusCode, r)
	}
	if !r.Window.Partial || resp.Header.Get("X-Gpuledger-Partial") != "true" || r.Window.DataEnd != "2026-11-15T00:00:00Z" {
		t.Errorf("November to date: want partial up to the 15th: %+v", r.Window)
	}
	r = allocation.Result{}
	getJSON(t, hs.URL+"/api/v1/allocation?window=2026-11-01,2026-11-08&aggregate=workload&filter=team:ads&step=day", &r)
	if len(r.Sets) != 7 || len(r.Sets[0].Entries) != 2 || r.Sets[0].Total != "144.00" || r.Window.Partial {
		t.Fatalf("ads's workloads a day: %+v", r)
	}
	names := []string{r.Sets[0].Entries[0].Name, r.Sets[0].Entries[1].Name}
	slices.Sort(names)
	if names[0] != "frontend" || names[1] != "nightly" || r.Sets[0].Entries[0].Total != "48.00" {
		t.Errorf("workloads %v: want frontend and nightly, 48.00 a day each: %+v", names, r.Sets[0])
	}
	_, body := fetch(t, hs.URL+"/api/v1/allocation.csv?window=2026-11&aggregate=namespace,pod&filter=namespace:search")
	if !strings.HasPrefix(body, "start,end,namespace,pod,held_gpu_hours") || !strings.Contains(body, "search,indexer-0,336.000000,168.000000,168.000000,0.5000") ||
		!strings.Contains(body, "672.00,USD") {
		t.Errorf("CSV:\n%s", body)
	}
}

// TestAllocationBadInput: every bad parameter is a JSON 400 naming it;
// nothing a client sends is a 500.
func TestAllocationBadInput(t *testing.T) {
	db, prices := exploreLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	cases := map[string]string{
		"window=soon":                            "window",
		"window=2020-01-01,2026-01-01":           "window",
		"aggregate=team,colour":                  "aggregate",
		"step=fortnight":                         "step",
		"step=hour&window=2026-01-01,2026-03-01": "step",
		"filter=team":                            "filter",
		"filter=" + url.QueryEscape(strings.Repeat("team:x,", 40)): "filter",
		"window=" + strings.Repeat("9", 5000):                      "window",
		"colour=red":                                               "colour",
	}
	for q, param := range cases {
		var e struct{ Error, Parameter string }
		resp := getJSON(t, hs.URL+"/api/v1/allocation?"+q, &e)
		if resp.StatusCode != 400 || e.Parameter != param || e.Error == "" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%.60s: %d %+v, want a 400 naming %s", q, resp.StatusCode, e, param)
		}
	}
	resp, _ := fetch(t, hs.URL+"/explore?aggregate=container")
	if resp.StatusCode != 400 {
		t.Errorf("a page by container: %d, want 400", resp.StatusCode)
	}
	resp, _ = fetch(t, hs.URL+"/explore?from=2026-11-01&to=yesterday")
	if resp.StatusCode != 400 {
		t.Errorf("a page to yesterday: %d, want 400", resp.StatusCode)
	}
}

// TestOpenAPIDocumentsEverything: every parameter the handler reads and
// every field it writes is in the OpenAPI document. A field added to the
// answer's structs without its documentation fails here.
func TestOpenAPIDocumentsEverything(t *testing.T) {
	db, prices := exploreLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Parameters []struct {
				Ref string `json:"$ref"`
			} `json:"parameters"`
		} `json:"paths"`
		Components struct {
			Parameters map[string]struct {
				Name, In string
			} `json:"parameters"`
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	resp := getJSON(t, hs.URL+"/api/v1/openapi.json", &doc)
	if resp.StatusCode != 200 || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("%d openapi %q", resp.StatusCode, doc.OpenAPI)
	}
	for _, path := range []string{"/api/v1/allocation", "/api/v1/allocation.csv"} {
		var got []string
		for _, p := range doc.Paths[path]["get"].Parameters {
			c := doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
			if c.In != "query" {
				t.Errorf("%s: parameter %s is not a query parameter", path, p.Ref)
			}
			got = append(got, c.Name)
		}
		slices.Sort(got)
		want := slices.Clone(allocation.Params)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s documents parameters %v, the handler reads %v", path, got, want)
		}
	}
	for schema, typ := range map[string]reflect.Type{"Result": reflect.TypeFor[allocation.Result](), "Window": reflect.TypeFor[allocation.Window](),
		"Set": reflect.TypeFor[allocation.Set](), "Entry": reflect.TypeFor[allocation.Entry](), "Error": reflect.TypeFor[apiError]()} {
		props := doc.Components.Schemas[schema].Properties
		fields := map[string]bool{}
		for i := 0; i < typ.NumField(); i++ {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = true
			if _, ok := props[tag]; !ok {
				t.Errorf("schema %s does not document field %q", schema, tag)
			}
		}
		for p := range props {
			if !fields[p] {
				t.Errorf("schema %s documents %q, which the answer does not have", schema, p)
			}
		}
	}
	var fs []string
	for _, d := range allocation.Dims {
		fs = append(fs, string(d))
	}
	b, _ := os.ReadFile("openapi.json")
	for _, f := range fs {
		if !strings.Contains(string(b), f) {
			t.Errorf("the document does not name field %s", f)
		}
	}
}

var hrefPattern = regexp.MustCompile(`(?:href|action)="([^"]*)"`)

// TestExploreBehindAPrefix walks the drill-down from a month served under
// /gpu/ (http.StripPrefix, as behind a proxy): every link and form on the
// pages is followed and answers 200 under the prefix, down to the pods.
func TestExploreBehindAPrefix(t *testing.T) {
	db, prices := exploreLedger(t)
	s, err := New(Config{Open: fileOpener(db), Prices: BookFile(prices), Now: func() time.Time { return testNow }, AdviceRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(http.StripPrefix("/gpu", s.Handler()))
	t.Cleanup(hs.Close)
	start, _ := url.Parse(hs.URL + "/gpu/explore?window=2026-11")
	seen := map[string]bool{}
	queue := []*url.URL{start}
	levels := map[string]bool{}
	var csvs int
	for len(queue) > 0 && len(seen) < 80 {
		u := queue[0]
		queue = queue[1:]
		if seen[u.String()] {
			continue
		}
		seen[u.String()] = true
		if !strings.HasPrefix(u.Path, "/gpu/") {
			t.Errorf("a link leaves the prefix: %s", u)
			continue
		}
		resp, body := fetch(t, u.String())
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d\n%.300s", u, resp.StatusCode, body)
			continue
		}
		if strings.HasSuffix(u.Path, ".csv") {
			csvs++
		}
		if u.Path != "/gpu/explore" {
			continue // only the drill-down's own pages are walked on
		}
		if strings.Contains(body, "<script") {
			t.Errorf("%s has a script", u)
		}
		levels[u.Query().Get("aggregate")] = true
		for _, m := range hrefPattern.FindAllStringSubmatch(body, -1) {
			ref, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
			if err != nil {
				t.Fatalf("%s: link %q: %v", u, m[1], err)
			}
			if ref.IsAbs() || strings.HasPrefix(ref.Path, "/") {
				t.Errorf("%s: link %q is not relative", u, m[1])
				continue
			}
			next := u.ResolveReference(ref)
			if m[0][:6] == "action" {
				q := next.Query()
				q.Set("from", "2026-11-02")
				q.Set("to", "2026-11-03")
				q.Set("aggregate", u.Query().Get("aggregate"))
				next.RawQuery = q.Encode()
			}
			queue = append(queue, next)
		}
	}
	for _, l := range []string{"team", "namespace", "workload", "pod"} {
		if !levels[l] {
			t.Errorf("the walk never reached the %s level (pages %d)", l, len(seen))
		}
	}
	if csvs == 0 {
		t.Error("no CSV link followed")
	}
	// The form's dates: the 2nd and 3rd, both included: 2 days x 24 h x 3
	// GPUs x 2.00.
	_, body := fetch(t, hs.URL+"/gpu/explore?from=2026-11-02&to=2026-11-03&aggregate=team")
	if !strings.Contains(body, "288.00") {
		t.Errorf("2 to 3 November by team: no 288.00 total\n%s", body)
	}
}
