package clickhouse

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// A backup is a directory (docs/ledger-format.md, "Backup and restore"):
// manifest.json and one <table>.tsv.gz per table the ledger owns, each a
// gzip of ClickHouse's TabSeparatedWithNamesAndTypes format, written from
// the native protocol's typed columns. TSV rather than Native or RowBinary
// through the server: clickhouse-go v2 decodes every block itself (it has
// no raw FORMAT passthrough), its HTTP interface does not work with 18.16
// (doc.go), and TSV is what `clickhouse-client --query "INSERT INTO t
// FORMAT TabSeparatedWithNamesAndTypes"` loads on any server version.
const (
	// BackupFormat names the layout in the manifest; a restore refuses
	// any other.
	BackupFormat = "gpuledger-clickhouse-backup/1"
	// BackupManifestFile is the manifest's name in a backup directory.
	BackupManifestFile = "manifest.json"

	maxManifestBytes = 1 << 20
	// maxBackupLine bounds one row of a backup file (a row of the ledger
	// is well under a kilobyte; a finding's detail a few).
	maxBackupLine = 16 << 20
	// restoreBatchRows bounds the rows one restore INSERT holds in memory.
	restoreBatchRows = 100000
)

// derivedTables are rebuilt from the restored rows, never backed up: the
// server cannot read several tables at one instant (18.16 has no
// snapshots), so a rollup dumped a moment before or after the raw rows
// could disagree with them and bill wrong; rebuilt from the restored rows
// it cannot.
var derivedTables = []string{tableMarks, tableBuilds, tableCoverage, tableHourly, tableDaily, tableCovHourly, tableCovDaily, tableDevHourly, tableDevDaily}

// BackupManifest describes a backup: what, from where, when, and the
// digest of every file, checked before a restore writes anything.
type BackupManifest struct {
	Format           string        `json:"format"`
	GpuledgerVersion string        `json:"gpuledger_version"`
	CreatedAt        time.Time     `json:"created_at"`
	Database         string        `json:"database"`
	SchemaVersion    int           `json:"schema_version"`
	Tables           []BackupTable `json:"tables"`
	// Rebuilt lists the rollup tables a restore rebuilds from the rows.
	Rebuilt []string `json:"rebuilt"`
}

// BackupTable is one table's file.
type BackupTable struct {
	Name    string         `json:"name"`
	File    string         `json:"file"`
	Columns []BackupColumn `json:"columns"`
	Rows    uint64         `json:"rows"`
	Bytes   int64          `json:"bytes"`
	SHA256  string         `json:"sha256"`
}

// BackupColumn is a column as the server names and types it.
type BackupColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

var createdTable = regexp.MustCompile(`^CREATE TABLE IF NOT EXISTS [A-Za-z0-9_]+\.([A-Za-z0-9_]+)[ \n(]`)

// backupTables are the tables a backup of schema version v holds: every
// table its migrations create, less the derived ones. Read from the
// migrations themselves, so a table a later migration adds is backed up
// without anyone remembering to list it.
func backupTables(v int) []string {
	var out []string
	for _, m := range migrations {
		if m.version > v {
			break
		}
		for _, stmt := range m.statements("db", "") {
			if t := createdTable.FindStringSubmatch(stmt); t != nil && !slices.Contains(derivedTables, t[1]) {
				out = append(out, t[1])
			}
		}
	}
	return out
}

