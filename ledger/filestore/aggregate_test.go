package filestore

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST tests must not depend on the host's zoneinfo

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// quarterHourRows writes two rows (different team and kind) every 15 minutes
// of [from, to), on instants aligned to UTC quarter hours.
func quarterHourRows(from, to time.Time) []attribution.Row {
	var rows []attribution.Row
	for t, i := from.UTC().Truncate(15*time.Minute), 0; t.Before(to); t, i = t.Add(15*time.Minute), i+1 {
		base := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: t, IntervalEnd: t.Add(15 * time.Minute), Node: "n", GPUUUID: "GPU-1",
			GPUModel: "L4", SharingMode: string(tenancy.Exclusive), Method: attribution.MethodMeasured}
		c := base
		c.Kind, c.SliceID, c.Namespace, c.Pod, c.PodUID, c.Container = attribution.KindContainer, "GPU-1", "ns-a", "p", "u", "c"
		c.Team = []string{"ml", "web"}[i%2]
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 900*float64(i%5)/7, float64(i%3)/3
		c.MemoryMiBSeconds, c.EnergyJoules = float64(i)*0.1, float64(i)+0.5
		u := base
		u.Kind, u.SliceID, u.AllocatedGPUSeconds = attribution.KindUnallocated, "GPU-1", 900-c.AllocatedGPUSeconds
		rows = append(rows, c, u)
	}
	return rows
}

type aggKey struct{ label, team, ns, model, mode, kind string }

type aggSum struct {
	alloc, used, mem, energy float64
	n                        int64
}

// label is the bucket a row belongs to, by its local calendar reading: an
// independent reference for calendarBuckets (the UTC offset tells the two
// 01:00 hours of a fall-back night apart).
func label(t time.Time, loc *time.Location, unit string) string {
	switch unit {
	case ledger.BucketHour:
		return t.In(loc).Format("2006-01-02T15 -0700")
	case ledger.BucketDay:
		return t.In(loc).Format("2006-01-02")
	case ledger.BucketMonth:
		return t.In(loc).Format("2006-01")
	}
	return ""
}

// sumByKey adds rows up per label-based bucket and group, in Go with
// nothing shared with the store; a zero From or To leaves that side open.
func sumByKey(rows iter.Seq[attribution.Row], q ledger.AggregateQuery) map[aggKey]aggSum {
	want := map[aggKey]aggSum{}
	for r := range rows {
		if !q.From.IsZero() && r.IntervalStart.Before(q.From) || !q.To.IsZero() && !r.IntervalStart.Before(q.To) {
			continue
		}
		k := aggKey{label(r.IntervalStart, q.Location, q.Bucket), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind)}
		s := want[k]
		s.alloc += r.AllocatedGPUSeconds
		s.used += r.UsedGPUSeconds
		s.mem += r.MemoryMiBSeconds
		s.energy += r.EnergyJoules
		s.n++
		want[k] = s
	}
	return want
}

func checkAggregate(t *testing.T, got []ledger.Aggregate, want map[aggKey]aggSum, q ledger.AggregateQuery) (buckets int) {
	t.Helper()
	seen := map[string]bool{}
	for _, a := range got {
		if a.BucketStart.Location() != q.Location {
			t.Fatalf("bucket start %s not in %s", a.BucketStart, q.Location)
		}
		seen[label(a.BucketStart, q.Location, q.Bucket)] = true
	}
	checkModel(t, got, want, q)
	return len(seen)
}

func firstKey(m map[aggKey]aggSum) aggKey {
	for k := range m {
		return k
	}
	return aggKey{}
}

func TestAggregateCalendarMonthsAcrossDST(t *testing.T) {
	cases := []struct {
		zone         string
		year         int
		month        time.Month
		hours, days  int
		longDay      string // a day of the month that is not 24 hours, with its hour count
		longDayHours int
	}{
		{"America/Los_Angeles", 2025, time.March, 743, 31, "2025-03-09", 23},
		{"America/Los_Angeles", 2025, time.November, 721, 30, "2025-11-02", 25},
		{"Europe/Berlin", 2025, time.October, 745, 31, "2025-10-26", 25},
		{"Asia/Kolkata", 2025, time.March, 744, 31, "", 0}, // +05:30: hours start at :30 UTC
		{"UTC", 2025, time.February, 672, 28, "", 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%d-%02d", c.zone, c.year, c.month), func(t *testing.T) {
			loc, err := time.LoadLocation(c.zone)
			if err != nil {
				t.Fatalf("zone %s: %v", c.zone, err)
			}
			from := time.Date(c.year, c.month, 1, 0, 0, 0, 0, loc)
			to := time.Date(c.year, c.month+1, 1, 0, 0, 0, 0, loc)
			rows := quarterHourRows(from.Add(-2*time.Hour), to.Add(2*time.Hour))
			s := openTemp(t, FileOptions{})
			if err := s.Append(context.Background(), rows, nil); err != nil {
				t.Fatal(err)
			}
			for _, unit := range []string{ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth} {
				q := ledger.AggregateQuery{From: from, To: to, Location: loc, Bucket: unit}
				got, err := s.Aggregate(context.Background(), q)
				if err != nil {
					t.Fatal(err)
				}
				n := checkAggregate(t, got, sumByKey(slices.Values(rows), q), q)
				want := map[string]int{ledger.BucketHour: c.hours, ledger.BucketDay: c.days, ledger.BucketMonth: 1}[unit]
				if n != want {
					t.Errorf("%s buckets: %d, want %d", unit, n, want)
				}
				if unit == ledger.BucketDay && c.longDay != "" {
					var rowsThatDay int64
					for _, a := range got {
						if a.BucketStart.Format("2006-01-02") == c.longDay {
							rowsThatDay += a.Rows
						}
					}
					// 4 instants an hour, 2 rows each.
					if rowsThatDay != int64(c.longDayHours*4*2) {
						t.Errorf("%s: %d rows, want %d (%d hours)", c.longDay, rowsThatDay, c.longDayHours*8, c.longDayHours)
					}
				}
			}
		})
	}
}

