package filestore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// TestVersion4FileFromRelease opens a ledger written by gpuledger v0.1.0
// (schema 4: `gpuledger simulate` of testdata/v4/scenario.yaml, the
// migmix example run for an hour, with its ledger.csv beside it) and
// checks the migration to schema 5 kept every row as it was, rebuilt the
// per-device rollup of its clean slots to equal the raw rows, stored rows
// without a profile, and records profiles from then on.
func TestVersion4FileFromRelease(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("testdata", "v4", "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(ctx, path, FileOptions{MustExist: true})
	if err != nil {
		t.Fatalf("open a v0.1.0 ledger: %v", err)
	}
	defer s.Close()
	var v int
	if err := s.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != FileSchemaVersion {
		t.Fatalf("user_version %d (%v), want %d", v, err, FileSchemaVersion)
	}

	checkDeviceRollupTable(t, s)
	var built int
	if err := s.r.QueryRow("SELECT count(*) FROM ledger_rollup_device").Scan(&built); err != nil || built == 0 {
		t.Fatalf("device rollup after migration: %d rows (%v), want the clean slots' groups", built, err)
	}
	var got bytes.Buffer
	if _, err := ledger.Export(ctx, s, time.Time{}, time.Time{}, "csv", &got, nil); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "v4", "ledger.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := sortedLines(got.String()), sortedLines(string(want)); !slices.Equal(g, w) {
		t.Fatalf("rows after migration differ from v0.1.0's ledger.csv: %d lines, want %d", len(g), len(w))
	}

	var last time.Time
	err = s.Rows(ctx, time.Time{}, time.Time{}, func(r attribution.Row) error {
		if r.MIGProfile != "" {
			t.Errorf("row stored before profiles has profile %q", r.MIGProfile)
		}
		if r.IntervalEnd.After(last) {
			last = r.IntervalEnd
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	day := last.Truncate(24 * time.Hour)
	q := ledger.AggregateQuery{From: day, To: day.Add(24 * time.Hour), Location: time.UTC, Bucket: ledger.BucketNone, ByDevice: true}
	before, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var migSlice ledger.Aggregate
	for _, a := range before {
		if strings.HasPrefix(a.SliceID, "MIG-") {
			migSlice = a
		}
	}
	if migSlice.SliceID == "" {
		t.Fatal("the fixture has no MIG container rows")
	}

	// A new row on a slice the old rows hold: the device aggregate takes
	// its profile (a slice's profile never changes, so old rows agree).
	next := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: last.Add(time.Hour), IntervalEnd: last.Add(time.Hour + time.Minute),
		Node: "n", GPUUUID: migSlice.GPUUUID, GPUModel: migSlice.GPUModel, SliceID: migSlice.SliceID,
		MIGProfile: "3g.40gb", SharingMode: migSlice.Mode, Kind: attribution.KindContainer,
		Namespace: migSlice.Namespace, Pod: migSlice.Pod, PodUID: "u", Container: "c", Team: migSlice.Team,
		AllocatedGPUSeconds: 60, UsedGPUSeconds: 30, Method: attribution.MethodMeasured}
	if next.IntervalEnd.After(day.Add(24 * time.Hour)) {
		t.Fatalf("the fixture ends at %s, too late in its day for this check", last)
	}
	if err := s.Append(ctx, []attribution.Row{next}, nil); err != nil {
		t.Fatal(err)
	}
	after, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range after {
		if a.SliceID == migSlice.SliceID && a.Pod == migSlice.Pod && a.Team == migSlice.Team {
			found = true
			if a.MIGProfile != "3g.40gb" {
				t.Fatalf("device aggregate of %s: profile %q, want 3g.40gb", a.SliceID, a.MIGProfile)
			}
		} else if a.MIGProfile != "" {
			t.Fatalf("device aggregate of %s took profile %q from another slice", a.SliceID, a.MIGProfile)
		}
	}
	if !found {
		t.Fatalf("no device aggregate for %s after the append", migSlice.SliceID)
	}
}

func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(l)
	return l
}

// TestMIGProfileRoundTrips: the profile is stored, read back by Rows and
// the outbox, and a replay that changes only the profile is a change (a
// new seq, shipped again), while an identical replay is not.
func TestMIGProfileRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, err := OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: t0, IntervalEnd: t0.Add(time.Minute), Node: "n", GPUUUID: "GPU-1",
		GPUModel: "A100-SXM4-80GB", SliceID: "MIG-1", MIGProfile: "1g.10gb", SharingMode: string(tenancy.MIG),
		Kind: attribution.KindContainer, Namespace: "ns", Pod: "p", PodUID: "u", Container: "c", Team: "t",
		AllocatedGPUSeconds: 60.0 / 7, UsedGPUSeconds: 1, Method: attribution.MethodMeasured}
	if err := s.Append(ctx, []attribution.Row{r}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := s.NextBatch(ctx, "ch", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != 1 || b.Rows[0] != r {
		t.Fatalf("outbox row %+v, want %+v", b.Rows, r)
	}
	if err := s.MarkShipped(ctx, "ch", b.LastSeq); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, []attribution.Row{r}, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := s.NextBatch(ctx, "ch", 10); err != nil || len(b.Rows) != 0 {
		t.Fatalf("an identical replay is shipped again: %d rows (%v)", len(b.Rows), err)
	}
	r.MIGProfile = "1g.20gb"
	if err := s.Append(ctx, []attribution.Row{r}, nil); err != nil {
		t.Fatal(err)
	}
	b, err = s.NextBatch(ctx, "ch", 10)
	if err != nil || len(b.Rows) != 1 || b.Rows[0].MIGProfile != "1g.20gb" {
		t.Fatalf("a replay with another profile: batch %+v (%v)", b.Rows, err)
	}
	var rows []attribution.Row
	if err := s.Rows(ctx, time.Time{}, time.Time{}, func(x attribution.Row) error { rows = append(rows, x); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0] != r {
		t.Fatalf("Rows: %+v, want %+v", rows, r)
	}
}
