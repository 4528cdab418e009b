package clickhouse

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
)

func fastFail() Options { return Options{MaxRetries: -1} }

func TestWrongCredentials(t *testing.T) {
	raw := harness.DSN(t)
	ctx := context.Background()
	if err := Migrate(ctx, mustDSN(t, raw), ""); err != nil {
		t.Fatal(err)
	}
	const badPassword = "not-the-password-4711"
	for _, c := range []struct{ name, user, password string }{
		{"wrong password", chtest.User, badPassword},
		{"unknown user", "nobody_here", badPassword},
	} {
		dsn := mustDSN(t, chtest.WithCredentials(raw, c.user, c.password))
		_, err := Open(ctx, dsn, Options{})
		if !errors.Is(err, ErrAuth) {
			t.Errorf("%s: Open error %v, want ErrAuth", c.name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "wrong user name or password") || !strings.Contains(msg, c.user) {
			t.Errorf("%s: error %q does not name the problem and the user", c.name, msg)
		}
		if strings.Contains(msg, badPassword) {
			t.Errorf("%s: error %q leaks the password", c.name, msg)
		}
		if err := Migrate(ctx, dsn, ""); !errors.Is(err, ErrAuth) {
			t.Errorf("%s: Migrate error %v, want ErrAuth", c.name, err)
		}
	}
}

func TestMissingSchema(t *testing.T) {
	ctx := context.Background()
	dsn := mustDSN(t, harness.DSN(t))
	_, err := Open(ctx, dsn, Options{})
	if !errors.Is(err, ErrSchemaMissing) || !strings.Contains(err.Error(), "gpuledger ledger migrate") ||
		!strings.Contains(err.Error(), dsn.Database) {
		t.Errorf("Open before migrate: %v, want ErrSchemaMissing naming the database and `gpuledger ledger migrate`", err)
	}

	s, _ := openTest(t)
	if err := s.conn.Exec(ctx, "DROP TABLE "+s.table(tableRows)); err != nil {
		t.Fatal(err)
	}
	err = s.Append(ctx, fleet(1, 1, 1, 1, t0), nil)
	if !errors.Is(err, ErrSchemaMissing) || !strings.Contains(err.Error(), "gpuledger ledger migrate") ||
		!strings.Contains(err.Error(), tableRows) {
		t.Errorf("Append into a dropped table: %v, want ErrSchemaMissing naming the table and the fix", err)
	}
}

func TestSchemaNewerThanBinary(t *testing.T) {
	s, dsn := openTest(t)
	ctx := context.Background()
	if err := s.recordMigration(ctx, migration{version: 99, description: "from the future"}); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, dsn, Options{})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "upgrade gpuledger") {
		t.Errorf("Open on a newer schema: %v, want ErrSchemaTooNew naming version 99 and the fix", err)
	}
	if err := Migrate(ctx, dsn, ""); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	s, dsn := openTest(t) // migrated once
	ctx := context.Background()
	appendAll(t, s, fleet(1, 1, 1, 10, t0), 100)
	for i := 0; i < 2; i++ {
		if err := Migrate(ctx, dsn, ""); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table(tableMigrations)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(migrations)) {
		t.Errorf("schema_migrations has %d rows after 3 migrates, want %d", n, len(migrations))
	}
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table(tableRows)).Scan(&n); err != nil || n != 50 {
		t.Errorf("rows after re-migrating: %d (%v), want the 50 written before", n, err)
	}
}

// TestClusterDDLParses sends the cluster-mode DDL to the real server: with
// no such cluster configured every statement must fail on the cluster, not
// on its syntax, so the DDL is valid on this server version.
func TestClusterDDLParses(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	stmts, err := MigrationDDL(s.db, "no_such_cluster")
	if err != nil {
		t.Fatal(err)
	}
	const syntaxError = 62
	for _, stmt := range stmts {
		err := s.conn.Exec(ctx, stmt)
		if err == nil {
			t.Errorf("%s: succeeded without a cluster", oneLine(stmt))
			continue
		}
		if serverCode(err) == syntaxError {
			t.Errorf("%s: syntax error: %v", oneLine(stmt), err)
		}
	}
}

// TestClusterWriteSettings writes with the cluster-mode settings against a
// single server: old servers take settings in another encoding, and the
// write must still work there.
func TestClusterWriteSettings(t *testing.T) {
	_, dsn := openTest(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{Cluster: "any"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := fleet(9, 1, 1, 5, t0)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatalf("Append with insert_distributed_sync: %v", err)
	}
	if got := len(collectRows(t, s, t0, t0.AddDate(0, 0, 1))); got != len(rows) {
		t.Errorf("read back %d rows, want %d", got, len(rows))
	}
}

func TestMalformedDSNs(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ dsn, want string }{
		{"clickhouse://u:p@127.0.0.1:1/db?secrue=true", `unknown option "secrue"`},
		{"clickhouse://u:p@127.0.0.1:1/db?compress=zstd", "compress"},
		{"clickhouse://u:p@127.0.0.1:1/db?skip_verify=maybe", "skip_verify"},
		{"clickhouse://u:p@127.0.0.1:1/db?dial_timeout=soon", "dial_timeout"},
		{"file:/tmp/x.db", "not a ClickHouse DSN"},
	} {
		d, err := ledger.ParseDSN(c.dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", c.dsn, err)
		}
		_, err = Open(ctx, d, fastFail())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want an error mentioning %q", c.dsn, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), ":p@") {
			t.Errorf("Open(%q) error leaks the password: %v", c.dsn, err)
		}
		if err := Migrate(ctx, d, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Migrate(%q) = %v, want an error mentioning %q", c.dsn, err, c.want)
		}
	}
	d := mustDSN(t, "clickhouse://u:p@127.0.0.1:9000/db")
	if err := Migrate(ctx, d, "bad;cluster"); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Errorf("Migrate with a bad cluster name = %v, want a cluster name error", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	d := mustDSN(t, "clickhouse://u:p@127.0.0.1:1/db?dial_timeout=1s")
	_, err := Open(context.Background(), d, fastFail())
	if err == nil || !strings.Contains(err.Error(), "cannot connect to ClickHouse at 127.0.0.1:1") {
		t.Errorf("Open on a closed port = %v, want a connect error naming the address", err)
	}
	if err != nil && !Retryable(errors.Unwrap(err)) {
		t.Logf("note: connect error classified as not retryable: %v", err)
	}
}
