package filestore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// mount runs mount(8) with args, skipping the test where mounts are not
// allowed (not root) unless GPULEDGER_REQUIRE_INTEGRATION=1. Permission
// bits do not stop root, so read-only volumes are real read-only mounts.
func mount(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("mount", args...).CombinedOutput()
	if err != nil {
		if os.Getenv("GPULEDGER_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("mount %s: %v: %s", strings.Join(args, " "), err, out)
		}
		t.Skipf("cannot mount here (mount %s: %v: %s)", strings.Join(args, " "), err, out)
	}
}

func unmountAtCleanup(t *testing.T, target string) {
	t.Cleanup(func() {
		if out, err := exec.Command("umount", target).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", target, err, out)
		}
	})
}

// writeLedger writes 3 intervals of 10 GPUs (150 rows) to path and closes it.
func writeLedger(t *testing.T, path string) int {
	t.Helper()
	ctx := context.Background()
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := fleetRows(t0, 3, time.Minute, 10)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

func readWhole(t *testing.T, s *FileStore, want int) {
	t.Helper()
	ctx := context.Background()
	n := 0
	if err := s.Rows(ctx, time.Time{}, time.Time{}, func(attribution.Row) error { n++; return nil }); err != nil {
		t.Fatalf("Rows: %v", err)
	}
	if n != want {
		t.Errorf("read %d rows, wrote %d", n, want)
	}
	aggs, err := s.Aggregate(ctx, ledger.AggregateQuery{From: t0, To: t0.Add(time.Hour), Bucket: ledger.BucketHour})
	if err != nil {
		t.Fatalf("Aggregate: %v", err)
	}
	var rows int64
	for _, a := range aggs {
		rows += a.Rows
	}
	if rows != int64(want) {
		t.Errorf("aggregates count %d rows, wrote %d", rows, want)
	}
}

// A ledger in a read-only directory (a read-only volume: SQLite cannot
// create the -wal and -shm there) is read whole by the reading commands'
// open; a writable open fails as before.
func TestReadOnlyDirectoryLedger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mount(t, "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir)
	unmountAtCleanup(t, dir)
	path := filepath.Join(dir, "ledger.db")
	want := writeLedger(t, path)
	mount(t, "-o", "remount,ro", dir)
	ctx := context.Background()
	for name, open := range map[string]func() (*FileStore, error){
		"OpenReadOnly":   func() (*FileStore, error) { return OpenReadOnly(ctx, path, FileOptions{}) },
		"OpenForReading": func() (*FileStore, error) { return OpenForReading(ctx, path, FileOptions{}) },
	} {
		t.Run(name, func(t *testing.T) {
			s, err := open()
			if err != nil {
				t.Fatalf("%s on a read-only volume: %v", name, err)
			}
			defer s.Close()
			readWhole(t, s, want)
			if err := s.Append(ctx, fleetRows(t0, 1, time.Minute, 1), nil); err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Errorf("Append to a read-only store: %v, want an error saying it is read-only", err)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the read-only directory holds %d entries, want the ledger alone", len(entries))
	}
}

// A read-only ledger file in a writable directory is read whole.
func TestReadOnlyFileLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	want := writeLedger(t, path)
	mount(t, "--bind", path, path)
	unmountAtCleanup(t, path)
	mount(t, "-o", "remount,bind,ro", path)
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Fatal("the bind-mounted file is still writable")
	}
	s, err := OpenForReading(context.Background(), path, FileOptions{})
	if err != nil {
		t.Fatalf("OpenForReading of a read-only file: %v", err)
	}
	defer s.Close()
	readWhole(t, s, want)
}

// A read-only open never migrates: a file with an older schema on a
// read-only volume is refused with an error that says to migrate it.
func TestReadOnlyOpenOfAnOlderSchema(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mount(t, "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir)
	unmountAtCleanup(t, dir)
	path := filepath.Join(dir, "ledger.db")
	writeLedger(t, path)
	ctx := context.Background()
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(undoSchema4and5 + "PRAGMA user_version = 3"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	mount(t, "-o", "remount,ro", dir)
	for name, open := range map[string]func() (*FileStore, error){
		"OpenReadOnly":   func() (*FileStore, error) { return OpenReadOnly(ctx, path, FileOptions{}) },
		"OpenForReading": func() (*FileStore, error) { return OpenForReading(ctx, path, FileOptions{}) },
	} {
		s, err := open()
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened a schema-3 file on a read-only volume", name)
		}
		if !errors.Is(err, ErrSchemaOutdated) || !strings.Contains(err.Error(), "ledger migrate") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file and saying to run ledger migrate", name, err)
		}
	}
}

// On a writable file, the reading commands' open migrates an older schema
// first, as opens always did, then reads it read-only.
func TestOpenForReadingMigratesAWritableFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	want := writeLedger(t, path)
	ctx := context.Background()
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(undoSchema4and5 + "PRAGMA user_version = 3"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := OpenForReading(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readWhole(t, r, want)
}
