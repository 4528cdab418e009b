// Package chquery is the query model of Grafana's ClickHouse data source
// plugin (grafana-clickhouse-datasource, v4) as a dataquery variant of the
// Grafana Foundation SDK, which ships none for it. Only the SQL editor is
// modelled: every gpuledger panel is raw SQL (rawSql) with the plugin's
// macros, run in "sql" editor mode.
//
// The JSON fields are the plugin's (src/types/sql.ts: editorType,
// queryType, rawSql; the backend's format option); see docs/dashboards.md.
package chquery

import (
	"errors"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// DatasourceType is the plugin's data source type id.
const DatasourceType = "grafana-clickhouse-datasource"

// PluginVersion is the plugin version the queries are written for: v4
// moved to editorType/queryType and is what Grafana 10+ installs.
const PluginVersion = "4.0.0"

// QueryType is how the plugin shapes a result (its QueryType enum).
type QueryType string

const (
	QueryTypeTable      QueryType = "table"
	QueryTypeTimeSeries QueryType = "timeSeries"
)

// Format is the backend's format option (sqlds FormatQueryOption): the
// plugin sets it from the query type.
type Format int

const (
	FormatTimeSeries Format = 0
	FormatTable      Format = 1
)

// EditorSQL is the raw SQL editor (the other one is the query builder).
const EditorSQL = "sql"

// Dataquery is one ClickHouse panel query in the SQL editor.
type Dataquery struct {
	RefId         string                `json:"refId"`
	Hide          *bool                 `json:"hide,omitempty"`
	Datasource    *common.DataSourceRef `json:"datasource,omitempty"`
	EditorType    string                `json:"editorType"`
	QueryType     QueryType             `json:"queryType"`
	Format        Format                `json:"format"`
	RawSql        string                `json:"rawSql"`
	PluginVersion string                `json:"pluginVersion,omitempty"`
}

var _ variants.Dataquery = Dataquery{}

// ImplementsDataqueryVariant marks Dataquery as a panel target.
func (Dataquery) ImplementsDataqueryVariant() {}

// DataqueryType is the data source type the query is for.
func (Dataquery) DataqueryType() string { return DatasourceType }

// Equals compares two queries field by field.
func (q Dataquery) Equals(other variants.Dataquery) bool {
	o, ok := other.(Dataquery)
	if !ok {
		return false
	}
	if (q.Hide == nil) != (o.Hide == nil) || (q.Hide != nil && *q.Hide != *o.Hide) {
		return false
	}
	if (q.Datasource == nil) != (o.Datasource == nil) {
		return false
	}
	if q.Datasource != nil && !q.Datasource.Equals(*o.Datasource) {
		return false
	}
	return q.RefId == o.RefId && q.EditorType == o.EditorType && q.QueryType == o.QueryType &&
		q.Format == o.Format && q.RawSql == o.RawSql && q.PluginVersion == o.PluginVersion
}

// Validate refuses a query the plugin could not run.
func (q Dataquery) Validate() error {
	var errs []error
	if q.RefId == "" {
		errs = append(errs, errors.New("refId is empty"))
	}
	if q.RawSql == "" {
		errs = append(errs, errors.New("rawSql is empty"))
	}
	if q.EditorType != EditorSQL {
		errs = append(errs, fmt.Errorf("editorType %q: only %q is supported", q.EditorType, EditorSQL))
	}
	switch {
	case q.QueryType == QueryTypeTable && q.Format == FormatTable:
	case q.QueryType == QueryTypeTimeSeries && q.Format == FormatTimeSeries:
	default:
		errs = append(errs, fmt.Errorf("queryType %q with format %d: want table/1 or timeSeries/0", q.QueryType, q.Format))
	}
	if q.Datasource != nil && q.Datasource.Type != nil && *q.Datasource.Type != DatasourceType {
		errs = append(errs, fmt.Errorf("datasource type %q, want %q", *q.Datasource.Type, DatasourceType))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid ClickHouse query %q: %w", q.RefId, errors.Join(errs...))
	}
	return nil
}

// Builder builds a Dataquery; it is what panels' Targets take.
type Builder struct {
	q Dataquery
}

// NewBuilder starts an SQL-editor query of type table.
func NewBuilder() *Builder {
	return &Builder{q: Dataquery{EditorType: EditorSQL, QueryType: QueryTypeTable, Format: FormatTable, PluginVersion: PluginVersion}}
}

// RefId names the query within its panel.
func (b *Builder) RefId(ref string) *Builder { b.q.RefId = ref; return b }

// Datasource sets the data source the query runs on.
func (b *Builder) Datasource(ref common.DataSourceRef) *Builder { b.q.Datasource = &ref; return b }

// RawSql sets the SQL, macros and template variables included.
func (b *Builder) RawSql(sql string) *Builder { b.q.RawSql = sql; return b }

// Table shapes the result as a table (the default).
func (b *Builder) Table() *Builder {
	b.q.QueryType, b.q.Format = QueryTypeTable, FormatTable
	return b
}

// TimeSeries shapes the result as time series: a DateTime column, then
// label columns, then values (the plugin turns long rows wide).
func (b *Builder) TimeSeries() *Builder {
	b.q.QueryType, b.q.Format = QueryTypeTimeSeries, FormatTimeSeries
	return b
}

// Hide keeps the query out of the panel (for queries other queries use).
func (b *Builder) Hide(h bool) *Builder { b.q.Hide = &h; return b }

// Build validates and returns the query.
func (b *Builder) Build() (variants.Dataquery, error) {
	if err := b.q.Validate(); err != nil {
		return nil, err
	}
	return b.q, nil
}

// VariantConfig registers the variant with the SDK's dashboard unmarshaler
// (cog.NewRuntime().RegisterDataqueryVariant), so a dashboard JSON holding
// these queries reads back into Dataquery values.
func VariantConfig() variants.DataqueryConfig {
	return variants.DataqueryConfig{
		Identifier: DatasourceType,
		DataqueryUnmarshaler: func(raw []byte) (variants.Dataquery, error) {
			var q Dataquery
			if err := unmarshal(raw, &q); err != nil {
				return nil, err
			}
			return q, nil
		},
	}
}
