package clickhouse

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

// ErrNotEmpty: a restore into a database that already holds ledger data,
// without force.
var ErrNotEmpty = errors.New("the database already holds ledger data")

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// Force empties every ledger table of the target before restoring
	// (TRUNCATE); without it a target holding any ledger row is refused.
	Force bool
}

// RestoreResult says what a restore wrote.
type RestoreResult struct {
	Manifest *BackupManifest
	Rows     map[string]uint64
	Hours    int // hours whose rollups were rebuilt
}

// ReadBackupManifest reads and checks dir's manifest: its format, schema
// version (no newer than this binary), and that its tables are exactly the
// ones a backup of that version holds.
func ReadBackupManifest(dir string) (*BackupManifest, error) {
	path := filepath.Join(dir, BackupManifestFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read backup manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read backup manifest %s: %w", path, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("backup manifest %s: larger than %d bytes", path, maxManifestBytes)
	}
	var m BackupManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("backup manifest %s: %w", path, err)
	}
	if m.Format != BackupFormat {
		return nil, fmt.Errorf("backup manifest %s: format %q, want %q", path, m.Format, BackupFormat)
	}
	if m.SchemaVersion < 1 {
		return nil, fmt.Errorf("backup manifest %s: schema_version %d: want 1 or more", path, m.SchemaVersion)
	}
	if m.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("backup manifest %s: %w: the backup is of schema version %d, this binary knows up to %d; restore it with a newer gpuledger",
			path, ErrSchemaTooNew, m.SchemaVersion, SchemaVersion)
	}
	var names []string
	for i, t := range m.Tables {
		names = append(names, t.Name)
		if t.File != t.Name+".tsv.gz" {
			return nil, fmt.Errorf("backup manifest %s: tables[%d] (%s): file %q, want %q", path, i, t.Name, t.File, t.Name+".tsv.gz")
		}
		if len(t.SHA256) != 64 {
			return nil, fmt.Errorf("backup manifest %s: tables[%d] (%s): sha256 %q is not a SHA-256 digest", path, i, t.Name, t.SHA256)
		}
		if len(t.Columns) == 0 {
			return nil, fmt.Errorf("backup manifest %s: tables[%d] (%s): no columns", path, i, t.Name)
		}
		for j, c := range t.Columns {
			if _, err := scanTarget(c.Type); err != nil || !identifier.MatchString(c.Name) {
				return nil, fmt.Errorf("backup manifest %s: tables[%d] (%s) column %d: %q %q is not a ledger column", path, i, t.Name, j, c.Name, c.Type)
			}
		}
	}
	if want := backupTables(m.SchemaVersion); !slices.Equal(names, want) {
		return nil, fmt.Errorf("backup manifest %s: tables %s; a backup of schema version %d holds %s",
			path, strings.Join(names, ", "), m.SchemaVersion, strings.Join(want, ", "))
	}
	return &m, nil
}

