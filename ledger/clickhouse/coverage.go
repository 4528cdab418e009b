package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

// coverageSQL finds each GPU's holes in the server: the GPU's distinct
// intervals in nanoseconds (the longest end of each start), sorted by
// start; a hole is where an interval starts after the one before it ended.
// 18.16 has no window functions, so the comparison is with the previous
// interval, not with the latest end of all earlier ones: a GPU's intervals
// come from one collector at a time and do not overlap, and where they
// did (an interval inside a longer one) a hole could be declared that the
// file ledger would not declare; a declared hole is never billed.
// Only the holes and each GPU's bounds come back, never its intervals.
const coverageSQL = `SELECT cluster, node, gpu_uuid, min(s) AS first_ns, max(e) AS last_ns,
	arrayFilter(h -> h.1 < h.2, arrayMap(i -> (iv[i - 1].2, iv[i].1), arraySlice(arrayEnumerate(arraySort(groupArray((s, e))) AS iv), 2))) AS holes
FROM (
	SELECT cluster, node, gpu_uuid, toUInt64(interval_start) * 1000000000 + interval_start_ns AS s,
		max(toUInt64(interval_end) * 1000000000 + interval_end_ns) AS e
	FROM %s WHERE %s
	GROUP BY cluster, node, gpu_uuid, s
)
GROUP BY cluster, node, gpu_uuid
ORDER BY cluster, node, gpu_uuid`

// Coverage implements ledger.CoverageReader in the server.
func (s *Store) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	from, to = openBounds(from, to)
	q := fmt.Sprintf(coverageSQL, s.table(tableRows), rawRange(from, to))
	var out ledger.Coverage
	n := 0
	ns := func(v uint64) time.Time { return time.Unix(0, int64(v)).UTC() }
	err := s.query(ctx, "read the ledger's coverage", q, func(rs driver.Rows) error {
		var (
			d           ledger.DeviceCoverage
			first, last uint64
			holes       [][]any
		)
		if err := rs.Scan(&d.Cluster, &d.Node, &d.GPUUUID, &first, &last, &holes); err != nil {
			return scanError{err}
		}
		d.First, d.Last = ns(first), ns(last)
		for _, h := range holes {
			if n++; n > ledger.MaxCoverageHoles {
				out.Truncated = true
				break
			}
			a, _ := h[0].(uint64)
			b, _ := h[1].(uint64)
			d.Holes = append(d.Holes, ledger.Hole{From: ns(a), To: ns(b)})
		}
		out.Devices = append(out.Devices, d)
		return nil
	})
	if err != nil {
		return ledger.Coverage{}, fmt.Errorf("cannot read the ledger's coverage: %w", err)
	}
	return out, nil
}

var _ ledger.CoverageReader = (*Store)(nil)
