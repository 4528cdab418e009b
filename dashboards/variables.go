package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// datasource is the reference every panel and variable queries through:
// the dashboard's datasource variable.
func datasource() common.DataSourceRef {
	typ, uid := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// variables are the template variables of every dashboard: datasource,
// cluster, node, team and namespace. Each one narrows the next.
func variables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus"),
		// cluster: the chart's ServiceMonitor and PodMonitor set it on
		// every scraped series from cluster.name (metricRelabelings, so
		// nothing a node exposes can set another), or Prometheus adds it
		// (an external or target label) where one sees several clusters.
		// Without it the variable is empty and "All" (.*) matches the
		// missing label.
		labelVariable("cluster", "Cluster", "label_values("+mCapacity+", cluster)"),
		labelVariable("node", "Node", "label_values("+sel(mCapacity, `cluster=~"$cluster"`)+", node)"),
		labelVariable("team", "Team", "label_values("+sel(mAllocated, gpuFilter)+", team)"),
		labelVariable("namespace", "Namespace", "label_values("+sel(mAllocated, gpuFilter+`, team=~"$team"`)+", namespace)"),
	}
}

// gpuVariable selects GPUs on the drill-down.
func gpuVariable() cog.Builder[dashboard.VariableModel] {
	return labelVariable("gpu", "GPU", "label_values("+sel(mCapacity, gpuFilter)+", gpu)")
}

// labelVariable is a multi-value query variable over one label, with an
// "All" that matches everything, the missing label included.
func labelVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	all := "All"
	allValue := "$__all"
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: &query}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: &all},
			Value: dashboard.StringOrArrayOfString{String: &allValue},
		})
}
