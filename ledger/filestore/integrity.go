package filestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuledger/gpuledger/ledger"

	"modernc.org/sqlite"
)

// ErrCorrupt marks errors caused by a damaged ledger file: SQLite found it
// malformed, or it is not a database at all. It is the contract's
// ledger.ErrCorrupt, so a damaged stored bill reads the same in both
// stores.
var ErrCorrupt = ledger.ErrCorrupt

// SQLite's primary result codes that matter here.
const (
	sqliteBusy    = 5
	sqliteLocked  = 6
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// sqliteCode is the primary result code of a SQLite error, or 0.
func sqliteCode(err error) int {
	var e interface{ Code() int }
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

func isCorrupt(err error) bool {
	if errors.Is(err, ErrCorrupt) {
		return true
	}
	c := sqliteCode(err)
	return c == sqliteCorrupt || c == sqliteNotADB
}

// describe marks a SQLite error that says the file is damaged, so that the
// message says what to do and callers can tell it with errors.Is.
func (s *FileStore) describe(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || !isCorrupt(err) {
		return err
	}
	return fmt.Errorf("%w (%w: do not trust what was read from it; restore it or move it aside)", err, ErrCorrupt)
}

// retryBusy runs fn again while SQLite answers SQLITE_BUSY or SQLITE_LOCKED
// without waiting on the busy handler, as it does while another connection
// recovers the write-ahead log or changes the journal mode, for at most
// busyTimeout in all.
func retryBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(busyTimeout)
	wait := 5 * time.Millisecond
	for {
		err := fn()
		if c := sqliteCode(err); c != sqliteBusy && c != sqliteLocked || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// smallTables are the tables a read-only open checks at once: everything
// but the raw rows, a few percent of a month's file. The raw rows, most of
// the file, are checked before the first read of them (checkRows). They
// get SQLite's full integrity_check, not quick_check: quick_check does not
// compare keys with their neighbours, so a flipped bit in a rollup key
// passes it while the range read of a report stops at that row and bills
// short; nor does it compare a row group's names with their unique index,
// so a flipped bit in a team's name would move its cost to another name.
var smallTables = []string{"row_groups", "meta", "outbox_marks", "findings", "ledger_rollup", "rollup_dirty", "annotation_pins", "ledger_rollup_device"}

// checkIntegrity runs SQLite's quick_check, which reads every page of
// what it checks and verifies the B-tree structure, record formats and
// indexes (not the values inside records: the row checksums below do, for
// what a bill is made of). scope "" checks the whole file; "small" the
// tables that are not raw rows, with integrity_check; "rows" the raw rows
// and their index.
func (s *FileStore) checkIntegrity(ctx context.Context, db *sql.DB, scope string) error {
	var targets []string
	switch scope {
	case "":
		targets = []string{"PRAGMA quick_check(3)"}
	case "small":
		// integrity_check, see smallTables.
		tables := smallTables
		// A version-5 file, read as it is, has no quota table, and one
		// before version 7 no node labels.
		for _, t := range []string{"quota_changes", "node_labels"} {
			if has, err := hasTable(ctx, db, t); err != nil {
				return fmt.Errorf("cannot check ledger file %s: %w", s.path, s.describe(err))
			} else if has {
				tables = append(tables[:len(tables):len(tables)], t)
			}
		}
		for _, t := range tables {
			targets = append(targets, "PRAGMA integrity_check("+t+")")
		}
	case "rows":
		targets = []string{"PRAGMA quick_check(ledger_rows)"}
	}
	for _, q := range targets {
		var problems []string
		err := retryBusy(ctx, func() error {
			problems = problems[:0]
			rs, err := db.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var line string
				if err := rs.Scan(&line); err != nil {
					return err
				}
				line = strings.TrimSpace(strings.TrimPrefix(line, "*** in database main ***"))
				if line != "ok" && len(problems) < 3 {
					problems = append(problems, strings.ReplaceAll(line, "\n", "; "))
				}
			}
			return rs.Err()
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("cannot check ledger file %s: %w", s.path, ctx.Err())
			}
			return fmt.Errorf("cannot check ledger file %s: %w", s.path, s.describe(err))
		}
		if len(problems) > 0 {
			return fmt.Errorf("ledger file %s is corrupt (SQLite %s: %s): %w", s.path, strings.TrimPrefix(q, "PRAGMA "), strings.Join(problems, "; "), ErrCorrupt)
		}
	}
	return nil
}

// checkRows checks the raw rows of a read-only store once, before the
// first read that walks them (Rows, ContainerRows): a damaged index can
// end such a scan early without any error, which a report would take for
// the whole ledger. Reports that read only the rollups never pay for it.
func (s *FileStore) checkRows(ctx context.Context) error {
	if !s.opts.ReadOnly {
		return nil // a writable open checked the whole file
	}
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	if s.rowsChecked {
		return nil
	}
	if err := s.checkIntegrity(ctx, s.r, "rows"); err != nil {
		return err
	}
	s.rowsChecked = true
	return nil
}

// moveAside renames a corrupt ledger (and its -wal and -shm) out of the
// way, keeping it for inspection, so that a new ledger can start at path.
func (s *FileStore) moveAside(cause error) error {
	dst := fmt.Sprintf("%s.corrupt-%s", s.path, s.now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(s.path, dst); err != nil {
		return fmt.Errorf("%w; moving it aside failed: %w", cause, err)
	}
	for _, ext := range []string{"-wal", "-shm"} {
		if err := os.Rename(s.path+ext, dst+ext); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w; moving its %s aside failed: %w", cause, ext, err)
		}
	}
	s.log.Error("ledger file is corrupt: moved it aside, kept it, and started a new empty ledger; the rows in the old file are not read or shipped from now on",
		"moved_to", dst, "err", cause)
	return nil
}

// dirWritable says whether the directory accepts new files: access(2)
// answers for read-only mounts even for root, whom permission bits do not
// stop.
func dirWritable(dir string) bool {
	return syscall.Access(dir, 0x2 /* W_OK */) == nil
}

// walWriteLockByte is the byte of the -shm file that SQLite locks (a POSIX
// record lock) while a connection holds a WAL database's write lock.
const walWriteLockByte = 120

// busyWriter explains a write lock that the busy timeout gave up on,
// naming the process that holds it where the system says (another
// process's POSIX lock on the -shm file).
func (s *FileStore) busyWriter(err error) error {
	if sqliteCode(err) != sqliteBusy {
		return err
	}
	if pid := lockHolder(s.path + "-shm"); pid > 0 {
		return fmt.Errorf("ledger file %s is being written by process %d, which held its write lock for more than %s: %w", s.path, pid, busyTimeout, err)
	}
	return fmt.Errorf("ledger file %s is being written by another connection, which held its write lock for more than %s: %w", s.path, busyTimeout, err)
}

// lockHolder returns the pid of another process holding SQLite's WAL write
// lock on shm, or 0 when none does (or the system cannot tell). It reads
// /proc/locks rather than asking with fcntl: closing any descriptor of the
// -shm file would drop every POSIX lock this process's own SQLite
// connections hold on it.
func lockHolder(shm string) int {
	fi, err := os.Stat(shm)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	inode := ":" + strconv.FormatUint(st.Ino, 10)
	for _, line := range strings.Split(string(b), "\n") {
		// 1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 120 120
		f := strings.Fields(line)
		if len(f) < 8 || f[1] != "POSIX" || f[3] != "WRITE" || !strings.HasSuffix(f[5], inode) {
			continue
		}
		pid, _ := strconv.Atoi(f[4])
		lo, _ := strconv.ParseInt(f[6], 10, 64)
		hi, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			hi = math.MaxInt64 // EOF: to the end of the file
		}
		if pid > 0 && pid != os.Getpid() && lo <= walWriteLockByte && walWriteLockByte <= hi {
			return pid
		}
	}
	return 0
}

// Row checksums. SQLite keeps no checksums of its pages, so since schema
// version 8 every rollup row, dirty mark and raw row carries one in its
// chk column: a hash of the values a bill is made of, key included. A
// reader recomputes it for every row it bills from and refuses the file
// when one differs (ErrCorrupt, naming the file): a flipped bit in a
// number or a key that SQLite's checks pass is found, where before it
// billed short with exit 0.
//
// chk 0 means "written without a checksum" (rows and rollups written
// before version 8, or by an older collector still running on a file a
// newer gpuledger migrated): such a row is not verified. A checksum always
// has bits 0 and 62 set, so no single flipped bit turns one into 0.

// chkFunc is the SQL name of checksum, registered with the driver so that
// the rollup's INSERT ... SELECT and the readers' raw checks compute the
// same hash as Go does.
const chkFunc = "gpuledger_chk"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(chkFunc, -1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		h := newChecksum()
		for _, a := range args {
			if err := h.add(a); err != nil {
				return nil, err
			}
		}
		return h.sum(), nil
	})
}

