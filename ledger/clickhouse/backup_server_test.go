package clickhouse

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// Rows come back from a real server exactly: strings with tabs, newlines,
// backslashes, NULs and invalid UTF-8, floats that have no short decimal
// form, nanoseconds, and findings; a backup of an older schema (3, before
// quota changes and node labels) restores into a new database migrated to
// the binary's version, with the later columns at their defaults.
func TestBackupRestoreExactOnServer(t *testing.T) {
	harness.Require(t)
	ctx := context.Background()
	src := mustDSN(t, harness.DSN(t))
	if err := migrateTo(ctx, src, "", 3); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 10, 31, 22, 0, 0, 0, time.UTC)
	rows := fleet(7, 2, 2, 150, start) // 2.5 hours over a day boundary
	odd := rows[0]
	odd.Pod, odd.Container, odd.Namespace = "tab\there\nnew\\line", "nul\x00byte", "bad-utf8-\xff\xfe"
	odd.UsedGPUSeconds, odd.MemoryMiBSeconds = 0.1+0.2, math.SmallestNonzeroFloat64
	odd.IntervalStart = odd.IntervalStart.Add(123456789 * time.Nanosecond)
	odd.MIGProfile = "1g.10gb"
	rows = append(rows, odd)
	findings := []attribution.Finding{{Kind: attribution.FindingIdleAllocation, Start: start, End: start.Add(time.Hour), Node: "node-00",
		GPUUUID: "GPU-00-00", Namespace: "ml-ns", Pod: "pod-0", Container: "main", Team: "ml", Detail: "idle\tfor an hour"}}
	// Written at schema 3 through the store's own insert (Open wants the
	// newest schema).
	old, err := openAnyVersion(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := appendBeforeClusters(ctx, old, rows, findings); err != nil {
		t.Fatal(err)
	}
	old.Close()

	dir := filepath.Join(t.TempDir(), "b")
	m, err := Backup(ctx, src, Options{}, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if m.SchemaVersion != 3 || len(m.Tables) != 3 || m.Tables[0].Rows != uint64(len(rows)) || m.Tables[1].Rows != 1 {
		t.Fatalf("manifest %+v", m)
	}
	dst := mustDSN(t, harness.DSN(t))
	res, err := Restore(ctx, dst, Options{}, dir, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hours != 3 {
		t.Errorf("rollups of %d hours rebuilt, want 3 (22:00, 23:00, 00:00)", res.Hours)
	}
	if err := Migrate(ctx, src, ""); err != nil {
		t.Fatal(err)
	}
	a, err := Open(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dst, Options{})
	if err != nil {
		t.Fatalf("the restored database is not at the binary's schema: %v", err)
	}
	defer b.Close()
	from, to := start.Add(-time.Hour), start.Add(4*time.Hour)
	read := func(s *Store) ([]attribution.Row, []attribution.Finding) {
		var rs []attribution.Row
		var fs []attribution.Finding
		if err := s.Rows(ctx, from, to, func(r attribution.Row) error { rs = append(rs, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := s.Findings(ctx, from, to, func(f attribution.Finding) error { fs = append(fs, f); return nil }); err != nil {
			t.Fatal(err)
		}
		return rs, fs
	}
	wantRows, wantFindings := read(a)
	gotRows, gotFindings := read(b)
	if len(wantRows) != len(rows) || !reflect.DeepEqual(gotRows, wantRows) || !reflect.DeepEqual(gotFindings, wantFindings) || len(gotFindings) != 1 {
		t.Fatalf("restored %d rows, %d findings differ from the source's %d, %d", len(gotRows), len(gotFindings), len(wantRows), len(wantFindings))
	}
	found := false
	for _, r := range gotRows {
		if r.Pod == odd.Pod {
			found = r.Container == odd.Container && r.Namespace == odd.Namespace && r.UsedGPUSeconds == 0.1+0.2 &&
				r.MemoryMiBSeconds == math.SmallestNonzeroFloat64 && r.IntervalStart.Equal(odd.IntervalStart) && r.MIGProfile == "1g.10gb"
		}
	}
	if !found {
		t.Error("the row with the odd strings and floats did not come back exactly")
	}
	// The rebuilt rollups are used: every hour's build is clean.
	st, err := b.loadState(ctx, floorUnix(from, 86400), ceilUnix(to, 86400))
	if err != nil {
		t.Fatal(err)
	}
	for h := start.Unix(); h < start.Add(3*time.Hour).Unix(); h += 3600 {
		if _, clean := st.clean(period{grainHour, h}); !clean {
			t.Errorf("hour %s has no clean rollup after the restore", time.Unix(h, 0).UTC())
		}
	}

	// Into the database just restored: refused, naming the tables.
	_, err = Restore(ctx, dst, Options{}, dir, RestoreOptions{})
	if err == nil || !strings.Contains(err.Error(), "ledger_rows: 3001 rows") {
		t.Errorf("restore into a restored ledger: %v", err)
	}
}

// appendBeforeClusters is Append as a store before schema 8 wrote: the
// same columns but the cluster, which the inserts name last.
func appendBeforeClusters(ctx context.Context, s *Store, rows []attribution.Row, findings []attribution.Finding) error {
	version := uint64(time.Now().UnixNano())
	buf, cols := rowColumns(rows, version)
	defer buf.release()
	if err := s.insert(ctx, tableRows, rowInsertColumns[:len(rowInsertColumns)-1], cols[:len(cols)-1], len(rows)); err != nil {
		return err
	}
	fc := findingColumns(findings, version)
	if err := s.insert(ctx, tableFindings, findingInsertColumns[:len(findingInsertColumns)-1], fc[:len(fc)-1], len(findings)); err != nil {
		return err
	}
	return s.mark(ctx, touchedHours(rows))
}
