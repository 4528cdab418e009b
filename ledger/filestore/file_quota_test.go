package filestore

import (
	"context"
	"errors"
	"github.com/gpuledger/gpuledger/attribution"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/quota"
)

func qday(month time.Month, day, hour int) time.Time {
	return time.Date(2026, month, day, hour, 0, 0, 0, time.UTC)
}

func qchange(at time.Time, source, object, resource, team string, milli int64) quota.Change {
	return quota.Change{Cluster: attribution.DefaultCluster, At: at, Entry: quota.Entry{
		Key: quota.Key{Source: source, Object: object, Resource: resource}, Team: team, Milli: milli}}
}

func qdelete(at time.Time, source, object, resource, team string) quota.Change {
	c := qchange(at, source, object, resource, team, 0)
	c.Deleted = true
	return c
}

func readQuota(t *testing.T, s *FileStore, from, to time.Time) []quota.Change {
	t.Helper()
	var out []quota.Change
	if err := s.QuotaChanges(context.Background(), from, to, func(c quota.Change) error {
		out = append(out, c)
		return nil
	}); err != nil {
		t.Fatalf("QuotaChanges(%s, %s): %v", from, to, err)
	}
	return out
}

func countQuotaRows(t *testing.T, s *FileStore) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow("SELECT count(*) FROM quota_changes").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// quotaHistory: a Kueue queue set in October and unchanged, a
// ResourceQuota changed in November, one deleted in October, one created
// and deleted in November, and a change after the period.
func quotaHistory() []quota.Change {
	return []quota.Change{
		qchange(qday(10, 3, 9), quota.SourceKueue, "cq-ml", "H100-80GB-HBM3", "ml", 8000),
		qchange(qday(10, 1, 0), quota.SourceResourceQuota, "vision/gpus", "gpu", "vision", 2000),
		qchange(qday(11, 15, 12), quota.SourceResourceQuota, "vision/gpus", "gpu", "vision", 4000),
		qchange(qday(10, 2, 0), quota.SourceVolcano, "q-old", "mig-1g.10gb", "old", 7000),
		qdelete(qday(10, 20, 0), quota.SourceVolcano, "q-old", "mig-1g.10gb", "old"),
		qchange(qday(11, 2, 0), quota.SourceKAI, "q-short", "gpu", "short", 1000),
		qdelete(qday(11, 3, 0), quota.SourceKAI, "q-short", "gpu", "short"),
		qchange(qday(12, 1, 0), quota.SourceResourceQuota, "vision/gpus", "gpu", "vision", 9000),
	}
}

// A quota set in October and unchanged shows up for November at its
// October time; changes in November follow in time order; a key deleted
// before November and a change at the period's end do not; a replay of
// the whole history stores nothing new.
func TestQuotaChangesRoundTripAndReplay(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	h := quotaHistory()
	if err := s.AppendQuota(ctx, h); err != nil {
		t.Fatal(err)
	}
	want := []quota.Change{h[1], h[0], h[5], h[6], h[2]}
	from, to := qday(11, 1, 0), qday(12, 1, 0)
	if got := readQuota(t, s, from, to); !reflect.DeepEqual(got, want) {
		t.Fatalf("November:\n got %+v\nwant %+v", got, want)
	}
	if err := s.AppendQuota(ctx, h); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if n := countQuotaRows(t, s); n != len(h) {
		t.Errorf("%d quota rows after a replay, want %d", n, len(h))
	}
	if got := readQuota(t, s, from, to); !reflect.DeepEqual(got, want) {
		t.Fatalf("November after a replay:\n got %+v\nwant %+v", got, want)
	}
	// The intervals of November: the October quota over the whole month.
	ivs := quota.Intervals(readQuota(t, s, from, to), from, to)
	if len(ivs) != 4 || ivs[0].Object != "q-short" || !ivs[0].From.Equal(qday(11, 2, 0)) || !ivs[0].To.Equal(qday(11, 3, 0)) ||
		ivs[1].Object != "cq-ml" || !ivs[1].From.Equal(from) || !ivs[1].To.Equal(to) {
		t.Errorf("November intervals: %+v", ivs)
	}
	// A change replaced at the same second: the new values win.
	c := h[2]
	c.Milli, c.At = 5000, c.At.Add(400*time.Millisecond)
	if err := s.AppendQuota(ctx, []quota.Change{c}); err != nil {
		t.Fatal(err)
	}
	got := readQuota(t, s, from, to)
	if last := got[len(got)-1]; last.Milli != 5000 || !last.At.Equal(h[2].At) || countQuotaRows(t, s) != len(h) {
		t.Errorf("a change replaced within its second reads %+v, %d rows", last, countQuotaRows(t, s))
	}
	// From a moment inside November: the state then, then what follows.
	mid := qday(11, 2, 12)
	if got := readQuota(t, s, mid, to); len(got) != 5 || got[2] != h[5] || got[3] != h[6] || got[4].Milli != 5000 {
		t.Errorf("from %s: %+v", mid, got)
	}
	// An empty period gives the state at from.
	if got := readQuota(t, s, to, to); len(got) != 2 || got[1].Milli != 9000 {
		t.Errorf("state at %s: %+v", to, got)
	}
}

