package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

// coverageSQL finds each GPU's holes in one chunk of time in the server:
// the GPU's intervals in nanoseconds sorted by (start, end), and a hole
// wherever an interval starts after the one before it in that order ended.
// Of several intervals with one start the longest comes last, so the next
// start is compared with the longest end of the start before it. 18.16 has
// no window functions, so the comparison is with the previous interval, not
// with the latest end of all earlier ones: a GPU's intervals come from one
// collector at a time and do not overlap, and where they did (an interval
// inside a longer one) a hole could be declared that the file ledger would
// not declare; a declared hole is never billed.
//
// The ends and the starts are paired as two arrays: a lambda that indexes
// the array of intervals captures it whole for every element, which is
// quadratic (one day of a 10,000-GPU fleet asked for 258 GiB). Only each
// GPU's first start, last end, the end of its last interval (to join the
// chunks) and its holes come back.
const coverageSQL = `SELECT cluster, node, gpu_uuid, tupleElement((arraySort(groupArray((s, e))) AS iv)[1], 1) AS first_ns, max(e) AS last_ns,
	tupleElement(iv[-1], 2) AS tail_ns,
	arrayFilter(h -> h.1 < h.2, arrayMap((a, b) -> (a, b), arrayPopBack(arrayMap(x -> x.2, iv)), arrayPopFront(arrayMap(x -> x.1, iv)))) AS holes
FROM (
	SELECT cluster, node, gpu_uuid, toUInt64(interval_start) * 1000000000 + interval_start_ns AS s,
		toUInt64(interval_end) * 1000000000 + interval_end_ns AS e
	FROM %s WHERE %s
)
GROUP BY cluster, node, gpu_uuid`

// Coverage implements ledger.CoverageReader in the server, a chunk of about
// Options.CoverageChunk stored rows at a time (hour-aligned, in time
// order): a GPU's holes between two chunks are where its first interval of
// the later chunk starts after its last of the earlier one ended.
func (s *Store) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	from, to = openBounds(from, to)
	if !from.Before(to) {
		return ledger.Coverage{}, nil
	}
	chunks, err := s.rowChunksOf(ctx, from, to, s.opts.CoverageChunk)
	if err != nil {
		return ledger.Coverage{}, fmt.Errorf("cannot read the ledger's coverage: %w", err)
	}
	devs := map[[3]string]*coveredDevice{}
	ns := func(v uint64) time.Time { return time.Unix(0, int64(v)).UTC() }
	var out ledger.Coverage
	held := 0
	for _, c := range chunks {
		q := fmt.Sprintf(coverageSQL, s.table(tableRows), rawRange(maxTime(from, c.from), minTime(to, c.to)))
		err := s.query(ctx, "read the ledger's coverage", q, func(rs driver.Rows) error {
			var (
				cluster, node, gpu string
				first, last, tail  uint64
				holes              [][]any
			)
			if err := rs.Scan(&cluster, &node, &gpu, &first, &last, &tail, &holes); err != nil {
				return scanError{err}
			}
			k := [3]string{cluster, node, gpu}
			d := devs[k]
			if d == nil {
				d = &coveredDevice{DeviceCoverage: ledger.DeviceCoverage{Cluster: cluster, Node: node, GPUUUID: gpu, First: ns(first), Last: ns(last)}}
				devs[k] = d
			} else {
				if d.tail.Before(ns(first)) {
					d.Holes = append(d.Holes, ledger.Hole{From: d.tail, To: ns(first)})
					held++
				}
				d.Last = maxTime(d.Last, ns(last))
			}
			d.tail = ns(tail)
			for _, h := range holes {
				a, _ := h[0].(uint64)
				b, _ := h[1].(uint64)
				d.Holes = append(d.Holes, ledger.Hole{From: ns(a), To: ns(b)})
				held++
			}
			return nil
		})
		if err != nil {
			return ledger.Coverage{}, fmt.Errorf("cannot read the ledger's coverage: %w", err)
		}
		if held > 2*ledger.MaxCoverageHoles {
			// Keep memory bounded: holes past the first MaxCoverageHoles
			// (by cluster, node, GPU, time) now stay past them, whatever comes.
			held = trimHoles(devs)
			out.Truncated = true
		}
	}
	n := 0
	for _, k := range sortedDevices(devs) {
		d := devs[k].DeviceCoverage
		if n+len(d.Holes) > ledger.MaxCoverageHoles {
			d.Holes = d.Holes[:ledger.MaxCoverageHoles-n]
			out.Truncated = true
		}
		n += len(d.Holes)
		out.Devices = append(out.Devices, d)
	}
	return out, nil
}

// coveredDevice is a GPU's coverage so far, and the end of its last
// interval (by start) to compare the next chunk's first with.
type coveredDevice struct {
	ledger.DeviceCoverage
	tail time.Time
}

// sortedDevices are the keys of devs by cluster, node, then GPU.
func sortedDevices(devs map[[3]string]*coveredDevice) [][3]string {
	keys := make([][3]string, 0, len(devs))
	for k := range devs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [3]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
	})
	return keys
}

// trimHoles keeps the first MaxCoverageHoles holes of devs by cluster, node, GPU
// and time, dropping the rest, and returns how many are kept.
func trimHoles(devs map[[3]string]*coveredDevice) int {
	n := 0
	for _, k := range sortedDevices(devs) {
		d := devs[k]
		keep := min(len(d.Holes), ledger.MaxCoverageHoles-n)
		d.Holes = slices.Clip(d.Holes[:keep])
		n += keep
	}
	return n
}

var _ ledger.CoverageReader = (*Store)(nil)
