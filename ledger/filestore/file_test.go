package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestFileRoundTripEveryField(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	want := []attribution.Row{{
		IntervalStart: t0.Add(123456789 * time.Nanosecond), IntervalEnd: t0.Add(time.Minute),
		Cluster: "eu-1", Node: "n1", GPUUUID: "GPU-aaaa", GPUModel: "H100-80GB-HBM3", SliceID: "MIG-bbbb::3",
		SharingMode: string(tenancy.MIGTimeslicing), Kind: attribution.KindContainer,
		Namespace: "ns", Pod: "p", PodUID: "uid-1", Container: "c,\"quoted\"\nline", Team: "té∂m",
		AllocatedGPUSeconds: 1.0 / 3, UsedGPUSeconds: 0.1 + 0.2, MemoryMiBSeconds: math.MaxFloat64,
		EnergyJoules: 5e-324, Method: attribution.MethodEstimated,
	}, {
		IntervalStart: t0, IntervalEnd: t0.Add(time.Minute), Cluster: attribution.DefaultCluster, Node: "n1", GPUUUID: "GPU-aaaa",
		GPUModel: "H100-80GB-HBM3", SliceID: "GPU-aaaa", SharingMode: string(tenancy.Exclusive),
		Kind: attribution.KindIdle, UsedGPUSeconds: 59.999999999999993, EnergyJoules: -1.5,
		Method: attribution.MethodMeasured,
	}}
	findings := []attribution.Finding{{
		Start: t0, End: t0.Add(time.Hour), Kind: attribution.FindingStarved, Cluster: "eu-1", Node: "n1", GPUUUID: "GPU-aaaa",
		Namespace: "ns", Pod: "p", Container: "c", Team: "t", Detail: "noisy ns/q", NoisyPod: "ns/q",
	}}
	if err := s.Append(ctx, want, findings); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, s, t0, t0.Add(time.Hour))
	// Store order: interval start first, so the idle row comes first.
	want[0], want[1] = want[1], want[0]
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	var gotF []attribution.Finding
	if err := s.Findings(ctx, t0.Add(30*time.Minute), t0.Add(2*time.Hour), func(f attribution.Finding) error {
		gotF = append(gotF, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotF, findings) {
		t.Fatalf("findings round trip:\n got %+v\nwant %+v", gotF, findings)
	}
}

func TestFileRowsRange(t *testing.T) {
	s := openTemp(t, FileOptions{})
	rows := fleetRows(t0, 10, time.Minute, 3)
	if err := s.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	from, to := t0.Add(2*time.Minute), t0.Add(5*time.Minute)
	var want []attribution.Row
	for _, r := range rows {
		if !r.IntervalStart.Before(from) && r.IntervalStart.Before(to) {
			want = append(want, r)
		}
	}
	sortRows(want)
	if got := readAll(t, s, from, to); !reflect.DeepEqual(got, want) {
		t.Fatalf("Rows [%s, %s): got %d rows, want %d (or order differs)", from, to, len(got), len(want))
	}
	if got := readAll(t, s, time.Time{}, time.Time{}); len(got) != len(rows) {
		t.Fatalf("open range: got %d rows, want %d", len(got), len(rows))
	}
}

func TestFileReplayChangesNothing(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	rows := fleetRows(t0, 20, time.Minute, 4)
	finding := []attribution.Finding{{Start: t0, End: t0.Add(10 * time.Minute), Kind: attribution.FindingIdleAllocation,
		Node: "node-0", GPUUUID: "GPU-0000", Namespace: "ns", Pod: "p", Container: "c"}}
	if err := s.Append(ctx, rows, finding); err != nil {
		t.Fatal(err)
	}
	q := ledger.AggregateQuery{From: t0, To: t0.Add(time.Hour), Bucket: ledger.BucketHour}
	before, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NextBatch(ctx, "ch", len(rows)+10)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != len(rows) || len(b.Findings) != 1 {
		t.Fatalf("first batch: %d rows %d findings, want %d and 1", len(b.Rows), len(b.Findings), len(rows))
	}
	if err := s.MarkShipped(ctx, "ch", b.LastSeq); err != nil {
		t.Fatal(err)
	}

	// The same batch again, in another order: nothing changes, nothing is
	// queued for shipping again.
	shuffled := append([]attribution.Row(nil), rows...)
	for i, j := 0, len(shuffled)-1; i < j; i, j = i+1, j-1 {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	if err := s.Append(ctx, shuffled, finding); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s); n != int64(len(rows)) {
		t.Fatalf("after replay: %d rows stored, want %d", n, len(rows))
	}
	after, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("replay changed aggregates:\nbefore %+v\nafter  %+v", before, after)
	}
	if b, err := s.NextBatch(ctx, "ch", 100); err != nil || !b.Empty() {
		t.Fatalf("replay queued rows for shipping: %+v, %v", b, err)
	}

	// A corrected row replaces the old one and is queued again, alone.
	fixed := rows[7]
	fixed.UsedGPUSeconds += 1
	if err := s.Append(ctx, []attribution.Row{fixed}, nil); err != nil {
		t.Fatal(err)
	}
	b, err = s.NextBatch(ctx, "ch", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != 1 || !reflect.DeepEqual(b.Rows[0], fixed) || len(b.Findings) != 0 {
		t.Fatalf("after correction: batch %+v, want just the corrected row", b)
	}
	if n := countRows(t, s); n != int64(len(rows)) {
		t.Fatalf("after correction: %d rows stored, want %d", n, len(rows))
	}
}

func TestFileReopenKeepsDataAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	ctx := context.Background()
	rows := fleetRows(t0, 3, time.Minute, 2)
	for i := 0; i < 3; i++ { // migration is idempotent: reopen thrice
		s, err := OpenFile(ctx, path, FileOptions{})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := s.Append(ctx, rows, nil); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s); n != int64(len(rows)) {
			t.Fatalf("open %d: %d rows, want %d", i, n, len(rows))
		}
		var v int
		if err := s.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != FileSchemaVersion {
			t.Fatalf("user_version %d (%v), want %d", v, err, FileSchemaVersion)
		}
		var mode string
		if err := s.r.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("journal_mode %q (%v), want wal", mode, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFileNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	ctx := context.Background()
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = OpenFile(ctx, path, FileOptions{})
	if err == nil {
		t.Fatal("opened a file from a newer schema")
	}
	for _, want := range []string{path, "schema version 99", fmt.Sprintf("the %d this gpuledger supports", FileSchemaVersion)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestFileRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(ctx, text, FileOptions{}); err == nil || !strings.Contains(err.Error(), text) {
		t.Errorf("text file: got %v, want an error naming the file", err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE x (a)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := OpenFile(ctx, other, FileOptions{}); err == nil || !strings.Contains(err.Error(), "not a gpuledger ledger") {
		t.Errorf("foreign SQLite file: got %v", err)
	}
	if _, err := OpenFile(ctx, filepath.Join(dir, "missing.db"), FileOptions{MustExist: true}); err == nil || !strings.Contains(err.Error(), "no ledger file") {
		t.Errorf("MustExist on a missing file: got %v", err)
	}
}

func TestFileRefusesUnstorableRows(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	good := fleetRows(t0, 1, time.Minute, 1)
	bad := append([]attribution.Row(nil), good...)
	bad[2].EnergyJoules = math.NaN()
	err := s.Append(ctx, bad, nil)
	if err == nil || !strings.Contains(err.Error(), "energy_joules is NaN") || !strings.Contains(err.Error(), "ledger row 2") {
		t.Fatalf("NaN row: got %v", err)
	}
	if s.PendingRows() != 0 || countRows(t, s) != 0 {
		t.Fatalf("a refused batch was kept: %d held, %d stored", s.PendingRows(), countRows(t, s))
	}
	late := append([]attribution.Row(nil), good...)
	late[0].IntervalEnd = late[0].IntervalStart.Add(-time.Second)
	if err := s.Append(ctx, late, nil); err == nil || !strings.Contains(err.Error(), "ends before it starts") {
		t.Fatalf("reversed interval: got %v", err)
	}
	if err := s.Append(ctx, nil, []attribution.Finding{{Kind: "x"}}); err == nil {
		t.Fatal("finding without times accepted")
	}
}

func TestFileAppendWhileStreaming(t *testing.T) {
	s := openTemp(t, FileOptions{})
	ctx := context.Background()
	first := fleetRows(t0, 10, time.Minute, 4)
	if err := s.Append(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	// A reader streaming rows must not block the writer (WAL), and it
	// keeps seeing its own snapshot.
	seen, k := 0, 0
	err := s.Rows(ctx, time.Time{}, time.Time{}, func(attribution.Row) error {
		seen++
		if seen%50 == 0 {
			k++
			return s.Write(ctx, fleetRows(t0.Add(time.Duration(100+k)*time.Minute), 1, time.Minute, 4), nil)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(first) {
		t.Fatalf("stream saw %d rows, want its snapshot's %d", seen, len(first))
	}
	if n := countRows(t, s); n != int64(len(first)+k*20) {
		t.Fatalf("%d rows after concurrent writes, want %d", n, len(first)+k*20)
	}
}
