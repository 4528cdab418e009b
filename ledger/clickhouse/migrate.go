package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

// Migrate brings the database of dsn to SchemaVersion: it creates the
// database, records each applied step in schema_migrations and skips steps
// already recorded, so running it again changes nothing. With cluster set
// every table is created ON CLUSTER as Replicated* storage (<name>_local)
// behind a Distributed table of the public name.
func Migrate(ctx context.Context, dsn ledger.DSN, cluster string) error {
	return migrateTo(ctx, dsn, cluster, SchemaVersion)
}

// migrateTo applies the migrations up to version upto (tests build older
// databases with it).
func migrateTo(ctx context.Context, dsn ledger.DSN, cluster string, upto int) error {
	if ledger.ReservedClickHouseDatabase(dsn.Database) {
		return fmt.Errorf("cannot migrate ledger %s: database %q is ClickHouse's own (system tables); name a database for the ledger", dsn.Redacted(), dsn.Database)
	}
	opts := Options{Cluster: cluster}
	opts.defaults()
	// Connect without a database: it may not exist yet.
	conn, addr, err := connect(ctx, dsn, opts, "")
	if err != nil {
		return err
	}
	defer conn.Close()
	s := &Store{conn: conn, opts: opts, log: opts.Logger, addr: addr, db: dsn.Database, user: dsn.User}
	if err := s.retry(ctx, "ping", func(ctx context.Context) error { return conn.Ping(ctx) }); err != nil {
		return s.describe(fmt.Sprintf("cannot connect to ClickHouse at %s", addr), err)
	}
	boot := append([]string{createDatabaseDDL(s.db, cluster)}, tableDDL(s.db, cluster, migrationsTable)...)
	for _, stmt := range boot {
		if err := s.exec(ctx, stmt); err != nil {
			return err
		}
	}
	current, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if current > SchemaVersion {
		return fmt.Errorf("cannot migrate database %q on %s: %w: it is at version %d, this binary knows up to %d; upgrade gpuledger",
			s.db, addr, ErrSchemaTooNew, current, SchemaVersion)
	}
	for _, m := range migrations {
		if m.version <= current || m.version > upto {
			continue
		}
		for _, stmt := range m.statements(s.db, cluster) {
			if err := s.exec(ctx, stmt); err != nil {
				return fmt.Errorf("cannot apply migration %d (%s): %w", m.version, m.description, err)
			}
		}
		for _, c := range m.columns {
			if err := s.addColumn(ctx, cluster, c); err != nil {
				return fmt.Errorf("cannot apply migration %d (%s): %w", m.version, m.description, err)
			}
		}
		for _, t := range m.rekeys {
			if err := s.rekey(ctx, cluster, t); err != nil {
				return fmt.Errorf("cannot apply migration %d (%s): %w", m.version, m.description, err)
			}
		}
		if err := s.recordMigration(ctx, m); err != nil {
			return err
		}
		s.log.Info("applied ClickHouse ledger migration", "database", s.db, "version", m.version, "description", m.description)
	}
	return nil
}

// addColumn adds c to each of its tables that lacks it, as this server
// sees them: a migrate interrupted after the ALTER runs the step again.
// ON CLUSTER DDL is queued in ZooKeeper, so the other hosts get it even
// when the first attempt was cut off after queueing.
func (s *Store) addColumn(ctx context.Context, cluster string, c addedColumn) error {
	for _, t := range c.targets(cluster) {
		var n uint64
		err := s.retry(ctx, "schema columns", func(ctx context.Context) error {
			return s.conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
				s.db, t, c.name).Scan(&n)
		})
		if err != nil {
			return s.describe(fmt.Sprintf("cannot read the columns of %s on %s", qualified(s.db, t), s.addr), err)
		}
		if n > 0 {
			continue
		}
		for _, stmt := range c.ddl(s.db, cluster, t) {
			if err := s.exec(ctx, stmt); err != nil {
				return err
			}
		}
	}
	return nil
}

// rekey copies t's table into one keyed as t says (rekeyDDL) unless the
// table already has t's last column. The old table's columns are read
// from the server, so the copy takes exactly what is stored. A migrate
// cut off after the copy's rows went in, before the swap, copies them
// again under the same versions: the ReplacingMergeTree collapses them.
func (s *Store) rekey(ctx context.Context, cluster string, t table) error {
	storage := t.name
	if cluster != "" {
		storage += "_local"
	}
	var cols []string
	err := s.query(ctx, "read the columns of "+s.table(storage),
		fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = '%s'", s.db, storage),
		func(rs driver.Rows) error {
			var c string
			if err := rs.Scan(&c); err != nil {
				return scanError{err}
			}
			cols = append(cols, c)
			return nil
		})
	if err != nil {
		return err
	}
	last := columnNames(t.columns)
	if len(cols) == 0 || slices.Contains(cols, last[len(last)-1]) {
		return nil // created with the column, or copied already
	}
	for _, stmt := range rekeyDDL(s.db, cluster, t, cols) {
		if err := s.exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) exec(ctx context.Context, stmt string) error {
	err := s.retry(ctx, "ddl", func(ctx context.Context) error { return s.conn.Exec(ctx, stmt) })
	if err != nil {
		return s.describe(fmt.Sprintf("cannot run %q on %s", oneLine(stmt), s.addr), err)
	}
	return nil
}

func (s *Store) recordMigration(ctx context.Context, m migration) error {
	err := s.retry(ctx, "record migration", func(ctx context.Context) error {
		b, err := s.conn.PrepareBatch(s.writeCtx(ctx), "INSERT INTO "+s.table(tableMigrations)+" (version, description, applied_at)")
		if err != nil {
			return err
		}
		if err := b.Append(uint32(m.version), m.description, time.Now().UTC().Truncate(time.Second)); err != nil {
			_ = b.Abort()
			return permanentError{err}
		}
		return b.Send()
	})
	if err != nil {
		return s.describe(fmt.Sprintf("cannot record migration %d in %s on %s", m.version, s.table(tableMigrations), s.addr), err)
	}
	return nil
}

// schemaVersion is the highest applied migration (0 when none).
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var v uint32
	err := s.retry(ctx, "schema version", func(ctx context.Context) error {
		return s.conn.QueryRow(ctx, "SELECT max(version) FROM "+s.table(tableMigrations)).Scan(&v)
	})
	if err != nil {
		return 0, s.describe(fmt.Sprintf("cannot read the schema version of database %q on %s", s.db, s.addr), err)
	}
	return int(v), nil
}

// checkSchema refuses a database this binary cannot use.
func (s *Store) checkSchema(ctx context.Context) error {
	v, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case v == 0:
		return fmt.Errorf("%w: database %q on %s has no ledger schema: run `gpuledger ledger migrate`", ErrSchemaMissing, s.db, s.addr)
	case v < SchemaVersion:
		return fmt.Errorf("%w: database %q on %s is at schema version %d, this binary needs %d: run `gpuledger ledger migrate`",
			ErrSchemaOutdated, s.db, s.addr, v, SchemaVersion)
	case v > SchemaVersion:
		return fmt.Errorf("%w: database %q on %s is at schema version %d, this binary knows up to %d: upgrade gpuledger",
			ErrSchemaTooNew, s.db, s.addr, v, SchemaVersion)
	}
	return nil
}
