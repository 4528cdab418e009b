package filestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

var (
	_ ledger.Store = (*FileStore)(nil)
	// collector.Sink, matched without importing the collector.
	_ interface {
		Write(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error
	} = (*FileStore)(nil)
)

// DefaultMaxPendingRows bounds the rows a FileStore keeps in memory while
// commits fail (disk full, read-only file): about 30 MiB of rows, hours of a
// large node's output.
const DefaultMaxPendingRows = 100_000

// FileOptions tunes an embedded ledger.
type FileOptions struct {
	// MaxBytes bounds the file (0 = unbounded); Prune enforces it.
	MaxBytes int64
	// Sinks are the outbox sinks whose shipped marks gate pruning: a row
	// is pruned only once every one of them has shipped it. With no sinks
	// the file is the ledger of record and only Retention prunes it.
	Sinks []string
	// Retention, when positive, makes Prune delete rows whose interval
	// started longer ago than this, and findings that ended longer ago,
	// once every sink has shipped them (at once with no sinks). 0 keeps
	// them until MaxBytes needs the room.
	Retention time.Duration
	// MaxPendingRows bounds the rows held in memory for retry while
	// commits fail (0 = DefaultMaxPendingRows).
	MaxPendingRows int
	// MustExist makes OpenFile fail on a missing file instead of creating
	// an empty ledger: for readers (export, report).
	MustExist bool
	// ReadOnly opens the file for reading only (see OpenReadOnly): no
	// writer connection, no migration, no write lock taken. It implies
	// MustExist.
	ReadOnly bool
	// MoveAsideCorrupt: a file that fails the integrity check at open is
	// renamed to PATH.corrupt-TIMESTAMP (with its -wal and -shm), kept for
	// inspection, and a new empty ledger is started in its place. The
	// collector sets it: a node must keep recording. Without it a corrupt
	// file is an error.
	MoveAsideCorrupt bool
	Logger           *slog.Logger
}

// FileStore is the embedded ledger: one SQLite file in WAL mode holding
// ledger rows, findings and the outbox marks of the shippers. It is safe for
// concurrent use; writes are serialised through a single connection.
type FileStore struct {
	path string
	opts FileOptions
	log  *slog.Logger

	// w is the single writer connection, r the readers: WAL lets readers
	// stream an export while the collector keeps appending.
	w, r *sql.DB

	groups *groupCache

	mu       sync.Mutex // serialises Append and guards the fields below
	pending  []attribution.Row
	pendingF []attribution.Finding
	dropped  int64
	failing  bool
	// checkMu guards rowsChecked: a read-only store checks its raw rows
	// before the first read of them (checkRows).
	checkMu     sync.Mutex
	rowsChecked bool
	// hasChk: the file's rows carry checksums (schema version 8), which
	// reads verify. A read-only open of an older file reads without them.
	hasChk bool
	// hasCluster: the file keeps the cluster (schema version 11). A
	// read-only open of an older file reads every row, finding, quota
	// change and node label as the default cluster's (clusterCol).
	hasCluster bool
	// now is the clock Retention is measured on (tests set it).
	now func() time.Time
	// rollups are the verified records of the rollups, by grain.cache
	// (rollup_verified.go); genOf replaces generation in tests.
	rollups [2]rollupCache
	genOf   func() fileGen
}

// OpenFile opens (creating unless opts.MustExist) the ledger file at path
// and brings its schema to FileSchemaVersion.
func OpenFile(ctx context.Context, path string, opts FileOptions) (*FileStore, error) {
	if path == "" {
		return nil, errors.New("cannot open ledger file: empty path")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxPendingRows <= 0 {
		opts.MaxPendingRows = DefaultMaxPendingRows
	}
	if opts.MustExist {
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("no ledger file at %s", path)
			}
			return nil, fmt.Errorf("cannot open ledger file %s: %w", path, err)
		}
	}
	s := &FileStore{path: path, opts: opts, log: opts.Logger.With("ledger", path), groups: newGroupCache(), now: time.Now}
	open := s.open
	if opts.ReadOnly {
		open = s.openReadOnly
	}
	err := open(ctx)
	if err != nil && opts.MoveAsideCorrupt && !opts.ReadOnly && isCorrupt(err) {
		s.closeDBs()
		s.w, s.r = nil, nil
		if err = s.moveAside(err); err == nil {
			s.groups = newGroupCache()
			err = s.open(ctx)
		}
	}
	if err != nil {
		s.closeDBs()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens an existing ledger file for reading only, as every
// command that only reads (report, export, advise, a server of reports)
// should: it takes no write lock, so it never waits for or blocks a writer,
// and it never migrates. A file that is read-only, or sits in a read-only
// directory, can be read: in such a directory, where SQLite cannot create
// the -wal and -shm files beside the ledger, the file is opened immutable
// (no locking at all), which is right only because nothing can write there
// either. A file whose schema is older than version 5 is refused with an
// error saying to run `gpuledger ledger migrate` (ErrSchemaOutdated); a
// version-5 file is read as it is, with no quota changes (version 6 only
// adds them). Appends to such a store fail.
func OpenReadOnly(ctx context.Context, path string, opts FileOptions) (*FileStore, error) {
	opts.ReadOnly, opts.MustExist = true, true
	return OpenFile(ctx, path, opts)
}

// OpenForReading opens a file for a command that only reads: read-only as
// OpenReadOnly, except that a file with an older schema is first migrated
// through a writable open when it can be (as every open did before
// read-only opens), then reopened read-only.
func OpenForReading(ctx context.Context, path string, opts FileOptions) (*FileStore, error) {
	s, err := OpenReadOnly(ctx, path, opts)
	if err == nil || !errors.Is(err, ErrSchemaOutdated) {
		return s, err
	}
	wopts := opts
	wopts.ReadOnly, wopts.MustExist = false, true
	w, werr := OpenFile(ctx, path, wopts)
	if werr != nil {
		return nil, fmt.Errorf("%w; migrating it failed: %w", err, werr)
	}
	if werr := w.Close(); werr != nil {
		return nil, werr
	}
	return OpenReadOnly(ctx, path, opts)
}

// Connection settings. synchronous=FULL: in WAL mode NORMAL already survives
// a killed process, but a committed Append must also survive the node losing
// power, which needs the WAL fsynced at every commit. The collector commits
// once per cycle, so the cost is one fsync per cycle. _txlock=immediate takes
// the write lock at BEGIN, so two processes on one file queue on the busy
// timeout instead of failing with SQLITE_BUSY at their first write.
// cache_size(-2048), SQLite's default of 2 MiB, is the writer's page cache:
// appends touch only the right edges of the B-trees, and Append measured the
// same with 2 and 16 MiB (BENCHMARKS.md), while a 16 MiB cache fills as the
// file grows and is private memory on every GPU node.
//
// The busy timeout is the driver's _busy_timeout key, not a _pragma: the
// driver runs that key before everything else on every new connection,
// while a _pragma=busy_timeout ran after _auto_vacuum, whose statement then
// met a writer's lock with no timeout at all and failed with SQLITE_BUSY at
// once (readers opening beside a running collector failed that way).
//
// busyTimeout is a variable only so that tests of a lock held too long do
// not wait 10 s; every connection's _busy_timeout is set from it.
var busyTimeout = 10 * time.Second

// busyParam is the DSN key setting a connection's busy timeout.
func busyParam() string { return fmt.Sprintf("_busy_timeout=%d&", busyTimeout.Milliseconds()) }

const (
	writerParams = "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=journal_size_limit(67108864)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-2048)" +
		"&_txlock=immediate"
	readerParams = "_pragma=query_only(1)"
	// A read-only open: SQLite's mode=ro refuses every write, so nothing
	// (not even a journal-mode change) can take the write lock.
	readOnlyParams = "mode=ro&" + readerParams
	// immutable=1 tells SQLite that nobody changes the file: no locks, no
	// -shm, no -wal. Only for a file in a directory we cannot write.
	immutableParams = "mode=ro&immutable=1&" + readerParams
)

func (s *FileStore) open(ctx context.Context) error {
	// The check reads through a read-only connection, before the writer's
	// connection settings touch the file: a damaged file is kept exactly as
	// it was found.
	params := busyParam() + writerParams
	if fi, err := os.Stat(s.path); err == nil && fi.Size() > 0 {
		if err := s.checkBeforeWriting(ctx); err != nil {
			return err
		}
	} else {
		// auto_vacuum is settled when the first table is created; on an
		// existing file the pragma changes nothing but still waits for
		// the write lock, so only a new file gets it.
		params += "&_auto_vacuum=INCREMENTAL"
	}
	var err error
	if s.w, err = sql.Open("sqlite", sqliteURI(s.path, params)); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := retryBusy(ctx, func() error { return s.w.PingContext(ctx) }); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, s.describe(err))
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.hasChk, s.hasCluster = true, true
	if err := s.groups.load(ctx, s.w); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, s.describe(err))
	}
	// Readers open after the migration so they find WAL mode and the schema.
	if s.r, err = sql.Open("sqlite", sqliteURI(s.path, busyParam()+readerParams)); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	s.r.SetMaxOpenConns(4)
	if err := retryBusy(ctx, func() error { return s.r.PingContext(ctx) }); err != nil {
		return fmt.Errorf("cannot open ledger file %s for reading: %w", s.path, s.describe(err))
	}
	return nil
}