func TestAggregatePartialBucketsAndNone(t *testing.T) {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	day := time.Date(2025, 3, 10, 0, 0, 0, 0, loc)
	rows := quarterHourRows(day, day.Add(24*time.Hour))
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	// 10:30 to 12:15: buckets 10:00 (10:30, 10:45), 11:00 (4 instants),
	// 12:00 (12:00 only), 2 rows per instant.
	q := ledger.AggregateQuery{From: day.Add(10*time.Hour + 30*time.Minute), To: day.Add(12*time.Hour + 15*time.Minute), Location: loc, Bucket: ledger.BucketHour}
	got, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	perHour := map[string]int64{}
	for _, a := range got {
		perHour[a.BucketStart.Format("15:04")] += a.Rows
	}
	if want := map[string]int64{"10:00": 4, "11:00": 8, "12:00": 2}; fmt.Sprint(perHour) != fmt.Sprint(want) {
		t.Fatalf("rows per hour %v, want %v", perHour, want)
	}

	all, err := s.Aggregate(ctx, ledger.AggregateQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, a := range all {
		if !a.BucketStart.IsZero() {
			t.Fatalf("BucketNone gave bucket start %s", a.BucketStart)
		}
		n += a.Rows
	}
	if n != int64(len(rows)) {
		t.Fatalf("open-ended BucketNone: %d rows, want %d", n, len(rows))
	}

	for _, bad := range []ledger.AggregateQuery{
		{From: day, To: day.Add(time.Hour), Bucket: "week"},
		{From: day, To: day, Bucket: ledger.BucketHour},
		{To: day, Bucket: ledger.BucketDay},
	} {
		if _, err := s.Aggregate(ctx, bad); err == nil {
			t.Errorf("query %+v accepted", bad)
		}
	}
	if _, err := s.Aggregate(ctx, ledger.AggregateQuery{From: day, To: day.Add(time.Hour), Bucket: "week"}); err == nil || !strings.Contains(err.Error(), `"week"`) {
		t.Errorf("unknown bucket error %v does not name it", err)
	}
}

func TestCalendarBucketsOddZones(t *testing.T) {
	// Lord Howe shifts by 30 minutes; Santiago changes at midnight, so some
	// local midnights do not exist. Every bucket must be contiguous, start
	// where its local label starts, and hold only instants of one label.
	for _, zone := range []string{"Australia/Lord_Howe", "America/Santiago", "America/Sao_Paulo", "Asia/Kathmandu"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatalf("zone %s: %v", zone, err)
		}
		for _, unit := range []string{ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth} {
			from := time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC)
			to := from.AddDate(1, 0, 0)
			bs, err := calendarBuckets(from, to, loc, unit)
			if err != nil {
				t.Fatalf("%s %s: %v", zone, unit, err)
			}
			prev := from.UnixNano()
			for i, b := range bs {
				if b.lo != prev {
					t.Fatalf("%s %s bucket %d: starts at %d, previous ended at %d", zone, unit, i, b.lo, prev)
				}
				first, last := fromNS(b.lo), fromNS(b.hi-1)
				if l1, l2 := label(first, loc, unit), label(last, loc, unit); l1 != l2 {
					t.Fatalf("%s %s bucket %d [%s, %s) spans labels %q and %q", zone, unit, i, first, fromNS(b.hi), l1, l2)
				}
				if i > 0 && label(fromNS(b.lo-1), loc, unit) == label(first, loc, unit) {
					t.Fatalf("%s %s bucket %d starts inside label %q", zone, unit, i, label(first, loc, unit))
				}
				prev = b.hi
			}
			if prev != to.UnixNano() {
				t.Fatalf("%s %s: buckets end at %d, want %d", zone, unit, prev, to.UnixNano())
			}
		}
	}
}
