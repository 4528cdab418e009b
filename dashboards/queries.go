package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gpuledger/gpuledger/dashboards/chquery"
)

// Query is one PromQL expression of a dashboard: a panel target, or the
// series selector of a label_values() template variable.
type Query struct {
	Dashboard string // UID
	PanelID   int    // 0 for a variable
	Panel     string // panel title, or "variable <name>"
	RefID     string // target refId; the variable's name for a variable
	Expr      string // as written, with Grafana variables
	Instant   bool   // an instant query (tables, bar gauges); else a range query
	Variable  bool
}

// String names the query for test failures.
func (q Query) String() string {
	if q.Variable {
		return fmt.Sprintf("%s %s", q.Dashboard, q.Panel)
	}
	return fmt.Sprintf("%s panel %d %q query %s", q.Dashboard, q.PanelID, q.Panel, q.RefID)
}

// dashboardJSON is the part of a dashboard's JSON the queries live in.
type dashboardJSON struct {
	UID        string      `json:"uid"`
	Panels     []panelJSON `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource dsJSON          `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panelJSON struct {
	ID      int         `json:"id"`
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []panelJSON `json:"panels"` // a collapsed row's panels
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Instant    bool   `json:"instant"`
		Datasource dsJSON `json:"datasource"`
	} `json:"targets"`
}

type dsJSON struct {
	Type string `json:"type"`
}

// sqlSource says a query is SQL for the ClickHouse ledger, not PromQL:
// those are run by dashboards/chcheck instead.
func (d dsJSON) sqlSource() bool { return d.Type == chquery.DatasourceType }

// labelValuesRe matches label_values(selector, label).
var labelValuesRe = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// QueriesFromJSON lists every PromQL expression of one dashboard's JSON:
// each panel target's expr and the selector of each label_values()
// variable; ClickHouse (SQL) targets and variables are left out. Any other kind of variable query is an error, so that nothing
// escapes the reference check.
func QueriesFromJSON(data []byte) ([]Query, error) {
	var d dashboardJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("cannot parse dashboard JSON: %w", err)
	}
	if d.UID == "" {
		return nil, fmt.Errorf("cannot read dashboard JSON: no uid")
	}
	var out []Query
	var walk func(ps []panelJSON) error
	walk = func(ps []panelJSON) error {
		for _, p := range ps {
			for _, t := range p.Targets {
				if t.Datasource.sqlSource() {
					continue
				}
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("dashboard %s panel %d %q target %s: empty expr", d.UID, p.ID, p.Title, t.RefID)
				}
				out = append(out, Query{Dashboard: d.UID, PanelID: p.ID, Panel: p.Title, RefID: t.RefID, Expr: t.Expr, Instant: t.Instant})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" || v.Datasource.sqlSource() {
			continue
		}
		var text string
		if err := json.Unmarshal(v.Query, &text); err != nil {
			return nil, fmt.Errorf("dashboard %s variable %s: query is not a string: %w", d.UID, v.Name, err)
		}
		m := labelValuesRe.FindStringSubmatch(text)
		if m == nil {
			return nil, fmt.Errorf("dashboard %s variable %s: query %q is not label_values(selector, label)", d.UID, v.Name, text)
		}
		out = append(out, Query{Dashboard: d.UID, Panel: "variable " + v.Name, RefID: v.Name, Expr: m[1], Instant: true, Variable: true})
	}
	return out, nil
}

// Expand substitutes Grafana variables ($name and ${name}) in expr with
// vars; the longest names are replaced first so $__range does not eat
// $__range_s. A variable left without a value is an error.
func Expand(expr string, vars map[string]string) (string, error) {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	pairs := make([]string, 0, 4*len(names))
	for _, n := range names {
		pairs = append(pairs, "${"+n+"}", vars[n], "$"+n, vars[n])
	}
	out := strings.NewReplacer(pairs...).Replace(expr)
	if i := strings.IndexByte(out, '$'); i >= 0 {
		end := min(len(out), i+20)
		return "", fmt.Errorf("cannot expand %q: no value for the variable at %q", expr, out[i:end])
	}
	return out, nil
}

// TestValues are values of the dashboards' variables for evaluating their
// queries outside Grafana: every filter matches everything, and the
// intervals are those of a Prometheus scraping every second.
func TestValues() map[string]string {
	return map[string]string{
		"cluster": ".*", "node": ".*", "team": ".*", "namespace": ".*", "gpu": ".*",
		"datasource":      "prometheus",
		"__rate_interval": "30s",
		"__interval":      "5s",
		"__range":         "1m",
	}
}
