package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Units. Rates of the GPU-second counters are GPUs: GPU-hours per hour.
const (
	unitGPUs     = "suffix: GPUs"
	unitGPUHours = "suffix: GPU-h"
	unitPercent  = "percentunit"
	unitPerHour  = "suffix: /h"
)

// query is one panel query.
type query struct {
	ref, expr, legend string
}

// q is a shorthand for a query.
func q(ref, expr, legend string) query { return query{ref: ref, expr: expr, legend: legend} }

// rangeTarget is a range query for time series panels.
func rangeTarget(x query) cog.Builder[variants.Dataquery] {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		RefId(x.ref).
		Expr(x.expr).
		LegendFormat(x.legend).
		Range()
}

// instantTarget is an instant query; table formats it one row per series.
func instantTarget(x query, asTable bool) cog.Builder[variants.Dataquery] {
	b := prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		RefId(x.ref).
		Expr(x.expr).
		LegendFormat(x.legend).
		Instant()
	if asTable {
		b = b.Format(prometheus.PromQueryFormatTable)
	}
	return b
}

func targets(qs []query, build func(query) cog.Builder[variants.Dataquery]) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for _, x := range qs {
		out = append(out, build(x))
	}
	return out
}

// tableLegend is the legend of a time series panel: a table on the right
// with the mean and last value, so long pod names stay readable.
func tableLegend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementRight).
		Calcs([]string{"mean", "lastNotNull"})
}

// timeSeries is a line chart of range queries.
func timeSeries(id uint32, title, desc, unit string, w, h uint32, qs ...query) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Unit(unit).
		Min(0).
		Span(w).
		Height(h).
		FillOpacity(10).
		Legend(tableLegend()).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)).
		Targets(targets(qs, rangeTarget))
}

// stacked is a time series stacked on top of each other, for partitions.
func stacked(id uint32, title, desc, unit string, w, h uint32, qs ...query) *timeseries.PanelBuilder {
	return timeSeries(id, title, desc, unit, w, h, qs...).
		FillOpacity(60).
		LineWidth(0).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// singleStat is a big number of one instant query.
func singleStat(id uint32, title, desc, unit string, w, h uint32, x query) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Unit(unit).
		Span(w).
		Height(h).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		WithTarget(rangeTarget(x))
}

// bars is a horizontal bar gauge of instant queries, one bar per series.
func bars(id uint32, title, desc, unit string, w, h uint32, qs ...query) *bargauge.PanelBuilder {
	return bargauge.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Unit(unit).
		Min(0).
		Span(w).
		Height(h).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeGradient).
		ShowUnfilled(true).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Targets(targets(qs, func(x query) cog.Builder[variants.Dataquery] { return instantTarget(x, false) }))
}

// tableOf is a table of instant queries, merged on their labels, with the
// value columns renamed after the query (rename: "Value #A" -> title).
func tableOf(id uint32, title, desc string, w, h uint32, rename map[string]string, hide []string, qs ...query) *table.PanelBuilder {
	renames := map[string]any{}
	for ref, name := range rename {
		renames["Value #"+ref] = name
		if len(qs) == 1 {
			renames["Value"] = name
		}
	}
	excluded := map[string]any{"Time": true}
	for _, h := range hide {
		excluded[h] = true
	}
	return table.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Span(w).
		Height(h).
		Filterable(true).
		Targets(targets(qs, func(x query) cog.Builder[variants.Dataquery] { return instantTarget(x, true) })).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": excluded,
			"renameByName":  renames,
		}})
}

// cogLink is a link builder, as the SDK's panels take them.
type cogLink = cog.Builder[dashboard.DashboardLink]

// link is a data link (for a table cell or a series) to a dashboard path.
func link(title, url string) cogLink {
	return dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeLink).
		Url(url)
}

// drilldownLink opens the drill-down on the node and GPU of the clicked
// row, keeping the time range and data source.
func drilldownLink() []cogLink {
	return []cogLink{drilldownRowLink()}
}

// drilldownRowLink is drilldownLink for one link.
func drilldownRowLink() cogLink {
	return link("Open node & GPU drill-down",
		Path(UIDDrilldown)+"?${__url_time_range}&${datasource:queryparam}&${cluster:queryparam}"+
			"&var-node=${__data.fields.node}&var-gpu=${__data.fields.gpu}")
}

// dashboardLinks are the links in every dashboard's header to the others.
func dashboardLinks() []cog.Builder[dashboard.DashboardLink] {
	return []cog.Builder[dashboard.DashboardLink]{
		dashboard.NewDashboardLinkBuilder("gpuledger").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"gpuledger"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true),
	}
}

// newBoard starts a dashboard with the settings all five share.
func newBoard(uid, title, desc string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(desc).
		Tags([]string{"gpuledger", "gpu"}).
		Editable().
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("1m").
		Time("now-6h", "now").
		Links(dashboardLinks()).
		Variables(variables())
}
