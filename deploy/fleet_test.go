package deploy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

const clusterNameRequired = "cluster.name is required when the ledger is shared or external"

// TestClusterNameRequired: a shared or external ledger (a DSN, an existing
// Secret, or the bundled server off) refuses the default cluster name with
// a message naming the value; with a name of its own it renders, and the
// bundled ledger of a single cluster keeps "default".
func TestClusterNameRequired(t *testing.T) {
	for _, args := range [][]string{
		{"--set", "clickhouse.dsn=clickhouse://gpuledger@ledger.example.com:9000/gpuledger"},
		{"--set", "clickhouse.existingSecret=ch-creds"},
		{"--set", "clickhouse.bundled.enabled=false"},
		{"--set", "clickhouse.existingSecret=ch-creds", "--set", "cluster.name=default"},
	} {
		_, err := helm(t, append([]string{"template", "gpuledger", chartDir}, args...)...)
		if err == nil || !strings.Contains(err.Error(), clusterNameRequired) {
			t.Errorf("%v: %v, want the error %q", args, err, clusterNameRequired)
		}
		objs := render(t, append(args, "--set", "cluster.name=gpu-eu-west-1")...)
		checkClusterArgs(t, objs, "gpu-eu-west-1")
	}
	checkClusterArgs(t, render(t), "default")
}

// checkClusterArgs: the collectors and serve (where rendered) run with
// --cluster=name.
func checkClusterArgs(t *testing.T, objs []object, name string) {
	t.Helper()
	want := "--cluster=" + name
	ds := only[*appsv1.DaemonSet](t, objs)
	if args := ds.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, want) {
		t.Errorf("collector args %q, want %s", args, want)
	}
	for _, o := range objs {
		if d, ok := o.Obj.(*appsv1.Deployment); ok && d.Name == "gpuledger-serve" {
			if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, want) {
				t.Errorf("serve args %q, want %s", args, want)
			}
		}
	}
}

// TestClusterMetricsLabel: the ServiceMonitor and the PodMonitor end their
// metricRelabelings with the rule that sets cluster to cluster.name, after
// the values' own rules, so no scraped series keeps another cluster; none
// while the name is "default" or with cluster.metricsLabel false.
func TestClusterMetricsLabel(t *testing.T) {
	monitors := []string{"--set", "serviceMonitor.enabled=true", "--set", "podMonitor.enabled=true"}
	rule := map[string]any{"action": "replace", "targetLabel": "cluster", "replacement": "gpu-eu-west-1"}
	own := map[string]any{"action": "drop", "sourceLabels": []any{"__name__"}, "regex": "go_.*"}
	for _, tc := range []struct {
		args []string
		want []map[string]any
	}{
		{[]string{"--set", "cluster.name=gpu-eu-west-1"}, []map[string]any{rule}},
		{[]string{"--set", "cluster.name=gpu-eu-west-1",
			"--set-json", `serviceMonitor.metricRelabelings=[{"action":"drop","sourceLabels":["__name__"],"regex":"go_.*"}]`,
			"--set-json", `podMonitor.metricRelabelings=[{"action":"drop","sourceLabels":["__name__"],"regex":"go_.*"}]`},
			[]map[string]any{own, rule}},
		{nil, nil},
		{[]string{"--set", "cluster.name=gpu-eu-west-1", "--set", "cluster.metricsLabel=false"}, nil},
	} {
		objs := render(t, append(slices.Clone(monitors), tc.args...)...)
		sm := only[*serviceMonitor](t, objs)
		pm := only[*podMonitor](t, objs)
		for what, got := range map[string][]map[string]any{
			"ServiceMonitor": sm.Spec.Endpoints[0].MetricRelabelings,
			"PodMonitor":     pm.Spec.PodMetricsEndpoints[0].MetricRelabelings,
		} {
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%v: %s metricRelabelings %v, want %v", tc.args, what, got, tc.want)
			}
		}
	}
}

// TestFleetExample: deploy/examples/fleet.yaml, the values of one cluster
// of a fleet on one external replicated ClickHouse, is refused without
// the cluster's name and with it renders collectors and serve writing to
// the external ledger ON CLUSTER, with no bundled server, monitors that
// label the cluster, and one cluster left to close months.
func TestFleetExample(t *testing.T) {
	const example = "examples/fleet.yaml"
	if _, err := helm(t, "template", "gpuledger", chartDir, "-f", example); err == nil || !strings.Contains(err.Error(), clusterNameRequired) {
		t.Fatalf("%s without cluster.name: %v, want the error %q", example, err, clusterNameRequired)
	}
	if out, err := helm(t, "lint", "--strict", chartDir, "-f", example, "--set", "cluster.name=gpu-eu-west-1"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	objs := render(t, "-f", example, "--set", "cluster.name=gpu-eu-west-1")
	for _, o := range objs {
		if o.Kind == "StatefulSet" || o.Kind == "Secret" {
			t.Errorf("%s %s rendered: the fleet's ledger is external (existingSecret), not bundled", o.Kind, o.Name)
		}
	}
	checkClusterArgs(t, objs, "gpu-eu-west-1")
	ds := only[*appsv1.DaemonSet](t, objs)
	c := ds.Spec.Template.Spec.Containers[0]
	checkClickHouseEnv(t, "collector", c, ds.Spec.Template.Spec.Volumes, "gpuledger-ledger")
	if e := env(t, c, "GPULEDGER_CLICKHOUSE_CLUSTER"); e.Value != "gpuledger" {
		t.Errorf("collector GPULEDGER_CLICKHOUSE_CLUSTER %q, want gpuledger (ON CLUSTER DDL)", e.Value)
	}
	migrate := jobNamed(t, objs, "gpuledger-migrate")
	if e := env(t, migrate.Spec.Template.Spec.Containers[0], "GPULEDGER_CLICKHOUSE_CLUSTER"); e.Value != "gpuledger" {
		t.Errorf("migrate GPULEDGER_CLICKHOUSE_CLUSTER %q, want gpuledger", e.Value)
	}
	serve := named[*appsv1.Deployment](t, objs, "gpuledger-serve")
	if args := serve.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--close-after-days=0") {
		t.Errorf("serve args %q: the example leaves closing months to one cluster", args)
	}
	sm := only[*serviceMonitor](t, objs)
	if got := sm.Spec.Endpoints[0].MetricRelabelings; len(got) != 1 || got[0]["targetLabel"] != "cluster" || got[0]["replacement"] != "gpu-eu-west-1" {
		t.Errorf("ServiceMonitor metricRelabelings %v, want cluster=gpu-eu-west-1", got)
	}
	only[*prometheusRule](t, objs)
}