// checksum is 64-bit FNV-1a over a typed encoding of values: any change of
// one byte of the encoding changes the hash (each step is a bijection).
type checksum uint64

func newChecksum() checksum { return 14695981039346656037 }

func (h *checksum) byte(b byte) { *h = (*h ^ checksum(b)) * 1099511628211 }

func (h *checksum) u64(v uint64) {
	for i := 0; i < 8; i++ {
		h.byte(byte(v >> (8 * i)))
	}
}

func (h *checksum) i64(v int64) { h.byte('i'); h.u64(uint64(v)) }

func (h *checksum) f64(v float64) { h.byte('f'); h.u64(math.Float64bits(v)) }

func (h *checksum) str(v string) {
	h.byte('s')
	h.u64(uint64(len(v)))
	for i := 0; i < len(v); i++ {
		h.byte(v[i])
	}
}

// add hashes one value as SQLite hands it to a function and as a reader
// scans it: a type tag, then the 8 bytes of a number or the length and
// bytes of a text.
func (h *checksum) add(v any) error {
	switch v := v.(type) {
	case int64:
		h.i64(v)
	case float64:
		h.f64(v)
	case string:
		h.str(v)
	case []byte:
		h.str(string(v))
	case nil:
		h.byte('n')
	default:
		return fmt.Errorf("cannot checksum a %T", v)
	}
	return nil
}

func (h checksum) sum() int64 { return int64(uint64(h) | 1<<62 | 1) }

// checksumOf is the checksum of values of the types add takes.
func checksumOf(vals ...any) int64 {
	h := newChecksum()
	for _, v := range vals {
		if err := h.add(v); err != nil {
			panic(err) // callers pass int64, float64 and string only
		}
	}
	return h.sum()
}

// errDamaged says that what a read found cannot be what was written, and
// what to do, as describe does for SQLite's own findings; the caller
// wraps it with the file's path.
func errDamaged(format string, args ...any) error {
	return fmt.Errorf("%s (%w: do not trust what was read from it; restore it or move it aside)", fmt.Sprintf(format, args...), ErrCorrupt)
}
