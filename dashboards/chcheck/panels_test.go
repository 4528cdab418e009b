package chcheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/chcheck"
)

// TestEveryPanelRuns runs every panel's and every variable's SQL, as
// Grafana and the plugin would send it, on the simulated month: with All,
// with one team, and with several values; every panel returns rows.
func TestEveryPanelRuns(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	selections := map[string]map[string]chcheck.Value{
		"all":      all(),
		"one team": {"cluster": {All: true}, "team": {Values: []string{hexOf("search")}}, "namespace": {All: true}, "model": {All: true}},
		"several": {"cluster": {Values: []string{hexOf("default"), hexOf("gpu-us-east-2")}},
			"team": {Values: []string{hexOf("ml"), hexOf("ads")}}, "namespace": {Values: []string{hexOf("train"), hexOf("ctr")}},
			"model": {Values: []string{hexOf("A100-SXM4-80GB"), hexOf("H100-SXM5-80GB"), hexOf("L4")}}},
	}
	n := 0
	for name, vars := range selections {
		for _, p := range b.Panels {
			for _, tg := range p.Targets {
				n++
				_, rows := db.run(t, tg.RawSQL, month(), vars)
				if len(rows) == 0 && !(name == "one team" && strings.HasPrefix(p.Title, "Findings")) {
					t.Errorf("%s: panel %q returned no rows", name, p.Title)
				}
			}
		}
	}
	for _, v := range b.Templating.List {
		if v.Name == "datasource" {
			continue
		}
		n++
		cols, rows := db.run(t, b.variableSQL(t, v.Name), month(), all())
		if len(rows) == 0 || len(cols) != 2 || cols[0] != "__text" || cols[1] != "__value" {
			t.Errorf("variable %s: columns %v, %d rows", v.Name, cols, len(rows))
		}
		for _, r := range rows {
			if got, want := asString(r[1]), hexOf(asString(r[0])); got != want {
				t.Errorf("variable %s: value %q for %q, want its hex %q", v.Name, got, r[0], want)
			}
		}
	}
	if n < 30 {
		t.Errorf("ran %d queries, want every panel three times and every variable", n)
	}
}

// TestHoursPanelsAgreeWithTheLedger: the hours per team equal the raw
// rows' sums, and a month the ledger has no data for shows nothing.
func TestHoursPanelsAgreeWithTheLedger(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	_, want, err := db.query(`SELECT team, sum(allocated_gpu_seconds) / 3600, sum(used_gpu_seconds) / 3600 FROM ledger_rows FINAL
		WHERE kind = 'container' GROUP BY team ORDER BY team`)
	if err != nil {
		t.Fatal(err)
	}
	cols, rows := db.run(t, b.panelSQL(t, "GPU-hours per team and month"), month(), all())
	got := map[string][2]float64{}
	for _, r := range rows {
		got[asString(r[col(t, cols, "Team")])] = [2]float64{asFloat(t, r[col(t, cols, "Held GPU-h")]), asFloat(t, r[col(t, cols, "Used GPU-h")])}
	}
	if len(got) != len(want) {
		t.Fatalf("panel has %d teams, ledger %d", len(got), len(want))
	}
	for _, w := range want {
		g := got[asString(w[0])]
		if d0, d1 := g[0]-asFloat(t, w[1]), g[1]-asFloat(t, w[2]); d0*d0 > 1e-12 || d1*d1 > 1e-12 {
			t.Errorf("team %s: panel held/used %v, ledger %v %v", w[0], g, w[1], w[2])
		}
	}
	empty := chcheck.Range{From: monthStart.AddDate(-3, 0, 0), To: monthStart.AddDate(-2, 0, 0).Add(-time.Millisecond)}
	for _, title := range []string{"Cost per team and month", "Invoice per month", "GPU-hours per team and month", "Top workloads"} {
		if _, rows := db.run(t, b.panelSQL(t, title), empty, all()); len(rows) != 0 {
			t.Errorf("%s: %d rows for a month without data", title, len(rows))
		}
	}
}
