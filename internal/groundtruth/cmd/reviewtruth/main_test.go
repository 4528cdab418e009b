package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var reviewDir = filepath.Join("..", "..", "..", "..", "testdata", "review")

// TestCheckedInInternalTruthIsCurrent: every review scenario's
// truth.internal.json is what internal/groundtruth computes today, and a
// scenario the parser rejects has none, so comparing it with the hand
// truth compares today's reading.
func TestCheckedInInternalTruthIsCurrent(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(reviewDir, "*", "scenario.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no review scenarios under %s: %v", reviewDir, err)
	}
	for _, p := range paths {
		name := filepath.Base(filepath.Dir(p))
		got, err := Render(p)
		want, errWant := os.ReadFile(filepath.Join(filepath.Dir(p), InternalFile))
		var rejected *rejectedError
		switch {
		case errors.As(err, &rejected):
			if errWant == nil {
				t.Errorf("%s: the parser rejects it (%v) but %s exists; run go run ./internal/groundtruth/cmd/reviewtruth", name, rejected.err, InternalFile)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case errWant != nil:
			t.Errorf("%s: %v; run go run ./internal/groundtruth/cmd/reviewtruth", name, errWant)
		case !bytes.Equal(got, want):
			t.Errorf("%s: %s is stale; run go run ./internal/groundtruth/cmd/reviewtruth", name, InternalFile)
		}
	}
}

// TestWriteAll writes a copy of one review scenario's internal truth.
func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(reviewDir, "dra-shared", "scenario.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "scenario.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeAll(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a", InternalFile))
	want, _ := Render(src)
	if err != nil || !bytes.Equal(got, want) || len(got) == 0 {
		t.Errorf("wrote %d bytes (%v), want %d", len(got), err, len(want))
	}
	if err := writeAll(t.TempDir()); err == nil {
		t.Error("an empty directory: no error")
	}
}
