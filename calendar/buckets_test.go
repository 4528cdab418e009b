package calendar

import (
	"strings"
	"testing"
	"time"
)

func TestBucketsContract(t *testing.T) {
	from := time.Date(2024, 4, 6, 14, 10, 0, 0, time.UTC)
	to := time.Date(2024, 4, 6, 16, 0, 0, 0, time.UTC)
	if _, err := Buckets(from, to, time.UTC, "week"); err == nil || !strings.Contains(err.Error(), `"week"`) {
		t.Errorf("unknown unit: error %v, want one naming it", err)
	}
	if _, err := Buckets(to, from, time.UTC, Hour); err == nil {
		t.Error("reversed range: want an error")
	}
	// A nil zone is UTC; buckets tile [from, to) with no gap or overlap.
	bs, err := Buckets(from, to, nil, Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{from, time.Date(2024, 4, 6, 15, 0, 0, 0, time.UTC)}
	if len(bs) != len(want) {
		t.Fatalf("%d buckets, want %d: %+v", len(bs), len(want), bs)
	}
	for i, b := range bs {
		if !b.From.Equal(want[i]) {
			t.Errorf("bucket %d from %v, want %v", i, b.From, want[i])
		}
		if i > 0 && !bs[i-1].To.Equal(b.From) {
			t.Errorf("gap or overlap between buckets %d and %d", i-1, i)
		}
	}
	if !bs[0].Start.Equal(time.Date(2024, 4, 6, 14, 0, 0, 0, time.UTC)) || !bs[len(bs)-1].To.Equal(to) {
		t.Errorf("first start %v, last end %v", bs[0].Start, bs[len(bs)-1].To)
	}
}
