package clickhouse

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests must not depend on the host's zoneinfo

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time zone %s: %v", name, err)
	}
	return loc
}

// TestAggregateBuckets compares reports in several zones and bucket sizes
// with sums computed straight from the generated rows, before the rollups
// exist (raw rows only) and after (rollups plus raw edges).
func TestAggregateBuckets(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	// 2024-03-09 to 03-12 spans New York's switch to summer time.
	start := time.Date(2024, 3, 9, 0, 0, 0, 0, time.UTC)
	rows := fleet(4, 1, 1, 3*24*60, start)
	appendAll(t, s, rows, 10000)

	kolkata := mustZone(t, "Asia/Kolkata")
	newYork := mustZone(t, "America/New_York")
	hourIn := func(loc *time.Location) func(time.Time) time.Time {
		return func(t time.Time) time.Time {
			l := t.In(loc)
			return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), 0, 0, 0, loc)
		}
	}
	dayIn := func(loc *time.Location) func(time.Time) time.Time {
		return func(t time.Time) time.Time {
			l := t.In(loc)
			return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
		}
	}
	monthIn := func(loc *time.Location) func(time.Time) time.Time {
		return func(t time.Time) time.Time {
			l := t.In(loc)
			return time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, loc)
		}
	}
	cases := []struct {
		name  string
		q     ledger.AggregateQuery
		label func(time.Time) time.Time
	}{
		{"hours in Kolkata (+05:30)", ledger.AggregateQuery{From: start.Add(3*time.Hour + 17*time.Minute), To: start.Add(30 * time.Hour),
			Location: kolkata, Bucket: ledger.BucketHour}, hourIn(kolkata)},
		{"days in New York across DST", ledger.AggregateQuery{From: start, To: start.Add(72 * time.Hour),
			Location: newYork, Bucket: ledger.BucketDay}, dayIn(newYork)},
		{"UTC days", ledger.AggregateQuery{From: start.Add(-time.Hour), To: start.Add(80 * time.Hour),
			Bucket: ledger.BucketDay}, dayIn(time.UTC)},
		{"UTC month", ledger.AggregateQuery{From: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC),
			Bucket: ledger.BucketMonth}, monthIn(time.UTC)},
		{"no buckets, sub-second edges", ledger.AggregateQuery{From: start.Add(90*time.Minute + 500*time.Millisecond), To: start.Add(50*time.Hour + 1),
			Bucket: ledger.BucketNone}, nil},
	}
	run := func(stage string) {
		for _, c := range cases {
			aggs, plan, err := s.aggregate(ctx, c.q)
			if err != nil {
				t.Fatalf("%s: %s: %v", stage, c.name, err)
			}
			t.Logf("%s: %s: plan %+v", stage, c.name, plan)
			compareSums(t, stage+": "+c.name, fromAggregates(aggs), reference(rows, c.q.From, c.q.To, c.label))
			if c.label != nil {
				for _, a := range aggs {
					if a.BucketStart.Location() != c.label(a.BucketStart).Location() {
						t.Errorf("%s: bucket start %v not in the query's zone", c.name, a.BucketStart)
						break
					}
				}
			}
		}
	}
	run("raw only")
	if err := s.RebuildRollups(ctx, start, start.Add(72*time.Hour)); err != nil {
		t.Fatalf("RebuildRollups: %v", err)
	}
	run("with rollups")
	_, plan, err := s.aggregate(ctx, cases[2].q)
	if err != nil {
		t.Fatal(err)
	}
	// [-1h, 80h): the 3 whole UTC days with data come from the daily
	// rollup; hour -1 and hours 72-79 have no data and so no build, and are
	// read raw as 2 ranges (one per bucket).
	if want := (aggPlan{days: 3, hours: 0, raw: 2}); plan != want {
		t.Errorf("UTC day plan after rebuild = %+v, want %+v", plan, want)
	}
}

