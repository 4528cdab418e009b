package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
)

// benchFleet is the ledger of BenchmarkMonthlyReportClickHouse: gpus GPUs,
// 8 per node, at 1-minute resolution from 2026-03-01T00:00Z to
// 2026-04-01T08:00Z (March in UTC and in America/Los_Angeles). Per 25 GPUs:
//
//   - 15 A100-SXM4-80GB, 9 H100-SXM5-80GB and 1 L40S (a model the price
//     book does not know);
//   - 23 exclusive GPUs, each one row per minute: a container (60 s
//     allocated) or, on one GPU-day in ten, an unallocated row;
//   - 2 time-sliced GPUs, each three rows per minute: two containers of
//     30 s allocated and an idle row taking the rest of the usage.
//
// So 1.16 rows per GPU-minute, 51.8 million for 1,000 GPUs over March:
// the target's "about 50 million". Exclusive GPUs omit their idle row, so
// the usage partition only holds on the shared ones; the volume is the
// point, and the rollups make Aggregate's cost depend on the number of
// groups, not rows. Tenants (100 namespaces of 20 teams) move daily, so
// each hour has a few hundred (team, namespace, model, mode, kind) groups.
type benchFleet struct{ gpus int }

// benchFleetVersion names the generator in the kept database's name, so a
// changed generator never reuses rows of an older one.
const benchFleetVersion = 1

var benchStart = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// benchMinutes spans March and the 8 hours of April 1 that the
// Los Angeles March reaches into.
const benchMinutes = (31*24 + 8) * 60

func (f benchFleet) from() time.Time { return benchStart }
func (f benchFleet) to() time.Time   { return benchStart.Add(benchMinutes * time.Minute) }

// hours are the UTC hours holding rows, which Append would have marked.
func (f benchFleet) hours() []time.Time {
	var out []time.Time
	for h := f.from(); h.Before(f.to()); h = h.Add(time.Hour) {
		out = append(out, h)
	}
	return out
}

func (f benchFleet) rowsPerMinute() int64 { return int64(f.gpus + 2*2*f.gpus/25) }

func (f benchFleet) minutes(from, to time.Time) int64 { return int64(to.Sub(from) / time.Minute) }

// ensure leaves the fleet's rows in s: there already (a kept database),
// or generated now.
func (f benchFleet) ensure(ctx context.Context, b *testing.B, s *Store) error {
	want := f.minutes(f.from(), f.to()) * f.rowsPerMinute()
	have, err := s.countRaw(ctx, f.from(), f.to())
	if err != nil {
		return err
	}
	switch {
	case have == want:
		b.Logf("reusing %d ledger rows of %d GPUs in database %s", have, f.gpus, s.db)
		return nil
	case have != 0:
		return fmt.Errorf("database %s holds %d raw rows in [%s, %s), want 0 or %d: drop it (DROP DATABASE %s) and run again",
			s.db, have, f.from().Format(time.RFC3339), f.to().Format(time.RFC3339), want, s.db)
	}
	began := time.Now()
	if err := f.generate(ctx, s); err != nil {
		return err
	}
	// What Append does after a write: rollups know these hours changed.
	if err := s.mark(ctx, f.hours()); err != nil {
		return err
	}
	if err := s.Append(ctx, nil, f.findings()); err != nil {
		return err
	}
	gen := time.Since(began)
	began = time.Now()
	parts, err := s.mergeMonth(ctx)
	if err != nil {
		return err
	}
	b.Logf("generated %d ledger rows of %d GPUs in database %s in %s; merged to %d parts in %s",
		want, f.gpus, s.db, gen.Round(time.Second), parts, time.Since(began).Round(time.Second))
	return nil
}

