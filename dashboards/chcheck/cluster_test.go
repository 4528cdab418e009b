package chcheck_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/chcheck"
	"github.com/gpuledger/gpuledger/dashboards/dashprices"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// second is the name of the cluster the test copies the month into.
const second = "gpu-us-east-2"

// TestClusterFilter: a fleet of two clusters whose month is the same
// simulated month (every hourly rollup group of the cluster "default"
// copied under a second cluster, in the same builds). Each cluster alone
// shows exactly what the single-cluster ledger showed, money to the cent
// included: a cluster's invoice is that of its own rows. All shows the
// fleet, twice every GPU-hour; a dashboard that merged the two clusters'
// equal groups (any() without the cluster in the group) would show them
// once. The cluster variable offers both clusters and narrows the others.
func TestClusterFilter(t *testing.T) {
	harness.Require(t)
	ctx := context.Background()
	db, err := newLedgerDB(t, func(ctx context.Context, s *clickhouse.Store) error {
		simMonth(ctx, t, s.Append)
		if err := s.WritePrices(ctx, dashprices.Of(shippedBook(t, "allocation", "shared", false)), time.Now()); err != nil {
			return err
		}
		return s.RebuildRollups(ctx, monthStart, monthEnd)
	})
	if err != nil {
		t.Fatal(err)
	}
	b := loadBoard(t)
	one := func(cluster string) map[string]chcheck.Value {
		v := all()
		v["cluster"] = chcheck.Value{Values: []string{hexOf(cluster)}}
		return v
	}
	// The panels of the money and the hours (the findings are checked
	// below; the stale hours are the fleet's whatever the filter).
	type result struct {
		cols []string
		rows [][]any
	}
	before := map[string]result{}
	for _, p := range b.Panels {
		if p.Title == "Hours not yet rolled up" {
			continue
		}
		cols, rows := db.run(t, p.Targets[0].RawSQL, month(), all())
		if len(rows) == 0 {
			t.Fatalf("panel %q: no rows on the single-cluster month", p.Title)
		}
		before[p.Title] = result{cols, rows}
	}

	var cols []string
	if err := forRows(ctx, db, "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'ledger_rollup_hourly' AND name != 'cluster'",
		func(r []any) { cols = append(cols, asString(r[0])) }); err != nil {
		t.Fatal(err)
	}
	list := strings.Join(cols, ", ")
	// The rollup's sort key has no cluster here, so a merge would fold
	// the copies into the originals: none while the test reads them.
	if err := db.conn.Exec(ctx, "SYSTEM STOP MERGES ledger_rollup_hourly"); err != nil {
		t.Fatal(err)
	}
	if err := db.conn.Exec(ctx, "INSERT INTO ledger_rollup_hourly ("+list+", cluster) SELECT "+list+", '"+second+"' FROM ledger_rollup_hourly WHERE cluster = 'default'"); err != nil {
		t.Fatal(err)
	}

	for _, c := range []string{"default", second} {
		for title, want := range before {
			if strings.HasPrefix(title, "Findings") {
				continue
			}
			gotCols, got := db.run(t, b.panelSQL(t, title), month(), one(c))
			if msg := sameRows(want.cols, want.rows, gotCols, got, 1); msg != "" {
				t.Errorf("cluster %s, panel %q differs from the single-cluster ledger: %s", c, title, msg)
			}
		}
	}
	// Findings are the cluster "default"'s: all of them there, none in the other.
	for _, title := range []string{"Findings per day", "Findings"} {
		want := before[title]
		gotCols, got := db.run(t, b.panelSQL(t, title), month(), one("default"))
		if msg := sameRows(want.cols, want.rows, gotCols, got, 1); msg != "" {
			t.Errorf("cluster default, panel %q: %s", title, msg)
		}
		if _, got := db.run(t, b.panelSQL(t, title), month(), one(second)); len(got) != 0 {
			t.Errorf("cluster %s, panel %q: %d findings, want none", second, title, len(got))
		}
	}

	// All: the fleet holds and uses twice the single cluster's GPU-hours.
	for _, title := range []string{"GPU-hours per team and month", "Sharing modes over the time range", "Top workloads"} {
		want := before[title]
		gotCols, got := db.run(t, b.panelSQL(t, title), month(), all())
		if msg := sameRows(want.cols, want.rows, gotCols, got, 2); msg != "" {
			t.Errorf("All, panel %q is not twice the single cluster: %s", title, msg)
		}
	}
	// The fleet's invoice: its parts add up to its total, which is twice
	// the single cluster's to within the one rounding of the total.
	icols, inv := db.run(t, b.panelSQL(t, "Invoice per month"), month(), all())
	w := before["Invoice per month"]
	if len(inv) != 1 || len(w.rows) != 1 {
		t.Fatalf("invoice rows: %v, single cluster %v", inv, w.rows)
	}
	total := asFloat(t, inv[0][col(t, icols, "Total")])
	parts := asFloat(t, inv[0][col(t, icols, "Teams")]) + asFloat(t, inv[0][col(t, icols, "Platform (uncharged capacity)")]) +
		asFloat(t, inv[0][col(t, icols, "Rounding")])
	if math.Abs(parts-total) > 1e-6 {
		t.Errorf("fleet invoice: teams + platform + rounding = %.4f, total %.4f", parts, total)
	}
	if single := asFloat(t, w.rows[0][col(t, w.cols, "Total")]); math.Abs(total-2*single) > 0.01+1e-9 {
		t.Errorf("fleet invoice total %.2f, want twice %.2f within a cent", total, single)
	}

	// The cluster variable offers both; the team variable of the second
	// cluster alone offers the teams of the month.
	_, vals := db.run(t, b.variableSQL(t, "cluster"), month(), all())
	var offered []string
	for _, r := range vals {
		offered = append(offered, asString(r[0])+"="+asString(r[1]))
	}
	if want := []string{"default=" + hexOf("default"), second + "=" + hexOf(second)}; !slices.Equal(offered, want) {
		t.Errorf("cluster variable offers %q, want %q", offered, want)
	}
	_, allTeams := db.run(t, b.variableSQL(t, "team"), month(), all())
	_, secondTeams := db.run(t, b.variableSQL(t, "team"), month(), one(second))
	_, noTeams := db.run(t, b.variableSQL(t, "team"), month(), one("gpu-nowhere"))
	if len(allTeams) == 0 || !reflect.DeepEqual(allTeams, secondTeams) || len(noTeams) != 0 {
		t.Errorf("team variable: %d teams in the fleet, %d in %s (want the same), %d in an unknown cluster (want 0)",
			len(allTeams), len(secondTeams), second, len(noTeams))
	}
}