// checkBeforeWriting checks the whole existing file with quick_check.
func (s *FileStore) checkBeforeWriting(ctx context.Context) error {
	db, err := sql.Open("sqlite", sqliteURI(s.path, busyParam()+readOnlyParams))
	if err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return s.checkIntegrity(ctx, db, "")
}

// openReadOnly opens the readers with mode=ro, and s.w as one more
// read-only connection: the group lookups that go through the writer on a
// writable store go through it here, and any write on it fails.
func (s *FileStore) openReadOnly(ctx context.Context) error {
	params := readOnlyParams
	if !dirWritable(filepath.Dir(s.path)) {
		// SQLite cannot create the -shm (and -wal) here.
		wal, werr := os.Stat(s.path + "-wal")
		_, serr := os.Stat(s.path + "-shm")
		switch {
		case werr == nil && wal.Size() > 0 && serr != nil:
			// Commits in a -wal that nothing can index: an immutable
			// open would not see them.
			return fmt.Errorf("cannot open ledger file %s read-only: its write-ahead log %s holds commits, and the directory is read-only so SQLite cannot create %s-shm to read them: open it once where the directory is writable", s.path, s.path+"-wal", s.path)
		case werr == nil || serr == nil:
			// A writer may have the file open (a collector running
			// as another user): read with locks, through its -shm.
		default:
			// No writer can be there: nothing may be created beside
			// the file, and nothing was left by one.
			params = immutableParams
			s.log.Debug("ledger directory is read-only: opening the file immutable")
		}
	}
	var err error
	for _, db := range []**sql.DB{&s.w, &s.r} {
		if *db, err = sql.Open("sqlite", sqliteURI(s.path, busyParam()+params)); err != nil {
			return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
		}
	}
	s.w.SetMaxOpenConns(1)
	s.r.SetMaxOpenConns(4)
	err = retryBusy(ctx, func() error {
		return s.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(new(int))
	})
	if err != nil {
		return fmt.Errorf("cannot open ledger file %s read-only: %w", s.path, s.describe(err))
	}
	tx, err := s.w.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("cannot open ledger file %s read-only: %w", s.path, s.describe(err))
	}
	version, err := s.checkFile(ctx, tx)
	tx.Rollback()
	switch {
	case err != nil:
		return err
	case version == 0:
		return fmt.Errorf("ledger file %s is empty (no schema): nothing to read", s.path)
	case version < fileMinReadVersion:
		return fmt.Errorf("ledger file %s has schema version %d and this gpuledger reads version %d: %w; run `gpuledger ledger migrate --ledger %s` once where the file is writable",
			s.path, version, FileSchemaVersion, ErrSchemaOutdated, s.path)
	}
	s.hasChk, s.hasCluster = version >= 8, version >= 11
	if err := s.checkIntegrity(ctx, s.w, "small"); err != nil {
		return err
	}
	if err := s.groups.load(ctx, s.w); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, s.describe(err))
	}
	return nil
}

