package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

const selectRowColumns = `interval_start, interval_start_ns, interval_end, interval_end_ns,
	node, gpu_uuid, gpu_model, slice_id, sharing_mode, kind, namespace, pod, pod_uid, container, team,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, method, mig_profile, cluster`

const selectFindingColumns = `start_time, start_ns, end_time, end_ns, kind, node, gpu_uuid,
	namespace, pod, container, team, detail, noisy_pod, cluster`

var _ ledger.RowReader = (*Store)(nil)

// Rows streams the deduplicated rows whose interval starts in [from, to) in
// key order. A zero from or to is open-ended. The range is read as a cursor
// of hour-aligned chunks of at most Options.RowsChunk rows, so neither the
// server's sort nor this process's memory grows with the range.
func (s *Store) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	return s.inChunks(ctx, from, to, s.rowsIn, fn)
}

type timeRange struct{ from, to time.Time }

// rowChunks splits [from, to) at hour boundaries into ranges of about
// RowsChunk stored rows (duplicates not yet merged included), skipping
// empty hours.
func (s *Store) rowChunks(ctx context.Context, from, to time.Time) ([]timeRange, error) {
	return s.rowChunksOf(ctx, from, to, s.opts.RowsChunk)
}

// rowChunksOf is rowChunks with chunks of about limit rows.
func (s *Store) rowChunksOf(ctx context.Context, from, to time.Time, limit int) ([]timeRange, error) {
	q := fmt.Sprintf(`SELECT toUInt32(intDiv(toUInt32(interval_start), 3600) * 3600) AS h, count()
FROM %s WHERE %s GROUP BY h ORDER BY h`,
		s.table(tableRows), rawRange(from, to))
	var out []timeRange
	var acc uint64
	err := s.query(ctx, "count ledger rows per hour", q, func(rs driver.Rows) error {
		var h uint32
		var n uint64
		if err := rs.Scan(&h, &n); err != nil {
			return scanError{err}
		}
		start := time.Unix(int64(h), 0).UTC()
		end := start.Add(time.Hour)
		if len(out) > 0 && out[len(out)-1].to.Equal(start) && acc+n <= uint64(limit) {
			out[len(out)-1].to = end
			acc += n
			return nil
		}
		out = append(out, timeRange{start, end})
		acc = n
		return nil
	})
	return out, err
}

func (s *Store) rowsIn(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	q := fmt.Sprintf(`SELECT %s FROM %s FINAL WHERE %s
ORDER BY interval_start, interval_start_ns, cluster, node, gpu_uuid, slice_id, pod_uid, container, kind`,
		selectRowColumns, s.table(tableRows), rawRange(from, to))
	return s.query(ctx, "read ledger rows", q, func(rs driver.Rows) error {
		var (
			r          attribution.Row
			start, end time.Time
			sNs, eNs   uint32
			kind       string
		)
		if err := rs.Scan(&start, &sNs, &end, &eNs,
			&r.Node, &r.GPUUUID, &r.GPUModel, &r.SliceID, &r.SharingMode, &kind,
			&r.Namespace, &r.Pod, &r.PodUID, &r.Container, &r.Team,
			&r.AllocatedGPUSeconds, &r.UsedGPUSeconds, &r.MemoryMiBSeconds, &r.EnergyJoules, &r.Method, &r.MIGProfile, &r.Cluster); err != nil {
			return scanError{err}
		}
		r.IntervalStart, r.IntervalEnd, r.Kind = joinTime(start, sNs), joinTime(end, eNs), attribution.Kind(kind)
		return fn(r)
	})
}

// Findings streams the deduplicated findings that overlap [from, to) (an
// instantaneous finding counts when it lies in the range), ordered by start.
func (s *Store) Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	from, to = openBounds(from, to)
	q := fmt.Sprintf(`SELECT %s FROM %s FINAL
WHERE %s AND (%s OR %s)
ORDER BY start_time, start_ns, kind, cluster, node, gpu_uuid, namespace, pod, container`,
		selectFindingColumns, s.table(tableFindings),
		timeLT("start_time", "start_ns", to), timeGT("end_time", "end_ns", from), timeGE("start_time", "start_ns", from))
	return s.query(ctx, "read findings", q, func(rs driver.Rows) error {
		var (
			f          attribution.Finding
			start, end time.Time
			sNs, eNs   uint32
		)
		if err := rs.Scan(&start, &sNs, &end, &eNs, &f.Kind, &f.Node, &f.GPUUUID,
			&f.Namespace, &f.Pod, &f.Container, &f.Team, &f.Detail, &f.NoisyPod, &f.Cluster); err != nil {
			return scanError{err}
		}
		f.Start, f.End = joinTime(start, sNs), joinTime(end, eNs)
		return fn(f)
	})
}

// scanError is a failure to decode a result row. Any other error from a
// row callback is the caller's and goes back unchanged.
type scanError struct{ err error }

func (e scanError) Error() string { return e.err.Error() }
func (e scanError) Unwrap() error { return e.err }

// query runs q and calls each for every result row. Opening the query is
// retried; once rows have been handed out an error ends the call, since a
// retry would hand them out twice.
func (s *Store) query(ctx context.Context, what, q string, each func(driver.Rows) error) error {
	var rs driver.Rows
	err := s.retry(ctx, what, func(ctx context.Context) error {
		var err error
		rs, err = s.conn.Query(ctx, q)
		return err
	})
	if err != nil {
		return s.describe(fmt.Sprintf("cannot %s on %s", what, s.addr), err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := each(rs); err != nil {
			if _, ok := err.(scanError); ok {
				return s.describe(fmt.Sprintf("cannot %s on %s", what, s.addr), err)
			}
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return s.describe(fmt.Sprintf("cannot %s on %s", what, s.addr), err)
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
