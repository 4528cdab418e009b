package chcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpuledger/gpuledger/dashboards/chcheck"
	"github.com/gpuledger/gpuledger/internal/chdbtest"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

// runner runs a panel's SQL for a range and variables and returns its
// columns and rows: on the 18.16 server (ledgerDB.run) or on chDB.
type runner func(t testing.TB, sql string, r chcheck.Range, vars map[string]chcheck.Value) ([]string, [][]any)

// chdbLedger is the simulated month copied into chDB (ClickHouse 26.7):
// the same tables with the same rows, part by part.
type chdbLedger struct {
	src *ledgerDB
	db  string
}

var (
	chdbOnce sync.Once
	chdbErr  error
)

// chdbMonth is the simulated month in chDB, copied once from the server.
func chdbMonth(t testing.TB) *chdbLedger {
	t.Helper()
	db := simulatedMonth(t)
	engine.Require(t)
	srv := harness.Local()
	if srv == nil {
		t.Skip("chDB is filled from the server the tests start; " + chtest.EnvDSN + " names an external one")
	}
	c := &chdbLedger{src: db, db: db.dsn.Database}
	chdbOnce.Do(func() { chdbErr = engine.Mirror(context.Background(), c.server(), c.db, true) })
	if chdbErr != nil {
		t.Fatal(chdbErr)
	}
	return c
}

func (c *chdbLedger) server() chdbtest.Server {
	return chdbtest.Server{Addr: harness.Local().HTTPAddr(), User: chtest.User, Password: chtest.Password}
}

// syncPrices copies the server's price books again (a test wrote a newer
// one there).
func (c *chdbLedger) syncPrices(t testing.TB) {
	t.Helper()
	if err := engine.MirrorTable(context.Background(), c.server(), c.db, "gpuledger_prices", false); err != nil {
		t.Fatal(err)
	}
}

func (c *chdbLedger) run(t testing.TB, sql string, r chcheck.Range, vars map[string]chcheck.Value) ([]string, [][]any) {
	t.Helper()
	q, err := chcheck.Expand(sql, r, vars)
	if err != nil {
		t.Fatal(err)
	}
	cols, _, rows, err := c.query(q)
	if err != nil {
		t.Fatalf("%v\nquery:\n%s", err, q)
	}
	return cols, rows
}

// query runs q in the ledger's database and returns its columns, their
// types and its rows: numbers as float64, NULL as nil, the rest as text
// (what asString and asFloat read).
func (c *chdbLedger) query(q string) ([]string, []string, [][]any, error) {
	out, err := engine.Query(context.Background(), "USE "+c.db, "")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%v %s", err, out)
	}
	out, err = engine.Query(context.Background(), q, "JSONCompact")
	if err != nil {
		return nil, nil, nil, err
	}
	var res struct {
		Meta []struct{ Name, Type string }
		Data [][]any
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return nil, nil, nil, fmt.Errorf("cannot read chDB's JSONCompact: %w", err)
	}
	cols, types := make([]string, len(res.Meta)), make([]string, len(res.Meta))
	for i, m := range res.Meta {
		cols[i], types[i] = m.Name, m.Type
	}
	for _, row := range res.Data {
		for i, v := range row {
			s, ok := v.(string)
			if !ok || !numeric(types[i]) {
				continue
			}
			// 64-bit integers and decimals come quoted.
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("column %s (%s): %q is not a number", cols[i], types[i], s)
			}
			row[i] = f
		}
	}
	return cols, types, res.Data, nil
}

func numeric(typ string) bool {
	typ = strings.TrimSuffix(strings.TrimPrefix(typ, "Nullable("), ")")
	for _, p := range []string{"Int", "UInt", "Float", "Decimal"} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// TestEveryPanelRunsOnClickHouse26 runs every panel and variable on chDB
// with All selected: each returns rows, and no money column is Nullable
// (a NULL amount would show as an empty cell where the report has 0).
func TestEveryPanelRunsOnClickHouse26(t *testing.T) {
	c := chdbMonth(t)
	b := loadBoard(t)
	for _, p := range b.Panels {
		for _, tg := range p.Targets {
			q, err := chcheck.Expand(tg.RawSQL, month(), all())
			if err != nil {
				t.Fatal(err)
			}
			cols, types, rows, err := c.query(q)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
				continue
			}
			if len(rows) == 0 {
				t.Errorf("panel %q returned no rows", p.Title)
			}
			for i, typ := range types {
				if strings.HasPrefix(typ, "Nullable") && !strings.Contains(cols[i], "Efficiency") {
					t.Errorf("panel %q: column %q is %s", p.Title, cols[i], typ)
				}
			}
		}
	}
	for _, v := range b.Templating.List {
		if v.Name == "datasource" {
			continue
		}
		if _, rows := c.run(t, b.variableSQL(t, v.Name), month(), all()); len(rows) == 0 {
			t.Errorf("variable %s: no rows", v.Name)
		}
	}
}