// TestStaleRollupFallsBack rewrites rows of a closed hour after its rollup
// was built: reports see the new values at once (the hour is read raw) and
// again from the rollup after a rebuild, and a group that no longer exists
// disappears from both.
func TestStaleRollupFallsBack(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	rows := fleet(5, 1, 1, 3*60, t0)
	appendAll(t, s, rows, 10000)
	q := ledger.AggregateQuery{From: t0, To: t0.Add(3 * time.Hour), Bucket: ledger.BucketHour}
	if err := s.RebuildRollups(ctx, q.From, q.To); err != nil {
		t.Fatal(err)
	}
	if _, plan, _ := s.aggregate(ctx, q); plan.hours != 3 || plan.raw != 0 {
		t.Fatalf("plan after rebuild = %+v, want 3 hourly rollups", plan)
	}
	// Move every container row of minute 70 to another team, and change
	// its usage.
	changed := append([]attribution.Row(nil), rows...)
	var patch []attribution.Row
	for i := range changed {
		r := &changed[i]
		if r.IntervalStart.Equal(t0.Add(70*time.Minute)) && r.Kind == attribution.KindContainer {
			r.Team, r.UsedGPUSeconds = "moved", r.UsedGPUSeconds+1
			patch = append(patch, *r)
		}
	}
	if len(patch) == 0 {
		t.Fatal("test data has no container rows at minute 70")
	}
	if err := s.Append(ctx, patch, nil); err != nil {
		t.Fatal(err)
	}
	label := func(t time.Time) time.Time { return t.Truncate(time.Hour) }
	aggs, plan, err := s.aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	compareSums(t, "after rewrite", fromAggregates(aggs), reference(changed, q.From, q.To, label))
	if plan.hours != 2 || plan.raw != 1 {
		t.Errorf("plan after rewrite = %+v, want 2 rollup hours and the rewritten hour raw", plan)
	}
	if err := s.RebuildRollups(ctx, q.From, q.To); err != nil {
		t.Fatal(err)
	}
	aggs, plan, err = s.aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	compareSums(t, "after rebuild", fromAggregates(aggs), reference(changed, q.From, q.To, label))
	if plan.hours != 3 || plan.raw != 0 {
		t.Errorf("plan after second rebuild = %+v, want 3 hourly rollups", plan)
	}
}

func TestAggregateRejectsBadQueries(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, q := range []ledger.AggregateQuery{
		{From: t0, To: t0, Bucket: ledger.BucketHour},
		{From: t0.Add(time.Hour), To: t0, Bucket: ledger.BucketDay},
		{To: t0, Bucket: ledger.BucketDay},
		{From: t0, To: t0.Add(time.Hour), Bucket: "week"},
	} {
		if _, err := s.Aggregate(ctx, q); err == nil {
			t.Errorf("Aggregate(%+v) succeeded, want an error", q)
		}
	}
}