// Backup writes every table the ledger of dsn owns into the new directory
// dir (refused if it exists): written beside it and renamed into place
// once whole, so a failed backup never leaves a directory that looks
// complete. Rows are read as stored, unmerged duplicates included (the
// readers use FINAL, so they bill the same after a restore). The tables
// are read one after another, not at one instant: rows shipped while it
// runs may be in one table and not another; each row is whole.
func Backup(ctx context.Context, dsn ledger.DSN, opts Options, dir, gpuledgerVersion string) (*BackupManifest, error) {
	if dir == "" || dir == "-" {
		return nil, errors.New("cannot back up: the backup is a directory; name one with --out (standard output cannot hold it)")
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("cannot back up to %s: it exists; name a new directory", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot back up to %s: %w", dir, err)
	}
	s, err := openAnyVersion(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	v, err := s.schemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	if err := usableVersion(v, s.db, s.addr); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".partial-")
	if err != nil {
		return nil, fmt.Errorf("cannot back up to %s: %w", dir, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	m := &BackupManifest{Format: BackupFormat, GpuledgerVersion: gpuledgerVersion, CreatedAt: time.Now().UTC().Truncate(time.Second),
		Database: s.db, SchemaVersion: v, Rebuilt: derivedTables}
	for _, name := range backupTables(v) {
		bt, err := s.dumpTable(ctx, name, tmp)
		if err != nil {
			return nil, err
		}
		m.Tables = append(m.Tables, bt)
		s.log.Info("ledger table backed up", "table", name, "rows", bt.Rows, "bytes", bt.Bytes)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode the backup manifest: %w", err)
	}
	if err := writeSynced(filepath.Join(tmp, BackupManifestFile), append(data, '\n')); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("cannot back up to %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("cannot move the backup into place at %s: %w", dir, err)
	}
	done = true
	return m, nil
}

// openAnyVersion connects to dsn's database without requiring the newest
// schema: a backup of an older ledger, taken before migrating it, is the
// one most worth having.
func openAnyVersion(ctx context.Context, dsn ledger.DSN, opts Options) (*Store, error) {
	opts.defaults()
	conn, addr, err := connect(ctx, dsn, opts, dsn.Database)
	if err != nil {
		return nil, err
	}
	s := &Store{conn: conn, opts: opts, log: opts.Logger, addr: addr, db: dsn.Database, user: dsn.User, writer: writerID(opts.Writer)}
	if err := s.retry(ctx, "ping", func(ctx context.Context) error { return conn.Ping(ctx) }); err != nil {
		conn.Close()
		return nil, s.describe(fmt.Sprintf("cannot connect to ClickHouse at %s", addr), err)
	}
	return s, nil
}

func usableVersion(v int, db, addr string) error {
	switch {
	case v == 0:
		return fmt.Errorf("cannot back up database %q on %s: %w: it has no ledger schema", db, addr, ErrSchemaMissing)
	case v > SchemaVersion:
		return fmt.Errorf("cannot back up database %q on %s: %w: it is at schema version %d, this binary knows up to %d; upgrade gpuledger",
			db, addr, ErrSchemaTooNew, v, SchemaVersion)
	}
	return nil
}

// dumpTable writes every stored row of name to dir/<name>.tsv.gz.
func (s *Store) dumpTable(ctx context.Context, name, dir string) (BackupTable, error) {
	bt := BackupTable{Name: name, File: name + ".tsv.gz"}
	path := filepath.Join(dir, bt.File)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return bt, fmt.Errorf("cannot create backup file %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	counted := &countingWriter{w: io.MultiWriter(f, h)}
	zw, err := gzip.NewWriterLevel(counted, gzip.BestSpeed)
	if err != nil {
		return bt, err
	}
	w := bufio.NewWriterSize(zw, 256<<10)
	// No retry once rows flow: a retried read would write them twice.
	rs, err := s.conn.Query(ctx, "SELECT * FROM "+s.table(name))
	if err != nil {
		return bt, s.describe(fmt.Sprintf("cannot read %s on %s", s.table(name), s.addr), err)
	}
	defer rs.Close()
	types := rs.ColumnTypes()
	vals := make([]any, len(types))
	for i, ct := range types {
		c := BackupColumn{Name: ct.Name(), Type: ct.DatabaseTypeName()}
		if vals[i], err = scanTarget(c.Type); err != nil {
			return bt, fmt.Errorf("cannot back up column %s of %s: %w", c.Name, s.table(name), err)
		}
		bt.Columns = append(bt.Columns, c)
	}
	writeHeader(w, bt.Columns)
	var line []byte
	for rs.Next() {
		if err := rs.Scan(vals...); err != nil {
			return bt, s.describe(fmt.Sprintf("cannot read %s on %s", s.table(name), s.addr), err)
		}
		line = line[:0]
		for i, v := range vals {
			if i > 0 {
				line = append(line, '\t')
			}
			line = appendTSV(line, v)
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return bt, fmt.Errorf("cannot write backup file %s: %w", path, err)
		}
		bt.Rows++
	}
	if err := rs.Err(); err != nil {
		return bt, s.describe(fmt.Sprintf("cannot read %s on %s", s.table(name), s.addr), err)
	}
	if err := w.Flush(); err != nil {
		return bt, fmt.Errorf("cannot write backup file %s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		return bt, fmt.Errorf("cannot write backup file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return bt, fmt.Errorf("cannot write backup file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return bt, fmt.Errorf("cannot write backup file %s: %w", path, err)
	}
	bt.Bytes, bt.SHA256 = counted.n, hex.EncodeToString(h.Sum(nil))
	return bt, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

// The column types the ledger's tables use; a backup refuses any other
// rather than writing a value it could not read back exactly.
const (
	typeString   = "String"
	typeUInt8    = "UInt8"
	typeUInt32   = "UInt32"
	typeUInt64   = "UInt64"
	typeInt64    = "Int64"
	typeFloat64  = "Float64"
	typeDateTime = "DateTime('UTC')"
)

const tsvTime = "2006-01-02 15:04:05"

func scanTarget(typ string) (any, error) {
	switch typ {
	case typeString:
		return new(string), nil
	case typeUInt8:
		return new(uint8), nil
	case typeUInt32:
		return new(uint32), nil
	case typeUInt64:
		return new(uint64), nil
	case typeInt64:
		return new(int64), nil
	case typeFloat64:
		return new(float64), nil
	case typeDateTime:
		return new(time.Time), nil
	}
	return nil, fmt.Errorf("type %s is not one a ledger backup carries", typ)
}

func writeHeader(w *bufio.Writer, cols []BackupColumn) {
	for i, c := range cols {
		if i > 0 {
			w.WriteByte('\t')
		}
		w.Write(appendEscaped(nil, c.Name))
	}
	w.WriteByte('\n')
	for i, c := range cols {
		if i > 0 {
			w.WriteByte('\t')
		}
		w.Write(appendEscaped(nil, c.Type))
	}
	w.WriteByte('\n')
}

// appendTSV writes v as ClickHouse's TabSeparated does: floats in the
// shortest form that reads back to the same bits, inf and nan as
// ClickHouse spells them.
func appendTSV(b []byte, v any) []byte {
	switch v := v.(type) {
	case *string:
		return appendEscaped(b, *v)
	case *uint8:
		return strconv.AppendUint(b, uint64(*v), 10)
	case *uint32:
		return strconv.AppendUint(b, uint64(*v), 10)
	case *uint64:
		return strconv.AppendUint(b, *v, 10)
	case *int64:
		return strconv.AppendInt(b, *v, 10)
	case *float64:
		switch {
		case math.IsNaN(*v):
			return append(b, "nan"...)
		case math.IsInf(*v, 1):
			return append(b, "inf"...)
		case math.IsInf(*v, -1):
			return append(b, "-inf"...)
		}
		return strconv.AppendFloat(b, *v, 'g', -1, 64)
	case *time.Time:
		return v.UTC().AppendFormat(b, tsvTime)
	}
	panic(fmt.Sprintf("appendTSV: unexpected %T", v)) // scanTarget made every target
}

// appendEscaped escapes what TabSeparated must: backslash, tab, newline,
// carriage return and NUL. Other bytes, invalid UTF-8 included, are kept
// as they are, so a String comes back byte for byte.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0')
		default:
			b = append(b, c)
		}
	}
	return b
}

// unescape reverses appendEscaped and also reads the escapes ClickHouse's
// own TabSeparated output uses (\b, \f, \', \").
func unescape(field []byte) (string, error) {
	if !slices.Contains(field, '\\') {
		return string(field), nil
	}
	out := make([]byte, 0, len(field))
	for i := 0; i < len(field); i++ {
		c := field[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i++; i == len(field) {
			return "", errors.New("a backslash ends the field")
		}
		switch field[i] {
		case '\\':
			out = append(out, '\\')
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case '0':
			out = append(out, 0)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case '\'', '"', '/':
			out = append(out, field[i])
		default:
			return "", fmt.Errorf("unknown escape \\%c", field[i])
		}
	}
	return string(out), nil
}

// parseValue reads one field of type typ into the Go value the driver
// inserts.
func parseValue(typ string, field []byte) (any, error) {
	if typ == typeString {
		return unescape(field)
	}
	s := string(field)
	switch typ {
	case typeUInt8:
		v, err := strconv.ParseUint(s, 10, 8)
		return uint8(v), err
	case typeUInt32:
		v, err := strconv.ParseUint(s, 10, 32)
		return uint32(v), err
	case typeUInt64:
		return strconv.ParseUint(s, 10, 64)
	case typeInt64:
		return strconv.ParseInt(s, 10, 64)
	case typeFloat64:
		switch s {
		case "nan", "-nan":
			return math.NaN(), nil
		case "inf", "+inf":
			return math.Inf(1), nil
		case "-inf":
			return math.Inf(-1), nil
		}
		return strconv.ParseFloat(s, 64)
	case typeDateTime:
		return time.ParseInLocation(tsvTime, s, time.UTC)
	}
	return nil, fmt.Errorf("type %s is not one a ledger backup carries", typ)
}