// generate inserts the rows server-side, six hours per INSERT ... SELECT
// and two at a time (the server sorts each insert on one core). A day per
// insert passed the client's 5-minute read timeout at 10,000 GPUs on a
// loaded machine.
func (f benchFleet) generate(ctx context.Context, s *Store) error {
	const chunk = 6 * 60
	work := make(chan int)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range work {
				n := min(chunk, benchMinutes-lo)
				if err := s.conn.Exec(ctx, f.insertSQL(s, lo, n)); err != nil {
					errs <- fmt.Errorf("cannot generate ledger minutes %d-%d: %w", lo, lo+n, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for lo := 0; lo < benchMinutes; lo += chunk {
		select {
		case work <- lo:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// insertSQL generates n minutes of rows from minute lo of the fleet. Row
// values are functions of (minute, GPU, slot) only, so the fleet is the
// same on every run. Used seconds are multiples of 1/64 below 60, so sums
// are exact in any order.
func (f benchFleet) insertSQL(s *Store, lo, n int) string {
	return strings.NewReplacer(
		"{table}", s.table(tableRows),
		"{columns}", strings.Join(rowInsertColumns, ", "),
		"{start}", fmt.Sprint(benchStart.Unix()),
		"{lo}", fmt.Sprint(lo),
		"{gpus}", fmt.Sprint(f.gpus),
		"{n}", fmt.Sprint(n*f.gpus),
	).Replace(benchInsertSQL)
}

const benchInsertSQL = `INSERT INTO {table} ({columns})
SELECT
	toDateTime({start} + mm * 60), toUInt32(0), toDateTime({start} + mm * 60 + 60), toUInt32(0),
	concat('node-', substring(toString(1000 + intDiv(g, 8)), 2)) AS node,
	concat('GPU-', lower(hex(intHash64(g)))) AS uuid,
	multiIf(g % 25 < 15, 'A100-SXM4-80GB', g % 25 < 24, 'H100-SXM5-80GB', 'L40S'),
	if(kind = 'container' AND shared, concat(uuid, '::', toString(slot)), uuid),
	if(shared, 'timeslicing', 'exclusive'),
	multiIf(shared AND slot = 2, 'idle', NOT shared AND (g * 7 + d * 3) % 10 = 0, 'unallocated', 'container') AS kind,
	if(kind = 'container', concat('ns-', toString(t)), ''),
	if(kind = 'container', concat('pod-', toString(t), '-', toString(g), '-', toString(slot)), ''),
	if(kind = 'container', concat('uid-', toString(g), '-', toString(d), '-', toString(slot)), ''),
	if(kind = 'container', 'main', ''),
	if(kind = 'container', concat('team-', toString(t % 20)), ''),
	'',
	multiIf(kind = 'idle', 0., shared, 30., 60.),
	multiIf(kind = 'unallocated', 0., kind = 'idle', 60 - u0 - u1, shared AND slot = 1, u1, shared, u0, ue) AS used,
	if(kind = 'container', 60. * 1024 * ((g + t) % 80 + 1), 0.),
	50 + used * 5,
	'measured', toUInt64(1), 'default'
FROM (
	SELECT
		{lo} + intDiv(number, {gpus}) AS mm, intDiv(mm, 1440) AS d, number % {gpus} AS g,
		g % 25 >= 23 AS shared,
		arrayJoin(if(shared, [0, 1, 2], [0])) AS slot,
		intHash32(g * 1000 + d * 10 + slot) % 100 AS t,
		((g * 7919 + mm * 104729) % 3841) / 64 AS ue,
		((g * 7919 + mm * 104729) % 1921) / 64 AS u0,
		((g * 7919 + mm * 104729 + 65537) % 1921) / 64 AS u1
	FROM numbers({n})
)`

// findings are a few hundred idle-allocation episodes over the month, so
// the report's findings query has something to read.
func (f benchFleet) findings() []attribution.Finding {
	var out []attribution.Finding
	for i := 0; i < 300; i++ {
		start := benchStart.Add(time.Duration(i) * 2 * time.Hour)
		out = append(out, attribution.Finding{
			Start: start, End: start.Add(90 * time.Minute), Kind: attribution.FindingIdleAllocation,
			Node: fmt.Sprintf("node-%03d", i%(f.gpus/8)), GPUUUID: fmt.Sprintf("GPU-bench-%d", i),
			Namespace: fmt.Sprintf("ns-%d", i%100), Pod: fmt.Sprintf("notebook-%d", i), Container: "main",
			Team: fmt.Sprintf("team-%d", i%20), Detail: "used/allocated 0.02 over 1h",
		})
	}
	return out
}

// countRaw counts stored raw rows (duplicates included) in [from, to).
func (s *Store) countRaw(ctx context.Context, from, to time.Time) (int64, error) {
	var n uint64
	q := fmt.Sprintf("SELECT count() FROM %s WHERE interval_start >= %s AND interval_start < %s",
		s.table(tableRows), dt(from.Unix()), dt(to.Unix()))
	err := s.query(ctx, "count raw rows", q, func(rs driver.Rows) error { return rs.Scan(&n) })
	return int64(n), err
}

// mergeMonth merges each partition of the raw table to one part, the
// state background merges leave a closed month in, and returns the number
// of active parts. OPTIMIZE does nothing while another merge holds the
// parts, so it is repeated until the parts are gone.
func (s *Store) mergeMonth(ctx context.Context) (int, error) {
	var parts int
	for attempt := 0; attempt < 60; attempt++ {
		if err := s.conn.Exec(ctx, "OPTIMIZE TABLE "+s.table(tableRows)+" PARTITION 202603 FINAL"); err != nil {
			return 0, fmt.Errorf("cannot merge raw rows of March: %w", err)
		}
		if err := s.conn.Exec(ctx, "OPTIMIZE TABLE "+s.table(tableRows)+" PARTITION 202604 FINAL"); err != nil {
			return 0, fmt.Errorf("cannot merge raw rows of April: %w", err)
		}
		var n uint64
		q := fmt.Sprintf("SELECT count() FROM system.parts WHERE database = '%s' AND table = '%s' AND active", s.db, tableRows)
		if err := s.query(ctx, "count parts", q, func(rs driver.Rows) error { return rs.Scan(&n) }); err != nil {
			return 0, err
		}
		if parts = int(n); parts <= 2 {
			return parts, nil
		}
		time.Sleep(2 * time.Second)
	}
	return parts, nil
}
