package filestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// lateRow is one row of a team of its own in the flip ledger's third
// hour: its aggregate is exactly this row whatever else the day holds.
func lateRow() attribution.Row {
	s := t0.Add(2*time.Hour + 20*time.Minute)
	return attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Minute), Node: "node-9", GPUUUID: "GPU-LATE", GPUModel: "A100-SXM4-80GB",
		SliceID: "GPU-LATE", SharingMode: "exclusive", Kind: attribution.KindContainer, Namespace: "ns-late", Pod: "late", PodUID: "uid-late",
		Container: "main", Team: "late", AllocatedGPUSeconds: 60, UsedGPUSeconds: 30, Method: attribution.MethodMeasured}
}

// withoutTeam is as without the aggregates of team.
func withoutTeam(as []ledger.Aggregate, team string) []ledger.Aggregate {
	var out []ledger.Aggregate
	for _, a := range as {
		if a.Team != team {
			out = append(out, a)
		}
	}
	return out
}

// checkLate says whether as holds the late row, as its only aggregate of
// team late, in the day from t0.
func checkLate(t *testing.T, what string, as []ledger.Aggregate) {
	t.Helper()
	var late []ledger.Aggregate
	for _, a := range as {
		if a.Team == "late" {
			late = append(late, a)
		}
	}
	if len(late) != 1 || late[0].AllocatedSeconds != 60 || late[0].UsedSeconds != 30 || late[0].Rows != 1 || !late[0].BucketStart.Equal(t0) {
		t.Errorf("%s: team late's aggregates %+v, want the one row of 60 allocated, 30 used GPU-seconds on %s", what, late, t0)
	}
}

// A reader walks each rollup once per file generation and seeks after;
// another writer's commit starts a new generation, whose first read walks
// again and sees the commit's rows.
func TestRollupWalkedOncePerGeneration(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t)
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	records := func() [2]int64 { return [2]int64{s.rollups[0].records.Load(), s.rollups[1].records.Load()} }
	want := make([][]ledger.Aggregate, len(flipQueries))
	for round := range 3 {
		for i, fq := range flipQueries {
			got, err := s.Aggregate(ctx, fq.q)
			if err != nil {
				t.Fatalf("%s: %v", fq.name, err)
			}
			if round == 0 {
				want[i] = got
			} else if !reflect.DeepEqual(got, want[i]) {
				t.Errorf("round %d, %s: a seek's %s", round, fq.name, diffAggs(got, want[i]))
			}
		}
		// The rollup and the device rollup, each walked once.
		if r := records(); r != [2]int64{1, 1} {
			t.Fatalf("after round %d: %v walks of the rollups, want one each", round, r)
		}
	}
	w, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(ctx, []attribution.Row{lateRow()}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Aggregate(ctx, flipQueries[0].q)
	if err != nil {
		t.Fatal(err)
	}
	if r := records(); r[0] != 2 || s.rollups[0].moved.Load() != 0 {
		t.Errorf("after another writer's commit: %d walks of the rollup, %d seeks on the old record; want 2 and none", r[0], s.rollups[0].moved.Load())
	}
	checkLate(t, "after another writer's commit", got)
	if other := withoutTeam(got, "late"); !reflect.DeepEqual(other, want[0]) {
		t.Errorf("after another writer's commit, the other teams: %s", diffAggs(other, want[0]))
	}

	// The writer's own reads: its commit starts a generation too.
	if _, err := w.Aggregate(ctx, flipQueries[0].q); err != nil {
		t.Fatal(err)
	}
	late := lateRow()
	late.IntervalStart, late.IntervalEnd = late.IntervalStart.Add(time.Minute), late.IntervalEnd.Add(time.Minute)
	if err := w.Append(ctx, []attribution.Row{late}, nil); err != nil {
		t.Fatal(err)
	}
	got, err = w.Aggregate(ctx, flipQueries[0].q)
	if err != nil {
		t.Fatal(err)
	}
	if r, m := w.rollups[0].records.Load(), w.rollups[0].moved.Load(); r != 2 || m != 0 {
		t.Errorf("after its own commit: the writer walked its rollup %d times, %d seeks on the old record; want 2 and none", r, m)
	}
	for _, a := range got {
		if a.Team == "late" && (a.Rows != 2 || a.AllocatedSeconds != 120) {
			t.Errorf("after its own commit: the writer reads team late as %+v, want 2 rows of 120 allocated GPU-seconds", a)
		}
	}

	// Bytes written into the file with no commit (what a flipped bit
	// on the disk is) start a generation too.
	before := records()
	flipFirstRollupKey(t, path)
	// SQLite may still hold the page as it was: a walk that reads it
	// from its cache passes, and makes a new record.
	if _, err := s.Aggregate(ctx, flipQueries[0].q); err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatal(err)
	} else if r := records(); err == nil && (r[0] != before[0]+1 || s.rollups[0].moved.Load() != 0) {
		t.Errorf("after a raw write to the file: %d walks of the rollup, %d seeks on the old record; want %d and none", r[0], s.rollups[0].moved.Load(), before[0]+1)
	}
}

