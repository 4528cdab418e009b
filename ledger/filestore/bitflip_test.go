package filestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// flipLedger is a ledger of three hours of 20 GPUs at one-minute rows
// (18,000 rows): twelve rollup slots, the last one dirty, a per-device
// rollup of several pages and raw rows of many.
func flipLedger(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := fleetRows(t0, 180, time.Minute, 20)
	for i := 0; i < len(rows); i += 20 * 5 * 30 { // half an hour a commit, as a backfill writes
		if err := s.Append(ctx, rows[i:min(i+20*5*30, len(rows))], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// flipQueries are what reports ask of a ledger: day buckets per team and
// per device, per node, and a range whose edges cut slots (read raw).
var flipQueries = []struct {
	name string
	q    ledger.AggregateQuery
}{
	{"day", ledger.AggregateQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: ledger.BucketDay}},
	{"day by device", ledger.AggregateQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: ledger.BucketDay, ByDevice: true}},
	{"by node", ledger.AggregateQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: ledger.BucketDay, ByNode: true}},
	{"cut edges", ledger.AggregateQuery{From: t0.Add(37 * time.Minute), To: t0.Add(131 * time.Minute), Bucket: ledger.BucketNone}},
}

// flipAnswers reads every query of flipQueries; an open that fails is
// returned as the error of them all.
func flipAnswers(ctx context.Context, path string) ([][]ledger.Aggregate, []error) {
	out, errs := make([][]ledger.Aggregate, len(flipQueries)), make([]error, len(flipQueries))
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return out, errs
	}
	defer s.Close()
	for i, fq := range flipQueries {
		out[i], errs[i] = s.Aggregate(ctx, fq.q)
	}
	return out, errs
}

// tablePages lists the pages of each b-tree (a table or an index) of the
// file, from SQLite's dbstat, leaves and interior pages alike.
func tablePages(t *testing.T, path string) map[string][]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Query("SELECT name, pageno FROM dbstat WHERE pagetype IN ('leaf', 'internal') ORDER BY name, pageno")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string][]int{}
	for rs.Next() {
		var name string
		var p int
		if err := rs.Scan(&name, &p); err != nil {
			t.Fatal(err)
		}
		out[name] = append(out[name], p)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// cellKeyOffsets returns, for each cell of a leaf page, the file offset
// of the last byte of the cell's key (cellColumnOffsets of column 0).
func cellKeyOffsets(b []byte, page int) []int { return cellColumnOffsets(b, page, 0) }

// cellColumnOffsets returns, for each cell of a leaf page, the file offset
// of the last byte of value col: in a WITHOUT ROWID table or an index
// (b-tree page type 10) column col of the record, so col 0 is the low byte
// of a rollup row's slot; in a rowid table (13) col 0 is the rowid, a
// dirty mark's slot. It parses the page as the SQLite file format lays it
// out: header, cell pointer array, cell = payload-size varint, [rowid
// varint,] record header (its size, then a serial type per column),
// values. Values that are not integers or floats end the walk.
func cellColumnOffsets(b []byte, page, col int) []int {
	base := (page - 1) * testPageSize
	hdr := base
	if page == 1 {
		hdr += 100
	}
	if b[hdr] != 10 && b[hdr] != 13 {
		return nil
	}
	sizes := map[uint64]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8}
	n := int(binary.BigEndian.Uint16(b[hdr+3:]))
	var out []int
	for i := 0; i < n; i++ {
		cell := base + int(binary.BigEndian.Uint16(b[hdr+8+2*i:]))
		_, k := sqliteVarint(b[cell:])
		if b[hdr] == 13 {
			_, k2 := sqliteVarint(b[cell+k:])
			if col == 0 {
				out = append(out, cell+k+k2-1)
			}
			continue
		}
		rec := cell + k
		hsize, k2 := sqliteVarint(b[rec:])
		at, types := rec+int(hsize), rec+k2
		for c := 0; c <= col; c++ {
			st, k3 := sqliteVarint(b[types:])
			types += k3
			size, ok := sizes[st]
			if !ok && st != 8 && st != 9 { // 8 and 9: the constants 0 and 1, no bytes
				break
			}
			if c == col && size > 0 {
				out = append(out, at+size-1)
			}
			at += size
		}
	}
	return out
}

