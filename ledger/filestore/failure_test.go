package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gpuledger/gpuledger/attribution"
)

// fillDisk makes the writer connection's database full: max_page_count
// caps the file at its current size, which works as root too (chmod does
// not stop root).
func fillDisk(t *testing.T, s *FileStore, full bool) {
	t.Helper()
	limit := int64(1 << 31)
	if full {
		if err := s.w.QueryRow("PRAGMA page_count").Scan(&limit); err != nil {
			t.Fatal(err)
		}
	}
	var got int64
	if err := s.w.QueryRow(fmt.Sprintf("PRAGMA max_page_count = %d", limit)).Scan(&got); err != nil {
		t.Fatal(err)
	}
}

func isSQLiteCode(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == code
}

func TestAppendDiskFullHoldsRowsUntilSpaceReturns(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	a := fleetRows(t0, 2, time.Minute, 4)
	b := fleetRows(t0.Add(2*time.Minute), 20, time.Minute, 8)
	c := fleetRows(t0.Add(22*time.Minute), 20, time.Minute, 8)
	d := fleetRows(t0.Add(42*time.Minute), 2, time.Minute, 4)
	if err := s.Append(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	fillDisk(t, s, true)
	err := s.Append(ctx, b, nil)
	if err == nil || !isSQLiteCode(err, sqlite3.SQLITE_FULL) {
		t.Fatalf("Append on a full disk: %v, want an error wrapping SQLITE_FULL", err)
	}
	if s.PendingRows() != len(b) {
		t.Fatalf("held %d rows, want %d", s.PendingRows(), len(b))
	}
	if err := s.Append(ctx, c, nil); err == nil {
		t.Fatal("second Append on a full disk succeeded")
	}
	if s.PendingRows() != len(b)+len(c) {
		t.Fatalf("held %d rows, want %d", s.PendingRows(), len(b)+len(c))
	}
	if n := countRows(t, s); n != int64(len(a)) {
		t.Fatalf("%d rows stored while full, want %d (no partial batch)", n, len(a))
	}

	fillDisk(t, s, false) // space returns
	if err := s.Append(ctx, d, nil); err != nil {
		t.Fatalf("Append after space returned: %v", err)
	}
	if s.PendingRows() != 0 || s.DroppedRows() != 0 {
		t.Fatalf("after recovery: %d held, %d dropped", s.PendingRows(), s.DroppedRows())
	}
	want := append(append(append(append([]attribution.Row(nil), a...), b...), c...), d...)
	sortRows(want)
	if got := readAll(t, s, time.Time{}, time.Time{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after recovery: %d rows, want %d (every held row, once)", len(got), len(want))
	}
}

func TestAppendRetryBufferIsBounded(t *testing.T) {
	ctx := context.Background()
	b := fleetRows(t0, 10, time.Minute, 4)
	c := fleetRows(t0.Add(10*time.Minute), 10, time.Minute, 4)
	s := openTemp(t, FileOptions{MaxPendingRows: len(b) + 5})
	if err := s.Append(ctx, fleetRows(t0.Add(-time.Hour), 1, time.Minute, 1), nil); err != nil {
		t.Fatal(err)
	}
	fillDisk(t, s, true)
	s.Append(ctx, b, nil)
	s.Append(ctx, c, nil)
	if s.PendingRows() != len(b)+5 {
		t.Fatalf("held %d rows, bound %d", s.PendingRows(), len(b)+5)
	}
	if s.DroppedRows() != int64(len(c)-5) {
		t.Fatalf("dropped %d rows, want %d", s.DroppedRows(), len(c)-5)
	}
	fillDisk(t, s, false)
	if err := s.Append(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The newest rows survive: the oldest were dropped.
	want := append(append([]attribution.Row(nil), b[len(c)-5:]...), c...)
	sortRows(want)
	if got := readAll(t, s, t0, time.Time{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("kept %d rows, want the newest %d", len(got), len(want))
	}
}

func TestAppendReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: chmod does not stop writes (TestAppendDiskFullHoldsRowsUntilSpaceReturns covers the failure path)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "l.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Chmod(p, 0o444)
	}
	os.Chmod(dir, 0o555)
	rows := fleetRows(t0, 3, time.Minute, 2)
	// A fresh connection opens read-only; the open one may still write
	// through its file handle, so force a reconnect.
	s.w.SetMaxIdleConns(0)
	s.w.SetMaxIdleConns(1)
	err = s.Append(ctx, rows, nil)
	os.Chmod(dir, 0o755)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Chmod(p, 0o644)
	}
	if err == nil {
		t.Skip("file system let a read-only file be written")
	}
	if !isSQLiteCode(err, sqlite3.SQLITE_READONLY) {
		t.Errorf("Append to a read-only file: %v, want an error wrapping SQLITE_READONLY", err)
	}
	if s.PendingRows() != len(rows) {
		t.Fatalf("held %d rows, want %d", s.PendingRows(), len(rows))
	}
	s.w.SetMaxIdleConns(0)
	s.w.SetMaxIdleConns(1)
	if err := s.Append(ctx, nil, nil); err != nil {
		t.Fatalf("after chmod back: %v", err)
	}
	if n := countRows(t, s); n != int64(len(rows)) {
		t.Fatalf("%d rows stored, want %d", n, len(rows))
	}
}