// flipFirstRollupKey flips, in place, a set bit of the low byte of the
// slot of the rollup's first row: the row's key moves before the first
// slot of the data, where a seek to that slot never looks.
func flipFirstRollupKey(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := slotOf(t0.UnixNano())
	var keys []int
	for _, p := range tablePages(t, path)["ledger_rollup"] {
		// The leaf whose first cell is the first slot's (12 slots:
		// their low bytes differ).
		if k := cellKeyOffsets(b, p); len(k) > 0 && b[k[0]] == byte(first) {
			keys = k
		}
	}
	if len(keys) == 0 {
		t.Fatalf("no leaf of the rollup starts with slot %d", first)
	}
	bit := bits.TrailingZeros8(byte(first))
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{b[keys[0]] ^ 1<<bit}, int64(keys[0])); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// commitElsewhere commits a change of nothing billed through a connection
// of its own, as a collector's next cycle does: SQLite's readers then drop
// the pages they cached, and read the file's bytes again.
func commitElsewhere(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE scratch (x); DROP TABLE scratch"); err != nil {
		t.Fatal(err)
	}
}

// A rollup key flipped on the disk after a verified read (the file changed
// under a reader that keeps its record) fails the next reads: the change
// starts a new generation, whose first read walks the rollup and finds
// the row failing its checksum. A reader that kept seeking on its old
// verdict would skip the moved row and bill the first slot short.
func TestFlipAfterVerifiedReadIsCaught(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		name := "generation seen"
		if frozen {
			// The generation shows nothing (a bit that rots on the disk,
			// its time kept): the seek's comparison with the record is
			// what catches it.
			name = "generation frozen"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := flipLedger(t)
			s, err := OpenReadOnly(ctx, path, FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if frozen {
				g := s.generation()
				s.genOf = func() fileGen { return g }
			}
			before := make([][]ledger.Aggregate, len(flipQueries))
			for i, fq := range flipQueries {
				if before[i], err = s.Aggregate(ctx, fq.q); err != nil {
					t.Fatalf("before the flip, %s: %v", fq.name, err)
				}
			}
			flipFirstRollupKey(t, path)
			commitElsewhere(t, path)
			for i, fq := range flipQueries {
				got, err := s.Aggregate(ctx, fq.q)
				switch {
				case err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path)):
					t.Errorf("%s after the flip: %v, want an error naming %s as damaged", fq.name, err, path)
				case err == nil && !reflect.DeepEqual(got, before[i]):
					t.Errorf("%s after the flip: a different bill without an error: %s", fq.name, diffAggs(got, before[i]))
				case err == nil && i == 0:
					// The day holds the moved row's slot.
					t.Errorf("%s after the flip: no error", fq.name)
				case err == nil && !frozen && !fq.q.ByDevice && !fq.q.ByNode:
					// A new generation walks the rollup from its
					// first row, the moved one.
					t.Errorf("%s after the flip: no error", fq.name)
				}
			}
		})
	}
}

// A reader whose generation misses another writer's commit (a file
// system with coarse times) reads the new rows all the same: the seek
// disagrees with the record, the walk that follows agrees with the seek,
// and makes the new record.
func TestMissedGenerationReadsTheCommit(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t)
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := s.generation()
	s.genOf = func() fileGen { return g }
	want, err := s.Aggregate(ctx, flipQueries[0].q)
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(ctx, []attribution.Row{lateRow()}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := s.Aggregate(ctx, flipQueries[0].q)
		if err != nil {
			t.Fatal(err)
		}
		checkLate(t, "after a commit the generation missed", got)
		if other := withoutTeam(got, "late"); !reflect.DeepEqual(other, want) {
			t.Errorf("after a commit the generation missed, the other teams: %s", diffAggs(other, want))
		}
		// The first read's seek disagrees with the record and walks
		// again; the second seeks on the new record.
		if r, m := s.rollups[0].records.Load(), s.rollups[0].moved.Load(); r != 2 || m != 1 {
			t.Errorf("read %d after the commit: %d walks of the rollup and %d seeks disagreeing with their record, want 2 and 1", i, r, m)
		}
	}
}

