package ledger

import (
	"context"
	"fmt"
	"math"
	"time"
)

// coverageSpansSQL is each GPU's first start and last end in [?1, ?2).
const coverageSpansSQL = `SELECT node, gpu_uuid, min(interval_start_ns), max(interval_end_ns)
FROM ledger_rows WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY node, gpu_uuid ORDER BY node, gpu_uuid`

// coverageHolesSQL finds the holes in SQLite: the GPU's distinct
// intervals (the longest end of each start), and where one starts after
// the latest end of all before it (a window over the GPU's intervals in
// start order), the stretch between is a hole. Only holes come back, at
// most ?3 of them.
const coverageHolesSQL = `WITH iv AS (
	SELECT node, gpu_uuid, interval_start_ns AS s, max(interval_end_ns) AS e
	FROM ledger_rows WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
	GROUP BY interval_start_ns, node, gpu_uuid
), w AS (
	SELECT node, gpu_uuid, s, max(e) OVER (PARTITION BY node, gpu_uuid ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev
	FROM iv
)
SELECT node, gpu_uuid, prev, s FROM w WHERE prev < s ORDER BY node, gpu_uuid, s LIMIT ?3`

// Coverage implements CoverageReader on the file's rows.
func (s *FileStore) Coverage(ctx context.Context, from, to time.Time) (Coverage, error) {
	fail := func(err error) (Coverage, error) {
		return Coverage{}, fmt.Errorf("cannot read the ledger's coverage in %s: %w", s.path, s.describe(err))
	}
	lo, hi := nsBound(from, math.MinInt64), nsBound(to, math.MaxInt64)
	var out Coverage
	index := map[[2]string]int{}
	rs, err := s.r.QueryContext(ctx, coverageSpansSQL, lo, hi)
	if err != nil {
		return fail(err)
	}
	defer rs.Close()
	for rs.Next() {
		var d DeviceCoverage
		var first, last int64
		if err := rs.Scan(&d.Node, &d.GPUUUID, &first, &last); err != nil {
			return fail(err)
		}
		d.First, d.Last = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
		index[[2]string{d.Node, d.GPUUUID}] = len(out.Devices)
		out.Devices = append(out.Devices, d)
	}
	if err := rs.Err(); err != nil {
		return fail(err)
	}
	rs.Close()
	hs, err := s.r.QueryContext(ctx, coverageHolesSQL, lo, hi, MaxCoverageHoles+1)
	if err != nil {
		return fail(err)
	}
	defer hs.Close()
	n := 0
	for hs.Next() {
		var node, gpu string
		var a, b int64
		if err := hs.Scan(&node, &gpu, &a, &b); err != nil {
			return fail(err)
		}
		if n++; n > MaxCoverageHoles {
			out.Truncated = true
			break
		}
		i, ok := index[[2]string{node, gpu}]
		if !ok {
			continue // rows written between the two queries
		}
		out.Devices[i].Holes = append(out.Devices[i].Holes, Hole{From: time.Unix(0, a).UTC(), To: time.Unix(0, b).UTC()})
	}
	if err := hs.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}

var _ CoverageReader = (*FileStore)(nil)
