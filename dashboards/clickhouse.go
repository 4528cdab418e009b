package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/gpuledger/gpuledger/dashboards/chquery"
)

// Panel IDs of the ClickHouse chargeback.
const (
	chCostByTeam = iota + 1
	chInvoiceTotals
	chHoursByTeam
	chHeldVsUsed
	chUncharged
	chSharingMix
	chSharingTable
	chTopWorkloads
	chFindingsOverTime
	chFindingsTable
	chStaleHours
)

// chDatasource is the reference every panel of the ClickHouse dashboards
// queries through: their datasource variable, of the plugin's type.
func chDatasource() common.DataSourceRef {
	typ, uid := chquery.DatasourceType, "${datasource}"
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// chVariables: the data source, then cluster, team, namespace and GPU model. The
// values are the labels' hex (shown as the labels), so that no label, a
// quote or backslash in it included, ever reaches the SQL text.
func chVariables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Ledger (ClickHouse)").
			Type(chquery.DatasourceType),
		chVariable("cluster", "Cluster", sqlVariable("cluster", false)),
		chVariable("team", "Team", sqlVariable("team", true)),
		chVariable("namespace", "Namespace", sqlVariable("namespace", true)),
		chVariable("model", "GPU model", sqlVariable("gpu_model", false)),
	}
}

func chVariable(name, label, sql string) *dashboard.QueryVariableBuilder {
	all := "All"
	allV := "$__all"
	query := map[string]any{"rawSql": sql, "editorType": chquery.EditorSQL, "queryType": string(chquery.QueryTypeTable), "format": int(chquery.FormatTable)}
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(chDatasource()).
		Query(dashboard.StringOrMap{Map: query}).
		Definition(sql).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(allValue).
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: &all},
			Value: dashboard.StringOrArrayOfString{String: &allV},
		})
}

func chTarget(sql string, series bool) cog.Builder[variants.Dataquery] {
	b := chquery.NewBuilder().RefId("A").Datasource(chDatasource()).RawSql(sql)
	if series {
		b = b.TimeSeries()
	}
	return b
}

func chTable(id uint32, title, desc string, w, h uint32, sql string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(desc).
		Datasource(chDatasource()).
		Span(w).
		Height(h).
		Filterable(true).
		WithTarget(chTarget(sql, false))
}

func chSeries(id uint32, title, desc, unit string, w, h uint32, stack bool, sql string) *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(desc).
		Datasource(chDatasource()).
		Unit(unit).
		Min(0).
		Span(w).
		Height(h).
		FillOpacity(10).
		Legend(tableLegend()).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)).
		WithTarget(chTarget(sql, true))
	if stack {
		b = b.FillOpacity(60).LineWidth(0).Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
	}
	return b
}

func chargebackClickHouse() *dashboard.DashboardBuilder {
	one := 1.0
	b := dashboard.NewDashboardBuilder("gpuledger / Chargeback from the ledger (ClickHouse)").
		Uid(UIDChargebackCH).
		Description("Months of chargeback from the ClickHouse ledger, for the fleet or the clusters selected: the report's money per team and month to the cent, GPU-hours held and used, capacity held but unused, never allocated and idle device time, the sharing-mode mix, the top workloads and findings over time. Needs the grafana-clickhouse-datasource plugin and a price book loaded with `gpuledger ledger migrate --prices` (docs/dashboards.md).").
		Tags([]string{"gpuledger", "gpu", "clickhouse"}).
		Editable().
		Timezone(common.TimeZoneUtc).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-3M/M", "now").
		Links(dashboardLinks()).
		Variables(chVariables())

	b.WithPanel(chTable(chCostByTeam, "Cost per team and month",
		"Each team's money for each calendar month the time range touches, as `gpuledger report` computes it for that month with the newest price book: its charge lines plus its share of the capacity no team was charged for (idle: shared). Whole months, to the minor unit; the team, namespace and model filters choose which teams are shown, never how the month is shared out. The cluster filter chooses whose invoice it is: All is the fleet's, as `gpuledger report` on the whole ledger; one cluster is the invoice of its own rows alone (its capacity, its uncharged capacity shared among its teams).",
		24, 9, sqlCostByTeam()))
	b.WithPanel(chTable(chInvoiceTotals, "Invoice per month",
		"The month's invoice total, what the teams pay, the platform line (uncharged capacity no team pays for) and the rounding line, as in the finance CSV, for the clusters selected (All: the fleet). Not narrowed by the team, namespace and model filters.",
		24, 5, sqlInvoiceTotals()))
	b.WithPanel(stat.NewPanelBuilder().
		Id(chStaleHours).
		Title("Hours not yet rolled up").
		Description("Hours of the months shown whose newest hourly rollup does not cover every write (a late or replayed batch since the last rebuild). The panels show such an hour as last rolled up; `gpuledger report` reads it from the raw rows. 0: the cost panels equal the report; otherwise they catch up when the shipper rebuilds the hour. Counts the whole fleet's hours, whatever the cluster filter.").
		Datasource(chDatasource()).
		Span(24).
		Height(3).
		ColorMode(common.BigValueColorModeValue).
		GraphMode(common.BigValueGraphModeNone).
		Thresholds(dashboard.NewThresholdsConfigBuilder().
			Mode(dashboard.ThresholdsModeAbsolute).
			Steps([]dashboard.Threshold{{Value: nil, Color: "green"}, {Value: &one, Color: "orange"}})).
		WithTarget(chTarget(sqlStaleHours(), false)))
	b.WithPanel(chTable(chHoursByTeam, "GPU-hours per team and month",
		"Per team and month, over the time range: GPU-hours held (allocated), used, the efficiency (used / held) and the GPU-hours held but unused.",
		12, 9, sqlHoursByTeam()))
	b.WithPanel(chSeries(chHeldVsUsed, "Held vs used GPUs per day",
		"GPUs held (allocated) and used by containers, averaged per UTC day.",
		unitGPUs, 12, 9, false, sqlHeldVsUsed()))
	b.WithPanel(chTable(chUncharged, "Capacity no container used, per month and model",
		"Per calendar month and GPU model: GPU-hours never allocated, idle device time, unattributed, and held but unused, with their value at the model's rate. A value, not an invoice line: who pays for it is in the cost panels (the price book's policy and its rule for uncharged capacity).",
		24, 7, sqlUncharged()))
	b.WithPanel(chSeries(chSharingMix, "Sharing-mode mix: held GPUs per day",
		"GPUs held per UTC day by sharing mode (exclusive, MIG, time-slicing, MPS, HAMi, DRA).",
		unitGPUs, 12, 9, true, sqlSharingMix()))
	b.WithPanel(chTable(chSharingTable, "Sharing modes over the time range",
		"GPU-hours held and used and the efficiency per sharing mode.",
		12, 9, sqlSharingTable()))
	b.WithPanel(chTable(chTopWorkloads, "Top workloads",
		"The 20 workloads (namespaces, with their team) that held the most GPU-hours in the time range: held, used, efficiency, held but unused, and the GPU models and sharing modes they ran on.",
		24, 10, sqlTopWorkloads()))
	b.WithPanel(chSeries(chFindingsOverTime, "Findings per day",
		"Findings (held but unused, noisy neighbour, starved) per UTC day of their start.",
		"short", 12, 9, true, sqlFindingsOverTime()))
	b.WithPanel(chTable(chFindingsTable, "Findings",
		"The time range's findings, newest first (at most 200).",
		12, 9, sqlFindingsTable()))
	return b
}