// Damage in the rollup past a period does not fail that period's read,
// as a walk that stops at the period's end never saw it; it keeps a
// record from being made, and fails the reads of its own slot.
func TestDamagePastThePeriodFailsOnlyItsReads(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t)
	early := ledger.AggregateQuery{From: t0, To: t0.Add(time.Hour), Bucket: ledger.BucketNone}
	want, errs := func() ([]ledger.Aggregate, error) {
		s, err := OpenReadOnly(ctx, path, FileOptions{})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return s.Aggregate(ctx, early)
	}()
	if errs != nil {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	late := slotOf(t0.Add(150 * time.Minute).UnixNano())
	at := -1
	for _, p := range tablePages(t, path)["ledger_rollup"] {
		// The rows column: a count of many rows, never 0 or 1 (which
		// SQLite stores with no bytes), so one offset per cell.
		keys, counts := cellKeyOffsets(b, p), cellColumnOffsets(b, p, 6)
		for i := range keys {
			if b[keys[i]] == byte(late) && len(counts) == len(keys) {
				at = counts[i]
			}
		}
	}
	if at < 0 {
		t.Fatalf("no rollup row of slot %d found", late)
	}
	b[at] ^= 1 // a row count: only its checksum sees it
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		got, err := s.Aggregate(ctx, early)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("the first hour, damage 2.5 hours on: %v, or %s", err, diffAggs(got, want))
		}
	}
	if r := s.rollups[0].records.Load(); r != 0 {
		t.Errorf("%d records of a damaged rollup, want none", r)
	}
	if _, err := s.Aggregate(ctx, flipQueries[0].q); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("the day holding the damaged row: %v, want an error naming %s as damaged", err, path)
	}
}

// Readers sharing one store while another writer commits: every read is
// whole commits (the rows of some snapshot, never a record's stale or
// partial view of one), and no read fails.
func TestRecordsWhileAWriterCommits(t *testing.T) {
	ctx := context.Background()
	path := flipLedger(t) // 18,000 rows: 20 GPUs, 5 rows each a minute
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	total := func(as []ledger.Aggregate) (n int64) {
		for _, a := range as {
			n += a.Rows
		}
		return n
	}
	const commits, perCommit = 20, 100
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			last := int64(0)
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				got, err := s.Aggregate(ctx, flipQueries[0].q)
				n := total(got)
				switch {
				case err != nil:
					errs <- err
					return
				case n%perCommit != 0 || n < 18000 || n > 18000+commits*perCommit || n < last:
					errs <- fmt.Errorf("a read of %d rows after one of %d: not whole commits of %d rows", n, last, perCommit)
					return
				}
				last = n
			}
		}()
	}
	for k := range commits {
		if err := w.Append(ctx, fleetRows(t0.Add(time.Duration(180+k)*time.Minute), 1, time.Minute, 20), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	got, err := s.Aggregate(ctx, flipQueries[0].q)
	if err != nil || total(got) != 18000+commits*perCommit {
		t.Errorf("after the writer: %v, %d rows, want %d", err, total(got), 18000+commits*perCommit)
	}
	t.Logf("%d records made, %d seeks disagreed with theirs", s.rollups[0].records.Load(), s.rollups[0].moved.Load())
}

// Reads that find no record while another read's walk is making one wait
// for it: a new generation costs one walk, not one per read in flight
// (every report build at once, after each commit of a collector).
func TestOneWalkPerGenerationForReadsAtOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	w, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, fleetRows(t0, 1000, time.Hour, 4), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := ledger.AggregateQuery{From: t0.Add(900 * time.Hour), To: t0.Add(1000 * time.Hour), Bucket: ledger.BucketDay}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2 {
				if _, err := s.Aggregate(ctx, q); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if r := s.rollups[0].records.Load(); r != 1 {
		t.Errorf("4 reads at once made %d records of the rollup, want 1", r)
	}
}
