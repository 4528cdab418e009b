package filestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// corruption is one way a ledger file gets damaged on disk: it rewrites the
// bytes of a whole file.
type corruption struct {
	name    string
	corrupt func(b []byte) []byte
}

const testPageSize = 4096

// randomBytes writes n random bytes at random offsets past the header page,
// as a failing disk or a stray writer might.
func randomBytes(seed int64, n int) func([]byte) []byte {
	return func(b []byte) []byte {
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < n; i++ {
			b[testPageSize+r.Intn(len(b)-testPageSize)] = byte(r.Intn(256))
		}
		return b
	}
}

// fillPage overwrites page number p (1-based) with v.
func fillPage(p int, v byte) func([]byte) []byte {
	return func(b []byte) []byte {
		copy(b[(p-1)*testPageSize:p*testPageSize], bytes.Repeat([]byte{v}, testPageSize))
		return b
	}
}

// corruptions is the corpus every run goes through. Each must really
// damage the file: the test first confirms that SQLite's own
// integrity_check fails on it.
var corruptions = []corruption{
	{"64 random bytes, seed 1", randomBytes(1, 64)},
	{"64 random bytes, seed 2", randomBytes(2, 64)},
	{"64 random bytes, seed 7", randomBytes(7, 64)},
	{"64 random bytes, seed 11", randomBytes(11, 64)},
	{"8 random bytes, seed 3", randomBytes(3, 8)},
	{"a page of zeros in the middle", func(b []byte) []byte { return fillPage(len(b)/testPageSize/2, 0)(b) }},
	{"a page of 0xff in the middle", func(b []byte) []byte { return fillPage(len(b)/testPageSize/2, 0xff)(b) }},
	{"the last page zeroed", func(b []byte) []byte { return fillPage(len(b)/testPageSize, 0)(b) }},
	{"the file cut in half", func(b []byte) []byte { return b[:len(b)/2/testPageSize*testPageSize] }},
	{"the header garbled", func(b []byte) []byte { copy(b[:100], bytes.Repeat([]byte("garbage!"), 13)); return b }},
	{"the schema page garbled", func(b []byte) []byte {
		r := rand.New(rand.NewSource(5))
		for i := 100; i < testPageSize; i += 7 {
			b[i] = byte(r.Intn(256))
		}
		return b
	}},
}

// intactLedger builds a ledger of 40 one-minute intervals of 100 GPUs
// (20,000 rows) with findings, and returns its bytes, its rows and its day
// aggregates as read before any damage.
func intactLedger(t *testing.T) ([]byte, int, []ledger.Aggregate) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := fleetRows(t0, 40, time.Minute, 100)
	findings := []attribution.Finding{{Kind: "test", Node: "node-0", Start: t0, End: t0.Add(time.Hour), Detail: "d"}}
	if err := s.Append(ctx, rows, findings); err != nil {
		t.Fatal(err)
	}
	aggs, err := s.Aggregate(ctx, ledger.AggregateQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: ledger.BucketDay})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("closing left a -wal: the file alone is not the whole ledger")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, len(rows), aggs
}

// sqliteSaysCorrupt is the oracle: SQLite's full integrity_check, run on
// the file directly.
func sqliteSaysCorrupt(t *testing.T, path string) bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check(1)").Scan(&res); err != nil {
		return true // malformed or not a database at all
	}
	return res != "ok"
}

// sqliteQuickCheckPasses says whether SQLite's quick_check, what a
// writable open and a reader's raw-rows check run, finds nothing.
func sqliteQuickCheckPasses(t *testing.T, path string) bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA quick_check(1)").Scan(&res); err != nil {
		return false
	}
	return res == "ok"
}

// containerRowsOf reads every container row of the ledger at path.
func containerRowsOf(ctx context.Context, path string) ([]attribution.Row, error) {
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []attribution.Row
	err = s.ContainerRows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error { out = append(out, r); return nil })
	return out, err
}