// TestRollupSumsBucketsInTheServer: a day in Los Angeles is 24 UTC hours,
// and the server sums them, so the groups of a day come back once, not
// once per hour; an hour whose rows are not the ones its build wrote (a
// retried insert's copy, a forged row) is read raw alone, its day's other
// hours still from the rollup; the sums are the rows', computed from the
// rows.
func TestRollupSumsBucketsInTheServer(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	la := mustZone(t, "America/Los_Angeles")
	// 2024-03-10 is Los Angeles' switch to summer time (a 23-hour day).
	from := time.Date(2024, 3, 9, 0, 0, 0, 0, la)
	to := time.Date(2024, 3, 12, 0, 0, 0, 0, la)
	rows := fleet(7, 2, 2, int(to.Sub(from)/time.Minute), from)
	appendAll(t, s, rows, 20000)
	if err := s.RebuildRollups(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Exec(ctx, "SYSTEM STOP MERGES "+s.table(tableHourly)); err != nil {
		t.Fatal(err)
	}
	dayIn := func(t time.Time) time.Time {
		l := t.In(la)
		return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, la)
	}
	want := reference(rows, from, to, dayIn)
	q := ledger.AggregateQuery{From: from, To: to, Location: la, Bucket: ledger.BucketDay}
	hours := int(to.Sub(from) / time.Hour) // 71: no whole UTC day inside a Los Angeles one
	run := func(stage string, wantPlan aggPlan) {
		t.Helper()
		var sent atomic.Uint64
		pctx := ch.Context(ctx, ch.WithProfileInfo(func(p *ch.ProfileInfo) { sent.Add(p.Rows) }))
		aggs, plan, err := s.aggregate(pctx, q)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		compareSums(t, stage, fromAggregates(aggs), want)
		if plan != wantPlan {
			t.Errorf("%s: plan %+v, want %+v", stage, plan, wantPlan)
		}
		// The days' groups, the build headers and marks of the state, and
		// the raw hour's groups; one row per hour and group before.
		var perHour int
		for h := from; h.Before(to); h = h.Add(time.Hour) {
			perHour += len(reference(rows, h, h.Add(time.Hour), nil))
		}
		// Fallbacks read their days again hour by hour: only the clean
		// days are bounded.
		if n := sent.Load(); stage == "clean" && n >= uint64(perHour) {
			t.Errorf("%s: the server sent %d rows, as many as the hours' groups (%d): hours summed in Go", stage, n, perHour)
		}
		t.Logf("%s: %d rows sent for %d day groups (%d hour groups)", stage, sent.Load(), len(want), perHour)
	}
	run("clean", aggPlan{hours: hours})

	// A retried insert: the same build's rows of one hour again. Its
	// groups are read twice in one period, so that hour alone is read raw
	// (until a merge collapses the copy), and nothing counts twice.
	dup := time.Date(2024, 3, 10, 15, 0, 0, 0, time.UTC)
	if err := s.conn.Exec(ctx, fmt.Sprintf("INSERT INTO %[1]s SELECT * FROM %[1]s WHERE hour = %[2]s", s.table(tableHourly), dt(dup.Unix()))); err != nil {
		t.Fatal(err)
	}
	run("a retried insert", aggPlan{hours: hours - 1, raw: 1})

	// A row forged under the current build of another hour: more rows
	// than the build wrote, so that hour too is read raw.
	forged := time.Date(2024, 3, 10, 16, 0, 0, 0, time.UTC)
	b := currentBuild(t, s, grainHour, forged)
	if err := s.conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (hour, version, build, cluster, team, namespace, gpu_model, sharing_mode, kind,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows)
SELECT %s, %d, %d, 'default', 'forged', 'forged', 'A100-SXM4-80GB', 'exclusive', 'container', 1e9, 1e9, 0., 0., 1`,
		s.table(tableHourly), dt(forged.Unix()), b.version, b.build)); err != nil {
		t.Fatal(err)
	}
	// (The two hours are adjacent: one raw range.)
	run("a forged row", aggPlan{hours: hours - 2, raw: 1})

	// In another day, one row of an hour read twice and the next hour
	// one row short (its header claims one more): the day's count is
	// right, and only the rows read twice give the copy away. Both hours
	// are read raw; summing the day as counted would bill the row twice.
	twice, short := time.Date(2024, 3, 9, 10, 0, 0, 0, time.UTC), time.Date(2024, 3, 9, 11, 0, 0, 0, time.UTC)
	if err := s.conn.Exec(ctx, fmt.Sprintf("INSERT INTO %[1]s SELECT * FROM %[1]s WHERE hour = %[2]s LIMIT 1", s.table(tableHourly), dt(twice.Unix()))); err != nil {
		t.Fatal(err)
	}
	b = currentBuild(t, s, grainHour, short)
	if err := s.conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (grain, period, version, build, groups, coverage_devices, device_groups)
SELECT 'h', %s, %d, %d, %d, %d, %d`, s.table(tableBuilds), dt(short.Unix()), b.version+1, b.build, b.groups+1, b.devices, b.deviceGroups)); err != nil {
		t.Fatal(err)
	}
	run("a row twice and a row short in one day", aggPlan{hours: hours - 4, raw: 2})
}

// TestRollupSumReadFitsTheQuerySize: the longest summing read the store
// sends (a full chunk of periods none adjacent to another, the widest
// build ids and units, the longest grain) is accepted by the server's
// default max_query_size; none of the periods has rows, so each comes
// back short. (Each period its own range made this query take 100 s over
// a 10,000-GPU month's per-device hours: the ranges are bounded.)
func TestRollupSumReadFitsTheQuerySize(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	buckets, err := planBuckets(from, from.Add(2*rollupPeriodsPerQuery*time.Hour), time.UTC, ledger.BucketHour)
	if err != nil {
		t.Fatal(err)
	}
	acc := newAccumulator(ledger.BucketHour, buckets, &containerGrain)
	hdr := map[int64]header{}
	var segs []segment
	for i := 0; i < rollupPeriodsPerQuery; i++ {
		start := from.Add(time.Duration(2*i) * time.Hour)
		segs = append(segs, segment{bucket: 2 * i, level: levelHour, from: start, to: start.Add(time.Hour)})
		hdr[start.Unix()] = header{build: math.MaxUint64 - uint64(i), deviceGroups: 1}
	}
	done := map[int64]bool{}
	short, err := sumRollupChunk(ctx, s, grainHour, deviceRollup, segs, hdr, false, acc, done, new(sync.Mutex))
	if err != nil {
		t.Fatalf("a full chunk of scattered periods: %v", err)
	}
	if len(short) != len(segs) || len(done) != 0 {
		t.Errorf("%d of %d periods short, %d done; want all short", len(short), len(segs), len(done))
	}
}