// ErrSchemaOutdated: a read-only open found a file that needs a migration,
// which only a writable open does.
var ErrSchemaOutdated = errors.New("the file needs a schema migration, which a read-only open does not do")

// sqliteURI builds a SQLite URI filename; '%', '?' and '#' in the path are
// escaped so any path names a file.
func sqliteURI(path, params string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + params
}

// Path is the ledger file.
func (s *FileStore) Path() string { return s.path }

// Write makes a FileStore a collector sink: it is Append.
func (s *FileStore) Write(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error {
	return s.Append(ctx, rows, findings)
}

// Close flushes rows still held for retry, then closes the file. Rows that
// still cannot be committed are reported as lost.
func (s *FileStore) Close() error {
	s.mu.Lock()
	var err error
	if n := len(s.pending) + len(s.pendingF); n > 0 {
		if cerr := s.commit(context.Background(), s.pending, s.pendingF); cerr != nil {
			s.log.Error("ledger closed with uncommitted rows: they are lost", "rows", len(s.pending), "findings", len(s.pendingF), "err", cerr)
			err = fmt.Errorf("cannot commit %d rows and %d findings held for retry in %s: %w", len(s.pending), len(s.pendingF), s.path, cerr)
		}
		s.pending, s.pendingF = nil, nil
	}
	s.mu.Unlock()
	if cerr := s.closeDBs(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func (s *FileStore) closeDBs() error {
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot close ledger file %s: %w", s.path, err)
	}
	return nil
}

// clusterCol is the cluster column of the findings, quota changes and
// node labels in SQL: the column, or in a file from before clusters the
// default cluster's name.
func (s *FileStore) clusterCol() string {
	if s.hasCluster {
		return "cluster"
	}
	return "'" + attribution.DefaultCluster + "'"
}
