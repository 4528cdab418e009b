package filestore

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/nodelabel"
)

const regionKey = "topology.kubernetes.io/region"

func nl(day, hour int, node, value string) nodelabel.Change {
	return nodelabel.Change{Node: node, Key: regionKey, Value: value, At: time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC)}
}

// The embedded ledger records node labels: each node's last value at or
// before the instant, a removal leaving none, a replay and a second
// append changing nothing, other keys apart, bad input refused.
func TestNodeLabelsFile(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	rm := nl(10, 0, "b", "")
	rm.Deleted = true
	zone := nl(1, 0, "a", "z1")
	zone.Key = "topology.kubernetes.io/zone"
	h := []nodelabel.Change{nl(1, 0, "a", "eu-north-1"), nl(1, 0, "b", "us-east-1"), nl(5, 12, "a", "us-east-1"), rm, zone}
	for range 2 {
		if err := s.AppendNodeLabels(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		at   time.Time
		want map[string]string
	}{
		{nl(1, 0, "", "").At.Add(-time.Second), map[string]string{}},
		{nl(1, 0, "", "").At, map[string]string{"a": "eu-north-1", "b": "us-east-1"}},
		{nl(5, 12, "", "").At.Add(-time.Nanosecond), map[string]string{"a": "eu-north-1", "b": "us-east-1"}},
		{nl(5, 12, "", "").At, map[string]string{"a": "us-east-1", "b": "us-east-1"}},
		{nl(30, 0, "", "").At, map[string]string{"a": "us-east-1"}},
	} {
		got, err := s.NodeLabels(ctx, regionKey, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("at %s: %v, want %v", c.at, got, c.want)
		}
	}
	// A change replaced within its second: the later append wins.
	if err := s.AppendNodeLabels(ctx, []nodelabel.Change{nl(5, 12, "a", "ap-south-1")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.NodeLabels(ctx, regionKey, nl(6, 0, "", "").At); got["a"] != "ap-south-1" {
		t.Errorf("replaced change: %v", got)
	}
	bad := nl(1, 0, "", "eu-north-1")
	err := s.AppendNodeLabels(ctx, []nodelabel.Change{nl(2, 0, "c", "x"), bad})
	if err == nil || !strings.Contains(err.Error(), "node label change 1") || !strings.Contains(err.Error(), "node name is empty") {
		t.Errorf("bad change: %v", err)
	}
	if got, _ := s.NodeLabels(ctx, regionKey, nl(30, 0, "", "").At); got["c"] != "" {
		t.Errorf("a refused call wrote: %v", got)
	}
}

// A file of schema 6 (before node labels) opened read-only reads no
// labels; a writable open migrates it and labels are stored.
func TestNodeLabelsVersion6File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	want := writeLedger(t, path)
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec("DROP TABLE node_labels; PRAGMA user_version = 6"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := OpenReadOnly(ctx, path, FileOptions{})
	if err != nil {
		t.Fatalf("read-only open of a schema-6 file: %v", err)
	}
	readWhole(t, r, want)
	if got, err := r.NodeLabels(ctx, regionKey, nl(30, 0, "", "").At); err != nil || len(got) != 0 {
		t.Errorf("labels of a schema-6 file: %v, %v", got, err)
	}
	if err := r.AppendNodeLabels(ctx, []nodelabel.Change{nl(1, 0, "a", "x")}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("append to a read-only store: %v", err)
	}
	r.Close()
	w, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.AppendNodeLabels(ctx, []nodelabel.Change{nl(1, 0, "a", "x")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.NodeLabels(ctx, regionKey, nl(2, 0, "", "").At); got["a"] != "x" {
		t.Errorf("after the migration: %v", got)
	}
}
