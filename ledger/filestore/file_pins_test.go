package filestore

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

const hamiKey = "hami.io/vgpu-devices-allocated"

func TestPinsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	at := time.Date(2026, 11, 3, 9, 0, 0, 123456789, time.FixedZone("CET", 3600))
	first := []attribution.AnnotationPin{
		{PodUID: "uid-b", Container: "main", Key: hamiKey, Value: "GPU-b,NVIDIA,1000,30:;", At: at},
		{PodUID: "uid-a", Container: "init", Key: hamiKey, Value: ";GPU-a,NVIDIA,2000,50:", At: at.Add(time.Second)},
	}
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pins, err := s.Pins(ctx); err != nil || len(pins) != 0 {
		t.Fatalf("Pins of a new file = %v, %v; want none", pins, err)
	}
	if err := s.SavePins(ctx, first); err != nil {
		t.Fatalf("SavePins: %v", err)
	}
	if err := s.SavePins(ctx, nil); err != nil {
		t.Fatalf("SavePins(nil): %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []attribution.AnnotationPin{first[1], first[0]} // by pod UID
	for i := range want {
		want[i].At = want[i].At.UTC()
	}
	got, err := s.Pins(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Pins after reopen = %+v, %v; want %+v", got, err, want)
	}

	// The tenant edits the annotation: the new value for the same key does
	// not replace the first; saving the first again changes nothing; another
	// container's pin is added.
	edited := first[0]
	edited.Value, edited.At = "GPU-other,NVIDIA,80000,100:;", at.Add(time.Hour)
	other := attribution.AnnotationPin{PodUID: "uid-b", Container: "sidecar", Key: hamiKey, Value: ";", At: at.Add(time.Hour).UTC()}
	if err := s.SavePins(ctx, []attribution.AnnotationPin{edited, first[0], other}); err != nil {
		t.Fatalf("SavePins: %v", err)
	}
	got, err = s.Pins(ctx)
	want = append(want, other)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Pins after an edit = %+v, %v; want %+v", got, err, want)
	}
}

// Pins that could never be stored or matched are skipped with a warning;
// the valid ones saved with them are kept, and no error asks for a retry
// that could never succeed.
func TestSavePinsSkipsBadPins(t *testing.T) {
	var logs bytes.Buffer
	s := openTemp(t, FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	good := attribution.AnnotationPin{PodUID: "u", Container: "c", Key: hamiKey, Value: "v", At: at}
	bad := map[string]attribution.AnnotationPin{
		"no pod UID":   {Container: "c", Key: hamiKey, At: at},
		"no container": {PodUID: "u", Key: hamiKey, At: at},
		"no key":       {PodUID: "u", Container: "c", At: at},
		"zero time":    {PodUID: "u", Container: "c", Key: hamiKey},
		"far future":   {PodUID: "u", Container: "c", Key: hamiKey, At: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for name, p := range bad {
		if err := s.SavePins(context.Background(), []attribution.AnnotationPin{p, good}); err != nil {
			t.Errorf("%s: SavePins = %v, want the bad pin skipped", name, err)
		}
	}
	if n := strings.Count(logs.String(), "annotation pin skipped"); n != len(bad) {
		t.Errorf("%d warnings for %d bad pins:\n%s", n, len(bad), logs.String())
	}
	if pins, err := s.Pins(context.Background()); err != nil || len(pins) != 1 || pins[0] != good {
		t.Errorf("Pins = %+v, %v; want only %+v", pins, err, good)
	}
}

// A file written before pins existed (schema 2) is migrated on open.
func TestPinsMigrateFromSchema2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := fleetRows(t0, 1, time.Minute, 2)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(undoSchema4and5 + "DROP TABLE annotation_pins; PRAGMA user_version = 2"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatalf("reopen a schema-2 file: %v", err)
	}
	defer s.Close()
	var v int
	if err := s.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != FileSchemaVersion {
		t.Fatalf("user_version %d (%v), want %d", v, err, FileSchemaVersion)
	}
	pin := attribution.AnnotationPin{PodUID: "u", Container: "c", Key: hamiKey, Value: "v", At: t0}
	if err := s.SavePins(ctx, []attribution.AnnotationPin{pin}); err != nil {
		t.Fatalf("SavePins after migration: %v", err)
	}
	if got, err := s.Pins(ctx); err != nil || len(got) != 1 || got[0].Value != "v" {
		t.Errorf("Pins = %v, %v", got, err)
	}
	n := 0
	if err := s.Rows(ctx, t0, t0.Add(time.Hour), func(attribution.Row) error { n++; return nil }); err != nil || n != len(rows) {
		t.Errorf("rows after migration: %d, %v; want %d", n, err, len(rows))
	}
}

func TestForgetPinsOfPodsThatAreGone(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	var pins []attribution.AnnotationPin
	for _, uid := range []string{"gone-1", "live", "gone-2"} {
		for _, ctr := range []string{"init", "main"} {
			pins = append(pins, attribution.AnnotationPin{PodUID: uid, Container: ctr, Key: hamiKey, Value: uid, At: at})
		}
	}
	if err := s.SavePins(ctx, pins); err != nil {
		t.Fatal(err)
	}
	n, err := s.ForgetPins(ctx, func(uid string) bool { return uid == "live" })
	if err != nil || n != 4 {
		t.Fatalf("ForgetPins = %d, %v; want 4 pins of two pods", n, err)
	}
	got, err := s.Pins(ctx)
	if err != nil || len(got) != 2 || got[0].PodUID != "live" || got[1].PodUID != "live" {
		t.Errorf("Pins after forgetting = %+v, %v; want live's two", got, err)
	}
	if n, err := s.ForgetPins(ctx, func(string) bool { return true }); err != nil || n != 0 {
		t.Errorf("ForgetPins keeping everything = %d, %v", n, err)
	}
}