// Changes come back ordered by time, then source, object and resource,
// whatever order they were written in.
func TestQuotaChangesOrder(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	at := qday(11, 5, 0)
	in := []quota.Change{
		qchange(at.Add(time.Second), quota.SourceKAI, "a", "gpu", "t", 1000),
		qchange(at, quota.SourceVolcano, "a", "gpu", "t", 1000),
		qchange(at, quota.SourceKueue, "b", "gpu", "t", 1000),
		qchange(at, quota.SourceKueue, "a", "mig-2g.20gb", "t", 1000),
		qchange(at, quota.SourceKueue, "a", "gpu", "t", 1000),
		qchange(at.Add(-time.Hour), quota.SourceVolcano, "z", "gpu", "t", 1000),
	}
	if err := s.AppendQuota(ctx, in); err != nil {
		t.Fatal(err)
	}
	want := []quota.Change{in[5], in[4], in[3], in[2], in[1], in[0]}
	if got := readQuota(t, s, at.Add(-time.Minute), at.Add(time.Hour)); !reflect.DeepEqual(got, want) {
		t.Fatalf("order:\n got %+v\nwant %+v", got, want)
	}
}

// Bad changes are refused with an error naming the field, and nothing of
// the call is stored.
func TestAppendQuotaRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	at := qday(11, 5, 0)
	good := qchange(at, quota.SourceKueue, "cq", "gpu", "ml", 1000)
	long := strings.Repeat("x", quota.MaxNameLen+1)
	for name, tc := range map[string]struct {
		c    quota.Change
		want string
	}{
		"no time":         {qchange(time.Time{}, quota.SourceKueue, "cq", "gpu", "ml", 1), "at is not set"},
		"year 3000":       {qchange(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), quota.SourceKueue, "cq", "gpu", "ml", 1), "at is outside"},
		"source":          {qchange(at, "yarn", "cq", "gpu", "ml", 1), "unknown source"},
		"no object":       {qchange(at, quota.SourceKueue, "", "gpu", "ml", 1), "object name"},
		"long object":     {qchange(at, quota.SourceKueue, long, "gpu", "ml", 1), "object name"},
		"no team":         {qchange(at, quota.SourceKueue, "cq", "gpu", "", 1), "team"},
		"negative":        {qchange(at, quota.SourceKueue, "cq", "gpu", "ml", -1), "thousandths"},
		"huge":            {qchange(at, quota.SourceKueue, "cq", "gpu", "ml", quota.MaxMilli+1), "thousandths"},
		"bad MIG":         {qchange(at, quota.SourceKueue, "cq", "mig-9g.10gb", "ml", 1), "mig-9g.10gb"},
		"deleted source":  {qdelete(at, "yarn", "cq", "gpu", "ml"), "unknown source"},
		"deleted object":  {qdelete(at, quota.SourceKueue, "", "gpu", "ml"), "object name"},
		"deleted no res.": {qdelete(at, quota.SourceKueue, "cq", "", "ml"), "resource"},
		"deleted team":    {qdelete(at, quota.SourceKueue, "cq", "gpu", long), "team"},
		"same second":     {qchange(at.Add(300*time.Millisecond), quota.SourceKueue, "cq", "gpu", "ml", 2000), "same second"},
	} {
		err := s.AppendQuota(ctx, []quota.Change{good, tc.c})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "quota change 1") {
			t.Errorf("%s: %v, want an error naming change 1 and %q", name, err, tc.want)
		}
	}
	if n := countQuotaRows(t, s); n != 0 {
		t.Errorf("%d quota rows stored from refused calls", n)
	}
	// A deletion needs no team: the recorder may not know it.
	if err := s.AppendQuota(ctx, []quota.Change{qdelete(at, quota.SourceKueue, "cq", "gpu", "")}); err != nil {
		t.Errorf("a deletion without a team: %v", err)
	}
	if err := s.QuotaChanges(ctx, at, at.Add(-time.Second), func(quota.Change) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "ends before it starts") {
		t.Errorf("a reversed period: %v", err)
	}
}

