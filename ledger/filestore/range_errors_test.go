package filestore

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
)

// A range that cannot be bucketed says what is wrong with it: which end is
// unset, or which end lies outside the years a ledger holds.
func TestBucketRangeErrorsNameTheProblem(t *testing.T) {
	s := openTemp(t, FileOptions{})
	year := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		from, to time.Time
		want     string
	}{
		{time.Time{}, year(2026), "the start is unset"},
		{year(2026), time.Time{}, "the end is unset"},
		{time.Time{}, time.Time{}, "neither end is set"},
		{year(1500), year(2026), "time 1500-01-01T00:00:00Z is outside the years a ledger can hold (1678 to 2261)"},
		{year(2026), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), "time 9999-12-31T00:00:00Z is outside"},
	} {
		_, err := s.Aggregate(t.Context(), ledger.AggregateQuery{From: c.from, To: c.to, Bucket: ledger.BucketDay})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("day buckets of [%v, %v): %v, want an error saying %q", c.from, c.to, err, c.want)
		}
	}
	for in, want := range map[string]string{
		"0001-01-01":           "time 0001-01-01T00:00:00Z is outside",
		"9999-12-31":           "time 9999-12-31T00:00:00Z is outside",
		"2262-05-01T00:00:00Z": "outside the years",
	} {
		if _, err := calendar.ParseTime(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTime(%q) = %v, want %q", in, err, want)
		}
	}
	if _, err := calendar.ParseTime("2261-12-31"); err != nil {
		t.Errorf("ParseTime of the last storable year: %v", err)
	}
}
