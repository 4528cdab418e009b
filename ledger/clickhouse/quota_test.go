package clickhouse

import (
	"context"
	"errors"
	"github.com/gpuledger/gpuledger/attribution"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

func qday(month time.Month, day, hour int) time.Time {
	return time.Date(2026, month, day, hour, 0, 0, 0, time.UTC)
}

func qchange(at time.Time, source, object, resource, team string, milli int64) quota.Change {
	return quota.Change{Cluster: attribution.DefaultCluster, At: at, Entry: quota.Entry{
		Key: quota.Key{Source: source, Object: object, Resource: resource}, Team: team, Milli: milli, LimitMilli: 2 * milli}}
}

func qdelete(at time.Time, source, object, resource, team string) quota.Change {
	c := qchange(at, source, object, resource, team, 0)
	c.Deleted = true
	return c
}

// quotaHistory: a Kueue queue set in October and unchanged, a
// ResourceQuota changed in November, one deleted in October, one created
// and deleted in November, and a change at the end of November.
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
		// Same second, several keys, written out of order.
		qchange(qday(11, 20, 0), quota.SourceVolcano, "b", "gpu", "t", 1000),
		qchange(qday(11, 20, 0), quota.SourceKueue, "b", "gpu", "t", 1000),
		qchange(qday(11, 20, 0), quota.SourceKueue, "a", "mig-2g.20gb", "t", 1000),
		qchange(qday(11, 20, 0), quota.SourceKueue, "a", "gpu", "t", 1000),
	}
}

func readQuota(t *testing.T, s quota.Store, from, to time.Time) []quota.Change {
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

// The ClickHouse ledger stores quota as the embedded one does: November
// shows the quota set in October at its October time, changes follow by
// time then key, a replay (and a change replaced within its second) reads
// once, and bad input is refused naming the field.
func TestQuotaChangesClickHouse(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	h := quotaHistory()
	for range 2 { // the second is a replay
		if err := s.AppendQuota(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	from, to := qday(11, 1, 0), qday(12, 1, 0)
	want := []quota.Change{h[1], h[0], h[5], h[6], h[2], h[11], h[10], h[9], h[8]}
	if got := readQuota(t, s, from, to); !reflect.DeepEqual(got, want) {
		t.Fatalf("November:\n got %+v\nwant %+v", got, want)
	}
	var raw uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.table(tableQuota)).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw < uint64(len(h)) {
		t.Fatalf("%d raw quota rows, want at least %d", raw, len(h))
	}
	// Replaced within its second: the later call wins.
	c := h[2]
	c.Milli, c.At = 5000, c.At.Add(400*time.Millisecond)
	if err := s.AppendQuota(ctx, []quota.Change{c}); err != nil {
		t.Fatal(err)
	}
	got := readQuota(t, s, from, to)
	if len(got) != len(want) || got[4].Milli != 5000 || !got[4].At.Equal(h[2].At) {
		t.Errorf("after replacing a change within its second: %+v", got)
	}
	// From inside November: the state then (q-short in force), then what
	// follows; an empty period is the state at its start.
	if got := readQuota(t, s, qday(11, 2, 12), to); len(got) != 9 || got[2] != h[5] || got[3] != h[6] {
		t.Errorf("from 2 November noon: %+v", got)
	}
	if got := readQuota(t, s, to, to); len(got) != 6 || got[len(got)-1].Milli != 9000 {
		t.Errorf("state at %s: %+v", to, got)
	}
	for name, tc := range map[string]struct {
		c    quota.Change
		want string
	}{
		"no time":     {qchange(time.Time{}, quota.SourceKueue, "cq", "gpu", "ml", 1), "at is not set"},
		"before 1970": {qchange(time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), quota.SourceKueue, "cq", "gpu", "ml", 1), "at is outside 1970-2106"},
		"source":      {qchange(qday(11, 1, 0), "yarn", "cq", "gpu", "ml", 1), "unknown source"},
		"team":        {qchange(qday(11, 1, 0), quota.SourceKueue, "cq", "gpu", "", 1), "team"},
		"deleted":     {qdelete(qday(11, 1, 0), quota.SourceKueue, "cq", "", "ml"), "resource"},
	} {
		err := s.AppendQuota(ctx, []quota.Change{tc.c})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "quota change 0") || Retryable(err) {
			t.Errorf("%s: %v, want a permanent error naming change 0 and %q", name, err, tc.want)
		}
	}
	if got := readQuota(t, s, from, to); len(got) != len(want) {
		t.Errorf("refused changes were stored: %+v", got)
	}
	defer func(n int) { maxQuotaChanges = n }(maxQuotaChanges)
	maxQuotaChanges = 3
	err := s.QuotaChanges(ctx, from, to, func(quota.Change) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "more than 3 changes") || !strings.Contains(err.Error(), "2026-11-01") {
		t.Errorf("a bound of 3: %v, want an error naming the period", err)
	}
}

// The same history in both stores reads the same for every period.
func TestQuotaChangesMatchFileStore(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	f, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := quotaHistory()
	for _, st := range []quota.Store{s, f} {
		if err := st.AppendQuota(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	bounds := []time.Time{qday(9, 1, 0), qday(10, 1, 0), qday(10, 3, 9).Add(-time.Second), qday(10, 3, 9),
		qday(10, 20, 0).Add(500 * time.Millisecond), qday(11, 1, 0), qday(11, 20, 0), qday(12, 1, 0), qday(12, 2, 0)}
	for i, from := range bounds {
		for _, to := range bounds[i:] {
			got, want := readQuota(t, s, from, to), readQuota(t, f, from, to)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("[%s, %s): ClickHouse %+v\nfile %+v", from, to, got, want)
			}
		}
	}
}

// A database at schema 3 (before quota) is refused by Open until
// migrated; migrate then adds the quota table, twice without harm.
func TestMigrateVersion3AddsQuota(t *testing.T) {
	ctx := context.Background()
	dsn := mustDSN(t, harness.DSN(t))
	if err := migrateTo(ctx, dsn, "", 3); err != nil {
		t.Fatalf("migrate to 3: %v", err)
	}
	opts := Options{RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond}
	if s, err := Open(ctx, dsn, opts); err == nil || !errors.Is(err, ErrSchemaOutdated) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a schema-3 database: %v, want ErrSchemaOutdated", err)
	}
	for i := range 2 {
		if err := Migrate(ctx, dsn, ""); err != nil {
			t.Fatalf("Migrate (run %d): %v", i+1, err)
		}
	}
	s, err := Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := quotaHistory()
	if err := s.AppendQuota(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got := readQuota(t, s, qday(10, 1, 0), qday(10, 2, 0)); len(got) != 1 || got[0] != h[1] {
		t.Errorf("1 October: %+v", got)
	}
}