// forRows runs a query and calls f with each row.
func forRows(ctx context.Context, db *ledgerDB, q string, f func([]any)) error {
	_, rows, err := db.query(q)
	if err != nil {
		return fmt.Errorf("cannot run %s: %w", q, err)
	}
	for _, r := range rows {
		f(r)
	}
	return nil
}

// sameRows compares a panel's rows with want's, every number of got
// equal to factor times want's (relative 1e-9: sums of floats in another
// order), text exactly; "" when they agree. Efficiency, a ratio, and the
// months and labels are compared as they are.
func sameRows(wantCols []string, want [][]any, gotCols []string, got [][]any, factor float64) string {
	if !slices.Equal(wantCols, gotCols) {
		return fmt.Sprintf("columns %v, want %v", gotCols, wantCols)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for j, c := range wantCols {
			w, g := want[i][j], got[i][j]
			wf, wok := number(w)
			gf, gok := number(g)
			if !wok || !gok {
				if fmt.Sprint(deref(w)) != fmt.Sprint(deref(g)) {
					return fmt.Sprintf("row %d %s: %v, want %v", i, c, deref(g), deref(w))
				}
				continue
			}
			f := factor
			if c == "Efficiency" {
				f = 1
			}
			if math.Abs(gf-f*wf) > 1e-9*math.Max(1, math.Abs(f*wf)) {
				return fmt.Sprintf("row %d %s: %v, want %v × %v", i, c, gf, f, wf)
			}
		}
	}
	return ""
}

// number is a cell as a float64 when it is a number (nil pointers are no number).
func number(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return 0, false
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	}
	return 0, false
}

// deref is a cell's value behind its pointer, for text comparisons.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil
	}
	return rv.Interface()
}