// sqliteVarint decodes SQLite's big-endian varint.
func sqliteVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 8; i++ {
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return v<<8 | uint64(b[8]), 9
}

// A flipped bit anywhere in the rollups, the dirty marks or the raw rows
// never gives a short (or long) bill silently: every aggregate a report
// asks for is either exactly the undamaged one or an error that names the
// file, and the file is left as it was. On the code before the rollup
// checksums, one flipped bit in a rollup slot key made a day's aggregate
// drop rows with no error, though SQLite's quick_check passed.
func TestFlippedBitsNeverBillSilently(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t)
	intact, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, errs := flipAnswers(ctx, path)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("undamaged %s: %v", flipQueries[i].name, err)
		}
		if len(want[i]) == 0 {
			t.Fatalf("undamaged %s: no aggregates", flipQueries[i].name)
		}
	}
	pages := tablePages(t, path)
	type flip struct {
		what string
		off  int
		bit  uint
	}
	var flips []flip
	// Every rollup key: the defect as found. Bits 0 and 4 of the low byte
	// move the slot by 1 or 16 (within or out of the reports' day).
	for _, table := range []string{"ledger_rollup", "ledger_rollup_device", "rollup_dirty"} {
		for _, p := range pages[table] {
			for i, off := range cellKeyOffsets(intact, p) {
				if i%10 != 0 && table == "ledger_rollup_device" {
					continue // a tenth of the device rollup's keys is plenty
				}
				flips = append(flips, flip{fmt.Sprintf("%s page %d key %d", table, p, i), off, uint(i % 2 * 4)})
			}
		}
	}
	// Bits across whole pages of every b-tree that reports read: keys,
	// values, record headers, cell pointers, interior pages.
	for _, table := range []string{"ledger_rollup", "ledger_rollup_device", "rollup_dirty", "row_groups", "ledger_rows", "ledger_rows_key"} {
		ps := pages[table]
		if len(ps) == 0 {
			t.Fatalf("no pages of %s in the file (dbstat: %v)", table, pages)
		}
		if len(ps) > 3 { // first, middle and last: the last holds the dirty slot
			ps = []int{ps[0], ps[len(ps)/2], ps[len(ps)-1]}
		}
		for _, p := range ps {
			for off := 8; off < testPageSize; off += 199 {
				flips = append(flips, flip{fmt.Sprintf("%s page %d byte %d", table, p, off), (p-1)*testPageSize + off, uint(off % 8)})
			}
		}
	}
	dir := t.TempDir()
	changed, ran := 0, 0
	for i, f := range flips {
		if testing.Short() && i%5 != 0 {
			continue
		}
		ran++
		damaged := append([]byte(nil), intact...)
		damaged[f.off] ^= 1 << f.bit
		p := filepath.Join(dir, fmt.Sprintf("flip-%d.db", i))
		if err := os.WriteFile(p, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		got, errs := flipAnswers(ctx, p)
		// Readers never write: no repair, no migration, not a byte.
		if after, err := os.ReadFile(p); err != nil || !bytes.Equal(after, damaged) {
			t.Errorf("%s: the read-only reads changed the file (%v)", f.what, err)
		}
		for k, err := range errs {
			switch {
			case err != nil:
				changed++
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%s, %s: the error does not name the file %s: %v", f.what, flipQueries[k].name, p, err)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s, %s: the error is not marked ErrCorrupt: %v", f.what, flipQueries[k].name, err)
				}
			case !reflect.DeepEqual(got[k], want[k]):
				t.Errorf("%s, %s: a different bill without an error: %s", f.what, flipQueries[k].name, diffAggs(got[k], want[k]))
			}
		}
		os.Remove(p)
	}
	t.Logf("%d flips, %d reads refused as damaged, the rest exact", ran, changed)
}

// diffAggs says how two aggregate lists differ, briefly.
func diffAggs(got, want []ledger.Aggregate) string {
	sum := func(as []ledger.Aggregate) (float64, int64) {
		var a float64
		var n int64
		for _, x := range as {
			a += x.AllocatedSeconds
			n += x.Rows
		}
		return a, n
	}
	ga, gn := sum(got)
	wa, wn := sum(want)
	return fmt.Sprintf("%d aggregates, %.6f allocated GPU-seconds in %d rows; want %d, %.6f in %d", len(got), ga, gn, len(want), wa, wn)
}

