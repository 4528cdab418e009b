package chcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/dashprices"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/dashboards"
	"github.com/gpuledger/gpuledger/dashboards/chcheck"
	"github.com/gpuledger/gpuledger/internal/chdbtest"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

var (
	harness *chtest.Harness
	// engine is ClickHouse 26.7 (chDB): the panels run there too, on a
	// copy of the same ledger (chdb_test.go).
	engine *chdbtest.Engine
)

func TestMain(m *testing.M) {
	harness = chtest.Setup()
	engine = chdbtest.Setup()
	code := m.Run()
	engine.Close()
	harness.Close()
	os.Exit(code)
}

// board is the part of the generated dashboard the tests run.
type board struct {
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			RawSQL    string `json:"rawSql"`
			QueryType string `json:"queryType"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// loadBoard reads the ClickHouse dashboard as `make dashboards` writes it.
func loadBoard(t testing.TB) board {
	t.Helper()
	files, err := dashboards.Generate()
	if err != nil {
		t.Fatal(err)
	}
	data, ok := files[dashboards.FileName(dashboards.UIDChargebackCH)]
	if !ok {
		t.Fatalf("no dashboard %s", dashboards.UIDChargebackCH)
	}
	var b board
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b board) panelSQL(t testing.TB, title string) string {
	t.Helper()
	for _, p := range b.Panels {
		if p.Title == title {
			return p.Targets[0].RawSQL
		}
	}
	t.Fatalf("no panel %q", title)
	return ""
}

func (b board) variableSQL(t testing.TB, name string) string {
	t.Helper()
	for _, v := range b.Templating.List {
		if v.Name == name {
			m, _ := v.Query.(map[string]any)
			s, _ := m["rawSql"].(string)
			return s
		}
	}
	t.Fatalf("no variable %q", name)
	return ""
}

// ledgerDB is one database holding the simulated month, shared by the
// tests (filling it takes a few seconds).
type ledgerDB struct {
	dsn   ledger.DSN
	store *clickhouse.Store
	conn  driver.Conn
}

var (
	monthOnce sync.Once
	monthDB   *ledgerDB
	monthErr  error
)

func simulatedMonth(t testing.TB) *ledgerDB {
	t.Helper()
	harness.Require(t)
	monthOnce.Do(func() {
		monthDB, monthErr = newLedgerDB(t, func(ctx context.Context, s *clickhouse.Store) error {
			simMonth(ctx, t, s.Append)
			if err := s.WritePrices(ctx, dashprices.Of(shippedBook(t, "allocation", "shared", false)), time.Now()); err != nil {
				return err
			}
			return s.RebuildRollups(ctx, monthStart, monthEnd)
		})
	})
	if monthErr != nil {
		t.Fatal(monthErr)
	}
	return monthDB
}

func newLedgerDB(t testing.TB, fill func(context.Context, *clickhouse.Store) error) (*ledgerDB, error) {
	ctx := context.Background()
	dsn, err := ledger.ParseDSN(harness.DSN(t))
	if err != nil {
		return nil, err
	}
	if err := clickhouse.Migrate(ctx, dsn, ""); err != nil {
		return nil, err
	}
	if err := ensureClusterColumns(ctx, dsn); err != nil {
		return nil, err
	}
	s, err := clickhouse.Open(ctx, dsn, clickhouse.Options{})
	if err != nil {
		return nil, err
	}
	if err := fill(ctx, s); err != nil {
		return nil, err
	}
	conn, err := open(dsn)
	if err != nil {
		return nil, err
	}
	return &ledgerDB{dsn: dsn, store: s, conn: conn}, nil
}

func open(dsn ledger.DSN) (driver.Conn, error) {
	return ch.Open(&ch.Options{
		Addr: []string{fmt.Sprintf("%s:%d", dsn.Host, dsn.Port)},
		Auth: ch.Auth{Database: dsn.Database, Username: dsn.User, Password: dsn.Password},
	})
}

// clusterTables are the tables whose cluster column the dashboard reads.
var clusterTables = []string{"ledger_rollup_hourly", "ledger_findings"}

// ensureClusterColumns adds the column cluster String DEFAULT 'default'
// (every row of a ledger from before fleets is the cluster "default") to
// the tables the dashboard filters by cluster, where the migrations have
// not created it: the column is the ledger's, and these tests run the
// dashboard whether or not the store's migrations have it yet. 18.16 has
// no ADD COLUMN IF NOT EXISTS, hence system.columns first.
func ensureClusterColumns(ctx context.Context, dsn ledger.DSN) error {
	conn, err := open(dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, table := range clusterTables {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = 'cluster'",
			dsn.Database, table).Scan(&n); err != nil {
			return fmt.Errorf("cannot read the columns of %s: %w", table, err)
		}
		if n > 0 {
			continue
		}
		if err := conn.Exec(ctx, "ALTER TABLE "+table+" ADD COLUMN cluster String DEFAULT 'default'"); err != nil {
			return fmt.Errorf("cannot add the cluster column to %s: %w", table, err)
		}
	}
	return nil
}

// all selects All in every variable.
func all() map[string]chcheck.Value {
	return map[string]chcheck.Value{"cluster": {All: true}, "team": {All: true}, "namespace": {All: true}, "model": {All: true}}
}

// run expands sql for the range and variables and returns its rows, each
// cell as the driver scans it.
func (db *ledgerDB) run(t testing.TB, sql string, r chcheck.Range, vars map[string]chcheck.Value) ([]string, [][]any) {
	t.Helper()
	q, err := chcheck.Expand(sql, r, vars)
	if err != nil {
		t.Fatal(err)
	}
	cols, rows, err := db.query(q)
	if err != nil {
		t.Fatalf("%v\nquery:\n%s", err, q)
	}
	return cols, rows
}

func (db *ledgerDB) query(q string) ([]string, [][]any, error) {
	rs, err := db.conn.Query(context.Background(), q)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	types := rs.ColumnTypes()
	var out [][]any
	for rs.Next() {
		ptrs := make([]any, len(types))
		for i, ct := range types {
			ptrs[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]any, len(ptrs))
		for i, p := range ptrs {
			row[i] = reflect.ValueOf(p).Elem().Interface()
		}
		out = append(out, row)
	}
	return rs.Columns(), out, rs.Err()
}

// col returns the index of a column by name.
func col(t testing.TB, cols []string, name string) int {
	t.Helper()
	for i, c := range cols {
		if c == name {
			return i
		}
	}
	t.Fatalf("no column %q in %v", name, cols)
	return -1
}

func month() chcheck.Range {
	// Grafana's "Previous month" as of November 2026: to is the last
	// millisecond of the month.
	return chcheck.Range{From: monthStart, To: monthEnd.Add(-time.Millisecond)}
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case *string:
		if x == nil {
			return ""
		}
		return *x
	}
	return fmt.Sprint(v)
}

func asFloat(t testing.TB, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case float64:
		return x
	case *float64:
		if x == nil {
			return 0
		}
		return *x
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	}
	t.Fatalf("not a number: %T %v", v, v)
	return 0
}

func hexOf(s string) string { return strings.ToUpper(fmt.Sprintf("%x", s)) }