// VerifyBackup checks every file of the backup in dir against its
// manifest: size, SHA-256, and that each row parses with the manifest's
// columns and the row count matches. Nothing is written.
func VerifyBackup(dir string) (*BackupManifest, error) {
	m, err := ReadBackupManifest(dir)
	if err != nil {
		return nil, err
	}
	for _, t := range m.Tables {
		if err := readBackupFile(dir, t, func([]any) error { return nil }); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// readBackupFile streams the rows of t's file to fn, checking as it goes,
// and fails at the end when the file's size, digest or row count differ
// from the manifest. fn sees rows before the digest is known, so a
// restore verifies every file first.
func readBackupFile(dir string, t BackupTable, fn func([]any) error) error {
	path := filepath.Join(dir, t.File)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read backup file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	counted := &countingReader{r: io.TeeReader(f, h)}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("backup file %s: %s", path, fmt.Sprintf(format, args...))
	}
	// The digest decides first: a truncated or altered file is reported as
	// such, not as whatever parse error the damage happens to cause.
	digest := func() error {
		if _, err := io.Copy(io.Discard, counted); err != nil {
			return fail("%v", err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != t.SHA256 || counted.n != t.Bytes {
			return fail("SHA-256 %s of %d bytes, the manifest says %s of %d bytes: the file is truncated or altered", got, counted.n, t.SHA256, t.Bytes)
		}
		return nil
	}
	zr, err := gzip.NewReader(counted)
	if err != nil {
		if derr := digest(); derr != nil {
			return derr
		}
		return fail("%v", err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), maxBackupLine)
	line := 0
	var rows uint64
	parse := func() error {
		var names, types []string
		for sc.Scan() {
			line++
			fields := bytes.Split(sc.Bytes(), []byte{'\t'})
			switch line {
			case 1:
				for _, f := range fields {
					names = append(names, string(f))
				}
				continue
			case 2:
				for _, f := range fields {
					types = append(types, string(f))
				}
				if err := sameColumns(t.Columns, names, types); err != nil {
					return fail("header: %v", err)
				}
				continue
			}
			if len(fields) != len(t.Columns) {
				return fail("line %d: %d fields, want %d", line, len(fields), len(t.Columns))
			}
			vals := make([]any, len(fields))
			for i, fld := range fields {
				v, err := parseValue(t.Columns[i].Type, fld)
				if err != nil {
					return fail("line %d, column %s: %q: %v", line, t.Columns[i].Name, truncate(fld), err)
				}
				vals[i] = v
			}
			rows++
			if rows > t.Rows {
				return fail("more rows than the manifest's %d", t.Rows)
			}
			if err := fn(vals); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return fail("line %d: longer than %d bytes", line+1, maxBackupLine)
			}
			return fail("%v", err)
		}
		if line < 2 {
			return fail("no header (column names and types)")
		}
		return nil
	}
	perr := parse()
	if derr := digest(); derr != nil {
		return derr
	}
	if perr != nil {
		return perr
	}
	if rows != t.Rows {
		return fail("%d rows, the manifest says %d", rows, t.Rows)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

func sameColumns(cols []BackupColumn, names, types []string) error {
	if len(names) != len(cols) || len(types) != len(cols) {
		return fmt.Errorf("%d names and %d types, the manifest has %d columns", len(names), len(types), len(cols))
	}
	for i, c := range cols {
		if names[i] != c.Name || types[i] != c.Type {
			return fmt.Errorf("column %d is %s %s, the manifest says %s %s", i+1, names[i], types[i], c.Name, c.Type)
		}
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Restore loads the backup in dir into the database of dsn:
//
//  1. every file is checked against the manifest (size, SHA-256, rows)
//     before anything is written;
//  2. a database holding any ledger row is refused unless opts.Force;
//  3. the database is migrated to the backup's schema version, each
//     backup column checked against the table's, and with Force every
//     ledger table is truncated;
//  4. the rows are inserted as they were stored (unmerged duplicates
//     included);
//  5. the database is migrated to this binary's schema version and the
//     rollups are rebuilt from the restored rows.
//
// ClickHouse has no transactions: a restore that fails in step 4 or 5
// leaves part of the backup written; run it again with Force.
func Restore(ctx context.Context, dsn ledger.DSN, opts Options, dir string, ropts RestoreOptions) (*RestoreResult, error) {
	if opts.Cluster != "" {
		return nil, errors.New("cannot restore into a ClickHouse cluster: restore into a single server (docs/install.md)")
	}
	if ledger.ReservedClickHouseDatabase(dsn.Database) {
		return nil, fmt.Errorf("cannot restore into %s: database %q is ClickHouse's own (system tables); name a database for the ledger", dsn.Redacted(), dsn.Database)
	}
	m, err := VerifyBackup(dir)
	if err != nil {
		return nil, err
	}
	opts.defaults()
	// Connect without the database: it may not exist yet.
	conn, addr, err := connect(ctx, dsn, opts, "")
	if err != nil {
		return nil, err
	}
	s := &Store{conn: conn, opts: opts, log: opts.Logger, addr: addr, db: dsn.Database, user: dsn.User, writer: writerID(opts.Writer)}
	defer s.Close()
	if err := s.retry(ctx, "ping", func(ctx context.Context) error { return conn.Ping(ctx) }); err != nil {
		return nil, s.describe(fmt.Sprintf("cannot connect to ClickHouse at %s", addr), err)
	}
	held, err := s.ledgerRowCounts(ctx)
	if err != nil {
		return nil, err
	}
	if len(held) > 0 && !ropts.Force {
		return nil, fmt.Errorf("cannot restore into database %q on %s: %w (%s); restore into a new database, or pass --force to empty its ledger tables first",
			s.db, s.addr, ErrNotEmpty, strings.Join(held, ", "))
	}
	if err := migrateTo(ctx, dsn, "", m.SchemaVersion); err != nil {
		return nil, fmt.Errorf("cannot restore: %w", err)
	}
	for _, t := range m.Tables {
		if err := s.checkColumns(ctx, t); err != nil {
			return nil, err
		}
	}
	if ropts.Force {
		for _, name := range append(backupTables(SchemaVersion), derivedTables...) {
			if err := s.exec(ctx, "TRUNCATE TABLE IF EXISTS "+s.table(name)); err != nil {
				return nil, err
			}
		}
	}
	res := &RestoreResult{Manifest: m, Rows: map[string]uint64{}}
	for _, t := range m.Tables {
		n, err := s.loadTable(ctx, dir, t)
		if err != nil {
			return nil, fmt.Errorf("%w; the restore is incomplete: run it again with --force", err)
		}
		res.Rows[t.Name] = n
		s.log.Info("ledger table restored", "table", t.Name, "rows", n)
	}
	if err := Migrate(ctx, dsn, ""); err != nil {
		return nil, fmt.Errorf("cannot restore: %w", err)
	}
	st, err := Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if res.Hours, err = st.rebuildAll(ctx); err != nil {
		return nil, fmt.Errorf("cannot restore: %w", err)
	}
	return res, nil
}

// ledgerRowCounts names each ledger table of the target holding rows, with
// its count; a database or table that does not exist holds none.
func (s *Store) ledgerRowCounts(ctx context.Context) ([]string, error) {
	var present []string
	err := s.query(ctx, "list the tables of "+s.db,
		fmt.Sprintf("SELECT name FROM system.tables WHERE database = '%s' ORDER BY name", s.db), // validated identifier
		func(rs driver.Rows) error {
			var name string
			if err := rs.Scan(&name); err != nil {
				return scanError{err}
			}
			present = append(present, name)
			return nil
		})
	if err != nil {
		return nil, err
	}
	var held []string
	for _, name := range append(backupTables(SchemaVersion), derivedTables...) {
		if !slices.Contains(present, name) {
			continue
		}
		var n uint64
		err := s.retry(ctx, "count rows", func(ctx context.Context) error {
			return s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table(name)).Scan(&n)
		})
		if err != nil {
			return nil, s.describe(fmt.Sprintf("cannot count the rows of %s on %s", s.table(name), s.addr), err)
		}
		if n > 0 {
			held = append(held, fmt.Sprintf("%s: %d rows", name, n))
		}
	}
	return held, nil
}

// checkColumns refuses a backup column the target table lacks or types
// differently, before anything is inserted.
func (s *Store) checkColumns(ctx context.Context, t BackupTable) error {
	have := map[string]string{}
	err := s.query(ctx, "read the columns of "+s.table(t.Name),
		fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = '%s' AND table = '%s'", s.db, t.Name),
		func(rs driver.Rows) error {
			var name, typ string
			if err := rs.Scan(&name, &typ); err != nil {
				return scanError{err}
			}
			have[name] = typ
			return nil
		})
	if err != nil {
		return err
	}
	for _, c := range t.Columns {
		if have[c.Name] != c.Type {
			return fmt.Errorf("cannot restore %s: the backup's column %s %s is %q in %s on %s",
				t.Name, c.Name, c.Type, have[c.Name], s.table(t.Name), s.addr)
		}
	}
	return nil
}

// loadTable inserts the rows of t's file in batches of restoreBatchRows.
// A batch is not retried: a half-sent batch sent again would double the
// price book's rows (a plain MergeTree).
func (s *Store) loadTable(ctx context.Context, dir string, t BackupTable) (uint64, error) {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	query := "INSERT INTO " + s.table(t.Name) + " (" + strings.Join(names, ", ") + ")"
	var (
		batch driver.Batch
		inB   int
		total uint64
	)
	send := func() error {
		if batch == nil {
			return nil
		}
		err := batch.Send()
		batch, inB = nil, 0
		if err != nil {
			return s.describe(fmt.Sprintf("cannot insert into %s on %s", s.table(t.Name), s.addr), err)
		}
		return nil
	}
	err := readBackupFile(dir, t, func(vals []any) error {
		if batch == nil {
			b, err := s.conn.PrepareBatch(s.writeCtx(ctx), query)
			if err != nil {
				return s.describe(fmt.Sprintf("cannot insert into %s on %s", s.table(t.Name), s.addr), err)
			}
			batch = b
		}
		if err := batch.Append(vals...); err != nil {
			return fmt.Errorf("cannot insert into %s: row %d: %w", s.table(t.Name), total+1, err)
		}
		inB++
		total++
		if inB >= restoreBatchRows {
			return send()
		}
		return nil
	})
	if err != nil {
		if batch != nil {
			_ = batch.Abort()
		}
		return total, err
	}
	return total, send()
}

// rebuildAll marks every hour holding restored rows as written by this
// store and rebuilds the rollups of those hours and their days.
func (s *Store) rebuildAll(ctx context.Context) (int, error) {
	var hours []time.Time
	err := s.query(ctx, "list the hours of "+s.table(tableRows),
		"SELECT DISTINCT toStartOfHour(interval_start) AS h FROM "+s.table(tableRows)+" ORDER BY h",
		func(rs driver.Rows) error {
			var h time.Time
			if err := rs.Scan(&h); err != nil {
				return scanError{err}
			}
			hours = append(hours, h.UTC())
			return nil
		})
	if err != nil || len(hours) == 0 {
		return 0, err
	}
	// Marks in bounded inserts; Aggregate ignores the rollups of an hour
	// marked but not yet rebuilt, so an interrupted rebuild is slow, not
	// wrong.
	for lo := 0; lo < len(hours); lo += 10000 {
		if err := s.mark(ctx, hours[lo:min(lo+10000, len(hours))]); err != nil {
			return 0, err
		}
	}
	// One month at a time, so that one rebuild's state stays small.
	for from := hours[0]; from.Before(hours[len(hours)-1].Add(time.Hour)); {
		to := time.Date(from.Year(), from.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		if err := s.RebuildRollups(ctx, from, to); err != nil {
			return 0, err
		}
		from = to
	}
	return len(hours), nil
}