// A damaged ledger is never read as if whole: opening it for writing
// fails, a read-only open or its first read of the rows fails, and either
// error names the file; aggregates come out either as they were or as an
// error. A collector's open moves the file aside, keeps it byte for byte,
// says so, and starts a new ledger. Damage that SQLite's quick_check does
// not see (a table row's copy of its key no longer matching its index
// entry: only integrity_check, which costs a seek per row, compares them)
// a writer's open cannot see either; reads of the container rows, which
// read neither every column nor the checksum, must then give exactly the
// undamaged rows or an error, as aggregates must.
func TestCorruptLedgerIsNeverReadAsWhole(t *testing.T) {
	intact, nRows, intactAggs := intactLedger(t)
	ctx := context.Background()
	intactPath := filepath.Join(t.TempDir(), "intact.db")
	if err := os.WriteFile(intactPath, intact, 0o644); err != nil {
		t.Fatal(err)
	}
	intactContainers, err := containerRowsOf(ctx, intactPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ledger.db")
			damaged := c.corrupt(append([]byte(nil), intact...))
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			if !sqliteSaysCorrupt(t, path) {
				t.Fatalf("corpus case %q leaves a file SQLite finds intact", c.name)
			}
			quickPasses := sqliteQuickCheckPasses(t, path)
			wantErr := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error", what)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("%s: error does not name the file %s: %v", what, path, err)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: error is not marked corrupt: %v", what, err)
				}
			}

			same := func(step string) {
				if b, _ := os.ReadFile(path); !bytes.Equal(b, damaged) {
					i := 0
					for i < len(b) && i < len(damaged) && b[i] == damaged[i] {
						i++
					}
					t.Fatalf("%s changed the file at byte %d (len %d -> %d)", step, i, len(damaged), len(b))
				}
			}
			// Read-only, as report, export and advise open it.
			ro, err := OpenReadOnly(ctx, path, FileOptions{})
			if err != nil {
				wantErr("OpenReadOnly", err)
			} else {
				n := 0
				err := ro.Rows(ctx, time.Time{}, time.Time{}, func(attribution.Row) error { n++; return nil })
				wantErr("Rows", err)
				var got []attribution.Row
				err = ro.ContainerRows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error { got = append(got, r); return nil })
				switch {
				case err == nil && !quickPasses:
					t.Error("ContainerRows: no error")
				case err == nil && !reflect.DeepEqual(got, intactContainers):
					t.Errorf("ContainerRows: %d rows unlike the undamaged file's %d, without an error", len(got), len(intactContainers))
				case err != nil && !strings.Contains(err.Error(), path):
					t.Errorf("ContainerRows: error does not name the file: %v", err)
				}
				aggs, err := ro.Aggregate(ctx, ledger.AggregateQuery{From: t0, To: t0.Add(24 * time.Hour), Bucket: ledger.BucketDay})
				if err == nil && !reflect.DeepEqual(aggs, intactAggs) {
					t.Errorf("Aggregate of the damaged file differs from the intact one without an error:\n got %+v\nwant %+v", aggs, intactAggs)
				} else if err != nil && !strings.Contains(err.Error(), path) {
					t.Errorf("Aggregate: error does not name the file: %v", err)
				}
				ro.Close()
			}

			same("read-only open")
			// The reading commands' open, which migrates older files.
			if s, err := OpenForReading(ctx, path, FileOptions{}); err == nil {
				err = s.Rows(ctx, time.Time{}, time.Time{}, func(attribution.Row) error { return nil })
				s.Close()
				wantErr("OpenForReading then Rows", err)
			}

			same("OpenForReading")
			if quickPasses {
				return // a writer's open sees no damage here: see above
			}
			// A writer without MoveAsideCorrupt refuses it.
			if s, err := OpenFile(ctx, path, FileOptions{MustExist: true}); err == nil {
				s.Close()
				t.Fatal("OpenFile for writing: opened a damaged file")
			} else {
				wantErr("OpenFile", err)
			}
			same("OpenFile")
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(after, damaged) {
				t.Fatalf("the failed opens changed the damaged file (%v)", err)
			}

			// The collector's open moves it aside and starts afresh.
			var log bytes.Buffer
			s, err := OpenFile(ctx, path, FileOptions{MoveAsideCorrupt: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatalf("OpenFile with MoveAsideCorrupt: %v", err)
			}
			defer s.Close()
			if n := countRows(t, s); n != 0 {
				t.Errorf("the new ledger holds %d rows, want 0", n)
			}
			if err := s.Append(ctx, fleetRows(t0, 1, time.Minute, 1), nil); err != nil {
				t.Fatalf("Append to the new ledger: %v", err)
			}
			moved, _ := filepath.Glob(path + ".corrupt-*")
			var kept []string
			for _, m := range moved {
				if !strings.HasSuffix(m, "-wal") && !strings.HasSuffix(m, "-shm") {
					kept = append(kept, m)
				}
			}
			if len(kept) != 1 {
				t.Fatalf("files moved aside: %v, want one %s.corrupt-TIMESTAMP", moved, path)
			}
			if b, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(b, damaged) {
				t.Errorf("%s is not the damaged file byte for byte (%v)", kept[0], err)
			}
			if l := log.String(); !strings.Contains(l, "corrupt") || !strings.Contains(l, kept[0]) {
				t.Errorf("the log does not say the file was moved aside to %s:\n%s", kept[0], l)
			}
			_ = nRows
		})
	}
}
