package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"golang.org/x/sync/errgroup"
)

// Rollup grains, stored in the builds and coverage tables.
const (
	grainHour = "h"
	grainDay  = "d"
)

// period is one rollup period: a UTC hour or day, by its unix start.
type period struct {
	grain string
	start int64
}

func (p period) length() int64 {
	if p.grain == grainDay {
		return 86400
	}
	return 3600
}

func (p period) hours() []int64 {
	out := make([]int64, 0, p.length()/3600)
	for h := p.start; h < p.start+p.length(); h += 3600 {
		out = append(out, h)
	}
	return out
}

func (p period) table() string {
	if p.grain == grainDay {
		return tableDaily
	}
	return tableHourly
}

// covTable is the period's coverage rollup.
func (p period) covTable() string {
	if p.grain == grainDay {
		return tableCovDaily
	}
	return tableCovHourly
}

// devTable is the period's per-device rollup.
func (p period) devTable() string {
	if p.grain == grainDay {
		return tableDevDaily
	}
	return tableDevHourly
}

func (p period) column() string {
	if p.grain == grainDay {
		return "day"
	}
	return "hour"
}

// header is a period's newest build: written last, so its rows and
// coverage are in place once it is visible.
type header struct {
	version, build, groups uint64
	// devices counts the build's coverage rows (hourly builds); -1 for a
	// build that wrote none (daily builds, and builds before migration 9).
	devices int64
	// deviceGroups counts the build's per-device rollup rows; -1 for a
	// build that wrote none (builds before migration 10, and a day whose
	// hours' per-device rows were not all visible when it was built).
	deviceGroups int64
}

type hourWriter struct {
	hour   int64
	writer string
}

type covered struct {
	build, maxSeq uint64
}

// rollupState is what the server knows about the rollups of a range.
type rollupState struct {
	headers  map[period]header
	coverage map[period]map[hourWriter]covered
	marks    map[int64]map[string]uint64 // hour -> writer -> highest seq
}

// clean returns p's newest build when that build covers every mark written
// for p's hours, i.e. every completed Append that touched them.
func (st *rollupState) clean(p period) (header, bool) {
	h, ok := st.headers[p]
	if !ok {
		return header{}, false
	}
	cov := st.coverage[p]
	for _, hour := range p.hours() {
		for w, seq := range st.marks[hour] {
			c, ok := cov[hourWriter{hour, w}]
			if !ok || c.build != h.build || c.maxSeq < seq {
				return header{}, false
			}
		}
	}
	return h, true
}

func (st *rollupState) hasMarks(p period) bool {
	for _, h := range p.hours() {
		if len(st.marks[h]) > 0 {
			return true
		}
	}
	return false
}

// loadState reads headers, coverage and marks of the periods starting in
// [from, to) (unix seconds), the three at once (a report asks for its
// range's state four times; one after the other they took 12-15 ms).
// Reads racing a build or an Append can only make a period look stale,
// never clean wrongly: clean needs the header's build in every coverage
// row and every mark seen at or below the coverage's sequence, so a torn
// read (a new header with old coverage, or the reverse) fails the check
// and the period is read from a finer source; a mark written after its
// read is a row written after this snapshot, as one written after the
// whole read would be.
func (s *Store) loadState(ctx context.Context, from, to int64) (*rollupState, error) {
	st := &rollupState{
		headers:  map[period]header{},
		coverage: map[period]map[hourWriter]covered{},
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT grain, toUInt32(period), max(version), argMax(build, version), argMax(groups, version), argMax(coverage_devices, version), argMax(device_groups, version)
FROM %s WHERE period >= %s AND period < %s GROUP BY grain, period`, s.table(tableBuilds), dt(from), dt(to))
		return s.query(gctx, "read rollup builds", q, func(rs driver.Rows) error {
			var p period
			var start uint32
			var h header
			if err := rs.Scan(&p.grain, &start, &h.version, &h.build, &h.groups, &h.devices, &h.deviceGroups); err != nil {
				return scanError{err}
			}
			p.start = int64(start)
			st.headers[p] = h
			return nil
		})
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT grain, toUInt32(period), toUInt32(hour), writer, argMax(build, version), argMax(max_seq, version)
FROM %s WHERE period >= %s AND period < %s GROUP BY grain, period, hour, writer`, s.table(tableCoverage), dt(from), dt(to))
		return s.query(gctx, "read rollup coverage", q, func(rs driver.Rows) error {
			var p period
			var start, hour uint32
			var w string
			var c covered
			if err := rs.Scan(&p.grain, &start, &hour, &w, &c.build, &c.maxSeq); err != nil {
				return scanError{err}
			}
			p.start = int64(start)
			if st.coverage[p] == nil {
				st.coverage[p] = map[hourWriter]covered{}
			}
			st.coverage[p][hourWriter{int64(hour), w}] = c
			return nil
		})
	})
	g.Go(func() (err error) {
		st.marks, err = s.readMarks(gctx, from, to)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return st, nil
}

// readMarks returns the highest mark of every writer per hour in [from, to).
func (s *Store) readMarks(ctx context.Context, from, to int64) (map[int64]map[string]uint64, error) {
	out := map[int64]map[string]uint64{}
	q := fmt.Sprintf(`SELECT toUInt32(hour), writer, max(seq) FROM %s WHERE hour >= %s AND hour < %s GROUP BY hour, writer`,
		s.table(tableMarks), dt(from), dt(to))
	err := s.query(ctx, "read rollup marks", q, func(rs driver.Rows) error {
		var hour uint32
		var w string
		var seq uint64
		if err := rs.Scan(&hour, &w, &seq); err != nil {
			return scanError{err}
		}
		if out[int64(hour)] == nil {
			out[int64(hour)] = map[string]uint64{}
		}
		out[int64(hour)][w] = seq
		return nil
	})
	return out, err
}

// group is one rollup row: the sums of one (cluster, team, namespace,
// model, mode, kind) over a period.
type group struct {
	key groupKey
	sums
}

// sums are the totals of some rows.
type sums struct {
	alloc, used, mem, energy float64
	rows                     uint64
}

type groupKey struct {
	team, namespace, model, mode, kind string
	cluster                            string
}

// StaleHours counts the UTC hours overlapping [from, to) whose rollups have
// not seen every write (each is read from raw rows, FINAL, until rebuilt),
// or whose build has no coverage rollup (built before migration 9: its
// coverage is searched in raw rows until rebuilt) or no per-device rollup
// (before migration 10: its finer groupings read raw rows until rebuilt):
// serve asks it before building a month, to rebuild first where many are.
// It reads only the rollups' bookkeeping, never a raw row.
func (s *Store) StaleHours(ctx context.Context, from, to time.Time) (int, error) {
	if !from.Before(to) {
		return 0, nil
	}
	st, err := s.loadState(ctx, floorUnix(from, 86400), ceilUnix(to, 86400))
	if err != nil {
		return 0, fmt.Errorf("cannot count stale rollup hours: %w", err)
	}
	return len(st.staleHours(from, to)), nil
}

// staleHours are the unix starts of the UTC hours overlapping [from, to)
// that have writes their newest build has not seen or whose newest build
// has no coverage or per-device rollup.
func (st *rollupState) staleHours(from, to time.Time) []int64 {
	var out []int64
	for h := floorUnix(from, 3600); h < ceilUnix(to, 3600); h += 3600 {
		p := period{grainHour, h}
		if hd, clean := st.clean(p); st.hasMarks(p) && (!clean || hd.devices < 0 || hd.deviceGroups < 0) {
			out = append(out, h)
		}
	}
	return out
}