// A file of schema version 7 (no checksums), read read-only as it is:
// aggregates as a version-8 file's, and a flipped rollup key is refused
// at open by integrity_check. Its first writable open adds the checksums
// to every rollup row and dirty mark, after which a flipped bit inside a
// number of a rollup row, which no SQLite check sees, is refused too.
func TestVersion7FileGetsChecksums(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t)
	want, errs := flipAnswers(ctx, path)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", flipQueries[i].name, err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE ledger_rollup DROP COLUMN chk; ALTER TABLE ledger_rollup_device DROP COLUMN chk;
ALTER TABLE rollup_dirty DROP COLUMN chk; ALTER TABLE rollup_dirty DROP COLUMN seq; ALTER TABLE ledger_rows DROP COLUMN chk;
PRAGMA user_version = 7; VACUUM`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	got, errs := flipAnswers(ctx, path)
	for i, err := range errs {
		if err != nil || !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("version 7, %s: %v, or aggregates unlike version 8's", flipQueries[i].name, err)
		}
	}
	v7, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pages := tablePages(t, path)["ledger_rollup"]
	keys := cellKeyOffsets(v7, pages[len(pages)/2])
	damaged := append([]byte(nil), v7...)
	damaged[keys[len(keys)/2]] ^= 1 << 4
	flipped := filepath.Join(t.TempDir(), "v7-flipped.db")
	if err := os.WriteFile(flipped, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(ctx, flipped, FileOptions{}); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), flipped) {
		t.Errorf("read-only open of a version-7 file with a flipped rollup key: %v, want an error naming the file", err)
	}

	w, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	var unsummed int
	if err := w.r.QueryRow(`SELECT (SELECT count(*) FROM ledger_rollup WHERE chk = 0) + (SELECT count(*) FROM ledger_rollup_device WHERE chk = 0)
	+ (SELECT count(*) FROM rollup_dirty WHERE chk = 0 OR seq = 0) + (SELECT count(*) FROM rollup_dirty) - 1`).Scan(&unsummed); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if unsummed != 0 {
		t.Errorf("after the migration, %d rollup rows or dirty marks without a checksum (or not one dirty mark)", unsummed)
	}
	if got, errs = flipAnswers(ctx, path); !reflect.DeepEqual(got, want) || errors.Join(errs...) != nil {
		t.Fatalf("after the migration: %v, or aggregates unlike before", errors.Join(errs...))
	}
	v8, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pages = tablePages(t, path)["ledger_rollup"]
	allocs := cellColumnOffsets(v8, pages[len(pages)/2], 2) // allocated_gpu_seconds
	if len(allocs) == 0 {
		t.Fatal("no rollup row with a float allocated_gpu_seconds on the page")
	}
	damaged = append([]byte(nil), v8...)
	damaged[allocs[0]] ^= 1 // the lowest bit of the mantissa: no SQLite check sees it
	if err := os.WriteFile(flipped, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs = flipAnswers(ctx, flipped)
	if err := errs[0]; err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), flipped) {
		t.Errorf("a flipped bit in a rollup row's number after the migration: %v, want an error naming the file", err)
	}
}

// A collector appending to a file whose dirty mark has a flipped bit
// (SQLite's quick_check at its open passes) fails the append with an error
// naming the file, rather than recompute the slot the damaged mark names
// and leave the marked one stale and unmarked: billed short for good.
func TestAppendRefusesADamagedDirtyMark(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pages := tablePages(t, path)["rollup_dirty"]
	if len(pages) != 1 {
		t.Fatalf("rollup_dirty on pages %v, want one", pages)
	}
	keys := cellKeyOffsets(b, pages[0])
	if len(keys) != 1 {
		t.Fatalf("%d dirty marks, want the newest slot's alone", len(keys))
	}
	b[keys[0]] ^= 1 << 2 // the slot, four slots away
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatalf("the writable open's quick_check was expected to pass: %v", err)
	}
	defer s.Close()
	// The next slot's rows: the append moves on from the marked slot.
	err = s.Append(ctx, fleetRows(t0.Add(3*time.Hour), 1, time.Minute, 1), nil)
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Append past a damaged dirty mark: %v, want an error naming the file as damaged", err)
	}
}
