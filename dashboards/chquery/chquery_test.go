package chquery

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// The JSON is the plugin's query model: these field names and values are
// what grafana-clickhouse-datasource v4 reads.
func TestJSONFields(t *testing.T) {
	typ, uid := DatasourceType, "${datasource}"
	q, err := NewBuilder().RefId("A").Datasource(common.DataSourceRef{Type: &typ, Uid: &uid}).RawSql("SELECT 1").TimeSeries().Build()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"refId":"A","datasource":{"type":"grafana-clickhouse-datasource","uid":"${datasource}"},"editorType":"sql","queryType":"timeSeries","format":0,"rawSql":"SELECT 1","pluginVersion":"4.0.0"}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

func TestValidate(t *testing.T) {
	other := "prometheus"
	for name, tc := range map[string]struct {
		q    Dataquery
		want string
	}{
		"no refId":     {Dataquery{EditorType: EditorSQL, QueryType: QueryTypeTable, Format: FormatTable, RawSql: "x"}, "refId"},
		"no sql":       {Dataquery{RefId: "A", EditorType: EditorSQL, QueryType: QueryTypeTable, Format: FormatTable}, "rawSql"},
		"builder":      {Dataquery{RefId: "A", EditorType: "builder", QueryType: QueryTypeTable, Format: FormatTable, RawSql: "x"}, "editorType"},
		"format":       {Dataquery{RefId: "A", EditorType: EditorSQL, QueryType: QueryTypeTimeSeries, Format: FormatTable, RawSql: "x"}, "format"},
		"wrong plugin": {Dataquery{RefId: "A", EditorType: EditorSQL, QueryType: QueryTypeTable, Format: FormatTable, RawSql: "x", Datasource: &common.DataSourceRef{Type: &other}}, "datasource type"},
	} {
		err := tc.q.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
