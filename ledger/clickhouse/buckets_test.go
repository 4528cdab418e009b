package clickhouse

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// Expected boundaries are worked out by hand from the zones' rules.
func TestHourBucketsAcrossOffsetChanges(t *testing.T) {
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		zone     string
		from, to string
		want     []string // bucket ranges' starts, UTC
	}{
		// Kolkata is +05:30 all year: hours start at :30 UTC.
		{"Asia/Kolkata", "2024-03-01T00:00:00Z", "2024-03-01T02:00:00Z",
			[]string{"2024-03-01T00:00:00Z", "2024-03-01T00:30:00Z", "2024-03-01T01:30:00Z"}},
		// Lord Howe leaves DST on 2024-04-07: 02:00 +11 (15:00Z) becomes
		// 01:30 +10:30. The hour 01:00+11 (14:00Z) ends at the change
		// (15:00Z); the half hour 01:30-02:00 +10:30 (15:00Z-15:30Z) is a
		// bucket of its own, as the repeated hour of a one-hour fall-back
		// is; then 02:00 +10:30 (15:30Z). The embedded ledger cuts the same
		// way (one definition: calendar.Buckets).
		{"Australia/Lord_Howe", "2024-04-06T14:10:00Z", "2024-04-06T16:00:00Z",
			[]string{"2024-04-06T14:10:00Z", "2024-04-06T15:00:00Z", "2024-04-06T15:30:00Z"}},
		// New York springs forward on 2024-03-10: 02:00 EST (07:00Z)
		// becomes 03:00 EDT; boundaries stay on whole UTC hours.
		{"America/New_York", "2024-03-10T06:00:00Z", "2024-03-10T09:00:00Z",
			[]string{"2024-03-10T06:00:00Z", "2024-03-10T07:00:00Z", "2024-03-10T08:00:00Z"}},
	}
	for _, c := range cases {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Fatalf("zone %s: %v", c.zone, err)
		}
		bs, err := planBuckets(utc(c.from), utc(c.to), loc, ledger.BucketHour)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != len(c.want) {
			t.Errorf("%s: %d buckets, want %d: %+v", c.zone, len(bs), len(c.want), bs)
			continue
		}
		for i, w := range c.want {
			if !bs[i].From.Equal(utc(w)) {
				t.Errorf("%s: bucket %d starts %v, want %s", c.zone, i, bs[i].From.UTC(), w)
			}
		}
	}
}

func TestMonthBucketsInZone(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2024, 2, 15, 0, 0, 0, 0, time.UTC)
	to := time.Date(2024, 4, 2, 0, 0, 0, 0, time.UTC)
	bs, err := planBuckets(from, to, loc, ledger.BucketMonth)
	if err != nil {
		t.Fatal(err)
	}
	// February (from the query start), March 1 00:00 CET = Feb 29 23:00Z,
	// April 1 00:00 CEST = Mar 31 22:00Z.
	want := []time.Time{from, time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC), time.Date(2024, 3, 31, 22, 0, 0, 0, time.UTC)}
	if len(bs) != 3 {
		t.Fatalf("%d buckets, want 3: %+v", len(bs), bs)
	}
	for i := range want {
		if !bs[i].From.Equal(want[i]) {
			t.Errorf("bucket %d starts %v, want %v", i, bs[i].From.UTC(), want[i])
		}
	}
	if got := bs[0].Start; !got.Equal(time.Date(2024, 2, 1, 0, 0, 0, 0, loc)) {
		t.Errorf("first label %v, want Feb 1 in Berlin", got)
	}
}
