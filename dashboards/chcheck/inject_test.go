package chcheck_test

import (
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/dashboards/chcheck"
)

// TestQuotesInLabels: a team and a namespace whose names hold a quote and
// a backslash are offered by the variables, selecting them shows exactly
// their rows, and their text never reaches the SQL.
func TestQuotesInLabels(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	_, teams := db.run(t, b.variableSQL(t, "team"), month(), all())
	var value string
	for _, r := range teams {
		if asString(r[0]) == quoteTeam {
			value = asString(r[1])
		}
	}
	if value == "" {
		t.Fatalf("team variable does not offer %q: %v", quoteTeam, teams)
	}
	vars := map[string]chcheck.Value{"cluster": {All: true}, "team": {Values: []string{value}}, "namespace": {All: true}, "model": {All: true}}
	sql := b.panelSQL(t, "GPU-hours per team and month")
	q, err := chcheck.Expand(sql, month(), vars)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(q, "brien") {
		t.Errorf("the team's name reached the SQL")
	}
	cols, rows := db.run(t, sql, month(), vars)
	if len(rows) != 1 || asString(rows[0][col(t, cols, "Team")]) != quoteTeam {
		t.Errorf("selecting %q shows %v", quoteTeam, rows)
	}
	cols, rows = db.run(t, b.panelSQL(t, "Cost per team and month"), month(), vars)
	if len(rows) != 1 || asString(rows[0][col(t, cols, "Team")]) != quoteTeam || asFloat(t, rows[0][col(t, cols, "Cost")]) <= 0 {
		t.Errorf("cost of %q: %v", quoteTeam, rows)
	}
}

// TestCraftedVariableValues: values typed into a URL (var-team=...) are
// not hex, may hold quotes, backslashes, braces and SQL; every panel runs
// them as plain data: no error, no rows of any other team, and the
// database is intact afterwards.
func TestCraftedVariableValues(t *testing.T) {
	db := simulatedMonth(t)
	b := loadBoard(t)
	for _, crafted := range [][]string{
		{`x') OR 1=1 --`},
		{`\`, `') OR 1=1 --`},
		{`x\'`, `'`},
		{`}{,`, `' UNION ALL SELECT 1 --`},
		{"'; DROP TABLE ledger_rows; --"},
		{`%27`, `%5C`},
	} {
		vars := map[string]chcheck.Value{"cluster": {Values: crafted}, "team": {Values: crafted}, "namespace": {Values: crafted}, "model": {Values: crafted}}
		for _, p := range b.Panels {
			if p.Title == "Invoice per month" || p.Title == "Hours not yet rolled up" {
				continue // not filtered
			}
			q, err := chcheck.Expand(p.Targets[0].RawSQL, month(), vars)
			if err != nil {
				t.Fatal(err)
			}
			_, rows, err := db.query(q)
			if err != nil {
				t.Errorf("values %q, panel %q: %v", crafted, p.Title, err)
				continue
			}
			if len(rows) != 0 {
				t.Errorf("values %q, panel %q: %d rows, want none", crafted, p.Title, len(rows))
			}
		}
	}
	if _, rows, err := db.query("SELECT count() FROM ledger_rows"); err != nil || asFloat(t, rows[0][0]) == 0 {
		t.Errorf("ledger rows after the crafted values: %v %v", rows, err)
	}
}