// More changes than a read may return fail with the period named.
func TestQuotaChangesBounded(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	defer func(n int) { maxQuotaChanges = n }(maxQuotaChanges)
	maxQuotaChanges = 3
	var cs []quota.Change
	for i := range 4 {
		cs = append(cs, qchange(qday(11, 2, i), quota.SourceKueue, "cq", "gpu", "ml", int64(1000*(i+1))))
	}
	if err := s.AppendQuota(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if got := readQuota(t, s, qday(11, 2, 1), qday(11, 3, 0)); len(got) != 3 {
		t.Errorf("3 changes read as %d", len(got))
	}
	err := s.QuotaChanges(ctx, qday(11, 1, 0), qday(11, 3, 0), func(quota.Change) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "more than 3 changes") || !strings.Contains(err.Error(), "2026-11-01") {
		t.Errorf("4 changes with a bound of 3: %v, want an error naming the period", err)
	}
}

// A file of schema 5 (before quota) opened read-only is read as it is:
// its rows, and no quota changes. A writable open (the collector's)
// migrates it to 6, and the quota is stored and read back.
func TestQuotaVersion5File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	want := writeLedger(t, path)
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec("DROP TABLE quota_changes; PRAGMA user_version = 5"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for name, open := range map[string]func() (*FileStore, error){
		"OpenReadOnly":   func() (*FileStore, error) { return OpenReadOnly(ctx, path, FileOptions{}) },
		"OpenForReading": func() (*FileStore, error) { return OpenForReading(ctx, path, FileOptions{}) },
	} {
		r, err := open()
		if err != nil {
			t.Fatalf("%s of a schema-5 file: %v", name, err)
		}
		readWhole(t, r, want)
		if got := readQuota(t, r, qday(11, 1, 0), qday(12, 1, 0)); len(got) != 0 {
			t.Errorf("%s: quota changes %+v in a file that has none", name, got)
		}
		if err := r.AppendQuota(ctx, quotaHistory()); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: AppendQuota to a read-only store: %v", name, err)
		}
		var v int
		if err := r.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 5 {
			t.Errorf("%s: user_version %d (%v): a read-only open must not migrate", name, v, err)
		}
		r.Close()
	}
	w, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatalf("writable open of a schema-5 file: %v", err)
	}
	defer w.Close()
	var v int
	if err := w.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != FileSchemaVersion {
		t.Fatalf("user_version %d (%v), want %d", v, err, FileSchemaVersion)
	}
	readWhole(t, w, want)
	h := quotaHistory()
	if err := w.AppendQuota(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got := readQuota(t, w, qday(11, 1, 0), qday(12, 1, 0)); len(got) != 5 {
		t.Errorf("after the migration: %+v", got)
	}
}

// Retention deletes the quota changes superseded before it and a deletion
// left last, keeps each key's last change before it, and leaves every
// period from the retention on reading what it read before.
func TestPruneKeepsQuotaInForce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{Retention: 30 * 24 * time.Hour})
	now := qday(12, 1, 0)
	s.now = func() time.Time { return now }
	expiry := now.Add(-30 * 24 * time.Hour) // 1 November
	h := quotaHistory()
	// The October quota of cq-ml changed twice more before the expiry.
	h = append(h,
		qchange(qday(10, 4, 0), quota.SourceKueue, "cq-ml", "H100-80GB-HBM3", "ml", 6000),
		qchange(qday(10, 31, 23), quota.SourceKueue, "cq-ml", "H100-80GB-HBM3", "ml", 5000))
	if err := s.AppendQuota(ctx, h); err != nil {
		t.Fatal(err)
	}
	periods := [][2]time.Time{{expiry, now}, {qday(11, 2, 12), qday(11, 20, 0)}, {now, now.Add(time.Hour)}}
	var before [][]quota.Change
	for _, p := range periods {
		before = append(before, readQuota(t, s, p[0], p[1]))
	}
	if _, err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	for i, p := range periods {
		if got := readQuota(t, s, p[0], p[1]); !reflect.DeepEqual(got, before[i]) {
			t.Errorf("period %s to %s after Prune:\n got %+v\nwant %+v", p[0], p[1], got, before[i])
		}
	}
	// Left: cq-ml's 31 October change, vision's 1 October one and its two
	// later ones, q-short's two November changes. Gone: two older cq-ml
	// changes and q-old's change and deletion.
	if n := countQuotaRows(t, s); n != len(h)-4 {
		t.Errorf("%d quota rows after Prune, want %d", n, len(h)-4)
	}
	// Without a retention nothing goes.
	s2 := openTemp(t, FileOptions{MaxBytes: 1})
	if err := s2.AppendQuota(ctx, h); err != nil {
		t.Fatal(err)
	}
	s2.Prune(ctx)
	if n := countQuotaRows(t, s2); n != len(h) {
		t.Errorf("a size-bounded ledger without retention pruned quota changes: %d of %d left", n, len(h))
	}
}

// A damaged quota table is found when a reader opens the file, as the
// other tables reports read are, not taken for a history with fewer
// changes.
func TestReadOnlyOpenChecksTheQuotaTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeLedger(t, path)
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendQuota(ctx, quotaHistory()); err != nil {
		t.Fatal(err)
	}
	var root int
	if err := s.r.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'quota_changes'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The table's root page (a leaf: it holds 8 changes) gets a broken
	// cell pointer: the page header stays valid, one record does not.
	off := (root - 1) * testPageSize
	if b[off] != 0x0a {
		t.Fatalf("page %d is of type %#x, want an index leaf (0x0a)", root, b[off])
	}
	b[off+8], b[off+9] = 0xff, 0xf0
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(ctx, path, FileOptions{})
	if err == nil {
		r.Close()
		t.Fatal("a ledger with a damaged quota table opened read-only without error")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "quota_changes") {
		t.Errorf("read-only open of a damaged quota table: %v, want ErrCorrupt naming quota_changes", err)
	}
}
