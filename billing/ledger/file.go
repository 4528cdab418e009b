package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

var (
	_ Store = (*FileStore)(nil)
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
	Logger    *slog.Logger
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
	// now is the clock Retention is measured on (tests set it).
	now func() time.Time
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
	if err := s.open(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	return s, nil
}

// Connection settings. synchronous=FULL: in WAL mode NORMAL already survives
// a killed process, but a committed Append must also survive the node losing
// power, which needs the WAL fsynced at every commit. The collector commits
// once per cycle, so the cost is one fsync per cycle. _txlock=immediate takes
// the write lock at BEGIN, so two processes on one file queue on busy_timeout
// instead of failing with SQLITE_BUSY at their first write.
// cache_size(-2048), SQLite's default of 2 MiB, is the writer's page cache:
// appends touch only the right edges of the B-trees, and Append measured the
// same with 2 and 16 MiB (BENCHMARKS.md), while a 16 MiB cache fills as the
// file grows and is private memory on every GPU node.
const (
	writerParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=journal_size_limit(67108864)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-2048)" +
		"&_auto_vacuum=INCREMENTAL&_txlock=immediate"
	readerParams = "_pragma=busy_timeout(10000)&_pragma=query_only(1)"
)

func (s *FileStore) open(ctx context.Context) error {
	var err error
	if s.w, err = sql.Open("sqlite", sqliteURI(s.path, writerParams)); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if err := s.groups.load(ctx, s.w); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	// Readers open after the migration so they find WAL mode and the schema.
	if s.r, err = sql.Open("sqlite", sqliteURI(s.path, readerParams)); err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, err)
	}
	s.r.SetMaxOpenConns(4)
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot open ledger file %s for reading: %w", s.path, err)
	}
	return nil
}

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
