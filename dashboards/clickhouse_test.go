package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/dashboards/chquery"
)

// TestClickHouseBoard: every panel of the ClickHouse chargeback queries
// the datasource variable of the plugin's type with SQL-editor queries,
// its variables are datasource, team, namespace and model, and its SQL
// uses variables only in the one safe form (dashboards/chcheck runs it).
func TestClickHouseBoard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(jsonDir, FileName(UIDChargebackCH)))
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Panels []struct {
			ID         int    `json:"id"`
			Title      string `json:"title"`
			Datasource struct{ Type, UID string }
			Targets    []chquery.Dataquery `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type, AllValue string
				IncludeAll, Multi    bool
				Datasource           struct{ Type, UID string }
				Query                json.RawMessage
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	varUse := regexp.MustCompile(`\$\{?[a-z]+[}:]?`)
	safe := regexp.MustCompile(`^\$\{(cluster|team|namespace|model):$`)
	check := func(where, sql string) {
		for _, m := range varUse.FindAllString(sql, -1) {
			if !safe.MatchString(m) {
				t.Errorf("%s uses %q: only ${cluster|team|namespace|model:percentencode}", where, m)
			}
		}
	}
	if len(b.Panels) < 10 {
		t.Errorf("%d panels", len(b.Panels))
	}
	for _, p := range b.Panels {
		if p.Datasource.Type != chquery.DatasourceType || p.Datasource.UID != "${datasource}" || len(p.Targets) != 1 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			if err := q.Validate(); err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			if q.Datasource == nil || q.Datasource.Uid == nil || *q.Datasource.Uid != "${datasource}" {
				t.Errorf("panel %q: target datasource %+v", p.Title, q.Datasource)
			}
			check("panel "+p.Title, q.RawSql)
			// Every panel reads the clusters selected, but the count of
			// hours not yet rolled up (the fleet's: marks have no cluster).
			if p.ID != chStaleHours && !strings.Contains(q.RawSql, "${cluster:percentencode}") {
				t.Errorf("panel %q ignores the cluster variable", p.Title)
			}
		}
	}
	names := map[string]bool{}
	for _, v := range b.Templating.List {
		names[v.Name] = true
		if v.Type != "query" {
			continue
		}
		if v.Datasource.Type != chquery.DatasourceType || !v.IncludeAll || !v.Multi || v.AllValue != allValue {
			t.Errorf("variable %s: %+v", v.Name, v)
		}
		var query struct{ RawSQL string }
		if err := json.Unmarshal(v.Query, &query); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
		}
		sql := query.RawSQL
		if sql == "" {
			t.Errorf("variable %s has no rawSql", v.Name)
		}
		check("variable "+v.Name, sql)
		if v.Name != "cluster" && !strings.Contains(sql, "${cluster:percentencode}") {
			t.Errorf("variable %s is not narrowed by the cluster variable", v.Name)
		}
	}
	for _, want := range []string{"datasource", "cluster", "team", "namespace", "model"} {
		if !names[want] {
			t.Errorf("no %s variable", want)
		}
	}
}

// The typed query reads back from JSON as itself.
func TestClickHouseQueryRoundTrip(t *testing.T) {
	q, err := chquery.NewBuilder().RefId("A").Datasource(chDatasource()).RawSql("SELECT 1").TimeSeries().Build()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	back, err := chquery.VariantConfig().DataqueryUnmarshaler(data)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Equals(back) || back.DataqueryType() != chquery.DatasourceType {
		t.Errorf("round trip: %s -> %+v", data, back)
	}
	if _, err := chquery.NewBuilder().RefId("A").Build(); err == nil {
		t.Error("a query without SQL built")
	}
}
