package dashboards

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"node": "n1", "namespace": "ns", "__range": "1m", "__rate_interval": "30s", "gpu": ".*"}
	for in, want := range map[string]string{
		`rate(x{node=~"$node"}[$__rate_interval])`:              `rate(x{node=~"n1"}[30s])`,
		`increase(x{namespace=~"${namespace}"}[$__range])`:      `increase(x{namespace=~"ns"}[1m])`,
		`x{node=~"$node", namespace=~"$namespace"}`:             `x{node=~"n1", namespace=~"ns"}`,
		`sum by (gpu) (x{gpu=~"$gpu"})`:                         `sum by (gpu) (x{gpu=~".*"})`,
		`no variables`:                                          `no variables`,
		`rate(a[$__rate_interval]) / rate(b[$__rate_interval])`: `rate(a[30s]) / rate(b[30s])`,
	} {
		got, err := Expand(in, vars)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Expand(`x{team=~"$team"}`, vars); err == nil || !strings.Contains(err.Error(), "$team") {
		t.Errorf("a variable without a value: err = %v, want it named", err)
	}
}

const sampleBoard = `{
  "uid": "u",
  "panels": [
    {"id": 1, "title": "a", "type": "timeseries", "targets": [{"refId": "A", "expr": "up"}, {"refId": "B", "expr": "x", "instant": true}]},
    {"id": 2, "title": "row", "type": "row", "panels": [
      {"id": 3, "title": "inner", "type": "stat", "targets": [{"refId": "A", "expr": "y{node=~\"$node\"}"}]}
    ]}
  ],
  "templating": {"list": [
    {"name": "datasource", "type": "datasource", "query": "prometheus"},
    {"name": "node", "type": "query", "query": "label_values(z{cluster=~\"$cluster\"}, node)"}
  ]}
}`

func TestQueriesFromJSON(t *testing.T) {
	qs, err := QueriesFromJSON([]byte(sampleBoard))
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{Dashboard: "u", PanelID: 1, Panel: "a", RefID: "A", Expr: "up"},
		{Dashboard: "u", PanelID: 1, Panel: "a", RefID: "B", Expr: "x", Instant: true},
		{Dashboard: "u", PanelID: 3, Panel: "inner", RefID: "A", Expr: `y{node=~"$node"}`},
		{Dashboard: "u", Panel: "variable node", RefID: "node", Expr: `z{cluster=~"$cluster"}`, Instant: true, Variable: true},
	}
	if len(qs) != len(want) {
		t.Fatalf("got %d queries %v, want %d", len(qs), qs, len(want))
	}
	for i := range want {
		if qs[i] != want[i] {
			t.Errorf("query %d = %+v, want %+v", i, qs[i], want[i])
		}
	}
}

func TestQueriesFromJSONRejects(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"not json":      {`{`, "cannot parse dashboard JSON"},
		"no uid":        {`{"panels": []}`, "no uid"},
		"empty expr":    {`{"uid": "u", "panels": [{"id": 4, "title": "t", "targets": [{"refId": "A", "expr": " "}]}]}`, "panel 4"},
		"free variable": {`{"uid": "u", "templating": {"list": [{"name": "v", "type": "query", "query": "query_result(up)"}]}}`, "variable v"},
		"map variable":  {`{"uid": "u", "templating": {"list": [{"name": "v", "type": "query", "query": {"query": "x"}}]}}`, "variable v"},
	} {
		_, err := QueriesFromJSON([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
}

// TestEveryCommittedQueryExpands: each query of the committed dashboards
// has a value for every variable the end-to-end test substitutes.
func TestEveryCommittedQueryExpands(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(jsonDir, "*.json"))
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := QueriesFromJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, q := range qs {
			if _, err := Expand(q.Expr, TestValues()); err != nil {
				t.Errorf("%s: %v", q, err)
			}
			n++
		}
	}
	if n < 60 {
		t.Errorf("only %d queries in %d dashboards", n, len(files))
	}
}

func FuzzQueriesFromJSON(f *testing.F) {
	f.Add([]byte(sampleBoard))
	if data, err := os.ReadFile(filepath.Join(jsonDir, FileName(UIDFindings))); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"uid":"u","templating":{"list":[{"type":"query","query":"label_values(,)"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := QueriesFromJSON(data)
		if err != nil {
			return
		}
		for _, q := range qs {
			if strings.TrimSpace(q.Expr) == "" || q.Dashboard == "" {
				t.Errorf("query without expression or dashboard: %+v", q)
			}
		}
	})
}

func FuzzExpand(f *testing.F) {
	f.Add(`rate(x{node=~"$node"}[$__rate_interval])`)
	f.Add(`${cluster}$`)
	f.Add(`$$__range`)
	f.Fuzz(func(t *testing.T, expr string) {
		out, err := Expand(expr, TestValues())
		if err == nil && strings.Contains(out, "$") {
			t.Errorf("Expand(%q) = %q left a variable", expr, out)
		}
	})
}
