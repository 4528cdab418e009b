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
const coverageSQL = `SELECT %[1]scluster, node, gpu_uuid, tupleElement((arraySort(groupArray((s, e))) AS iv)[1], 1) AS first_ns, max(e) AS last_ns,
	tupleElement(iv[-1], 2) AS tail_ns,
	arrayFilter(h -> h.1 < h.2, arrayMap((a, b) -> (a, b), arrayPopBack(arrayMap(x -> x.2, iv)), arrayPopFront(arrayMap(x -> x.1, iv)))) AS holes
FROM (
	SELECT %[2]scluster, node, gpu_uuid, toUInt64(interval_start) * 1000000000 + interval_start_ns AS s,
		toUInt64(interval_end) * 1000000000 + interval_end_ns AS e
	FROM %[3]s WHERE %[4]s
)
GROUP BY %[1]scluster, node, gpu_uuid`

// coverageChunkSQL is coverageSQL over one chunk of raw rows.
func coverageChunkSQL(table, where string) string {
	return fmt.Sprintf(coverageSQL, "", "", table, where)
}

// coverageHourSQL is coverageSQL per UTC hour of interval_start: the rows
// of the coverage rollup (ledger_coverage_hourly).
func coverageHourSQL(table, where string) string {
	return fmt.Sprintf(coverageSQL, "hr, ", "toUInt32(intDiv(toUInt32(interval_start), 3600) * 3600) AS hr, ", table, where)
}

// coverageRollupSQL joins the periods (hours or days: column %[1]s) of a
// coverage rollup per GPU in the server, as Coverage joins chunks: the
// first start of its first period, the last end of all, the tail of its
// last period, and its holes, those inside periods and one wherever a
// period's first start is after the tail of the GPU's period before. Holes
// sort by (from, to) into time order, the order the raw search gives. A
// retried insert can leave a build's row twice until a merge: the periods
// and the holes are gathered as sets (a GPU's holes never repeat), and
// hours counts the GPU's distinct periods, which summed over GPUs must be
// the builds' coverage_devices summed. Only one row per GPU comes back,
// never one per period; the periods are not grouped first (grouping a
// 1,000-GPU month's 744,000 hourly rows by their strings took twice as
// long).
const coverageRollupSQL = `SELECT cluster, node, gpu_uuid,
	tupleElement((arraySort(groupUniqArray((toUInt32(%[1]s), first_ns, tail_ns))) AS hs)[1], 2) AS first, max(last_ns) AS last,
	tupleElement(hs[-1], 3) AS tail,
	arraySort(arrayConcat(
		arrayFilter(x -> x.1 < x.2, arrayMap((a, b) -> (a, b), arrayPopBack(arrayMap(x -> x.3, hs)), arrayPopFront(arrayMap(x -> x.2, hs)))),
		groupUniqArrayArray(arrayMap((a, b) -> (a, b), hole_from, hole_to)))) AS holes,
	length(hs) AS hours
FROM %[2]s WHERE %[1]s >= %[3]s AND %[1]s < %[4]s%[5]s
GROUP BY cluster, node, gpu_uuid`

// coverageCountSQL counts the GPUs of each period's build that are
// visible, to find the periods whose rows coverageRollupSQL did not all see.
const coverageCountSQL = `SELECT h, count() FROM (
	SELECT DISTINCT toUInt32(%[1]s) AS h, cluster, node, gpu_uuid FROM %[2]s WHERE %[1]s >= %[3]s AND %[1]s < %[4]s%[5]s
) GROUP BY h`

// coveragePart is a piece of a coverage search in time order: raw rows
// in [from, to), or a coverage rollup's builds of the periods in it.
type coveragePart struct {
	from, to time.Time
	grain    string           // of the rollup: grainHour or grainDay
	builds   map[int64]header // by period start; nil: raw rows
}

// Coverage implements ledger.CoverageReader in the server. Whole UTC days,
// then whole UTC hours, whose rollup build is current and has its coverage
// rows visible are read from the coverage rollups (ledger_coverage_daily,
// ledger_coverage_hourly), joined per GPU in the server; the rest (stale
// hours, the partial hours at the period's edges) are searched in raw
// rows, a chunk of about Options.CoverageChunk stored rows at a time
// (hour-aligned, in time order). A GPU's holes between two
// parts are where its first interval of the later part starts after its
// last of the earlier one ended.
func (s *Store) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	from, to = openBounds(from, to)
	if !from.Before(to) {
		return ledger.Coverage{}, nil
	}
	cov, err := s.coverage(ctx, from, to)
	if err != nil {
		return ledger.Coverage{}, fmt.Errorf("cannot read the ledger's coverage: %w", err)
	}
	return cov, nil
}

// maxCoverageTries bounds the rereads when a build's coverage rows turn out
// not all visible (a rebuild under way); the last try reads raw rows only.
const maxCoverageTries = 3

func (s *Store) coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	skip := map[period]bool{} // periods not to read from their rollup
	for try := 1; ; try++ {
		var parts []coveragePart
		if try < maxCoverageTries {
			var err error
			if parts, err = s.coverageParts(ctx, from, to, skip); err != nil {
				return ledger.Coverage{}, err
			}
		} else {
			parts = []coveragePart{{from: from, to: to}}
		}
		cov, torn, err := s.coverageOf(ctx, parts)
		if err != nil || len(torn) == 0 {
			return cov, err
		}
		for _, p := range torn {
			skip[p] = true
		}
	}
}

// coverageParts splits [from, to) into raw parts and rollup parts: the
// whole UTC days, then the whole hours, with a clean build that has
// coverage rows, and the hours without writes between them.
func (s *Store) coverageParts(ctx context.Context, from, to time.Time, skip map[period]bool) ([]coveragePart, error) {
	lo, hi := ceilUnix(from, 3600), floorUnix(to, 3600)
	if lo >= hi {
		return []coveragePart{{from: from, to: to}}, nil
	}
	st, err := s.loadState(ctx, floorUnix(from, 86400), ceilUnix(to, 86400))
	if err != nil {
		return nil, err
	}
	var parts []coveragePart
	// add appends [start, end) read from grain's rollup under h, or from
	// raw rows (grain ""); a rollup period without writes (h zero) joins
	// any rollup part.
	add := func(start, end time.Time, grain string, h header) {
		if !start.Before(end) {
			return
		}
		n := len(parts)
		last := coveragePart{}
		if n > 0 && parts[n-1].to.Equal(start) {
			last = parts[n-1]
		}
		switch {
		case grain == "" && last.to.Equal(start) && last.builds == nil:
			parts[n-1].to = end
		case grain != "" && h.build == 0 && last.builds != nil:
			parts[n-1].to = end
		case grain != "" && last.builds != nil && last.grain == grain && len(last.builds) < maxBuildFilter:
			parts[n-1].to = end
			parts[n-1].builds[start.Unix()] = h
		case grain == "":
			parts = append(parts, coveragePart{from: start, to: end})
		default:
			parts = append(parts, coveragePart{from: start, to: end, grain: grain, builds: map[int64]header{}})
			if h.build != 0 {
				parts[n].builds[start.Unix()] = h
			}
		}
	}
	// rollup says whether p reads from its coverage rollup, and under
	// which build (zero: p has no writes).
	rollup := func(p period) (header, bool) {
		if !st.hasMarks(p) {
			return header{}, true
		}
		hd, clean := st.clean(p)
		return hd, clean && hd.devices >= 0 && !skip[p]
	}
	add(from, time.Unix(lo, 0).UTC(), "", header{})
	for h := lo; h < hi; {
		if d := (period{grainDay, h}); h%86400 == 0 && h+86400 <= hi {
			if hd, ok := rollup(d); ok {
				add(time.Unix(h, 0).UTC(), time.Unix(h+86400, 0).UTC(), grainDay, hd)
				h += 86400
				continue
			}
		}
		start, end := time.Unix(h, 0).UTC(), time.Unix(h+3600, 0).UTC()
		if hd, ok := rollup(period{grainHour, h}); ok {
			add(start, end, grainHour, hd)
		} else {
			add(start, end, "", header{})
		}
		h += 3600
	}
	add(time.Unix(hi, 0).UTC(), to, "", header{})
	return parts, nil
}

// coverageQueries bounds the rollup parts of a coverage read fetched at
// once: a Los Angeles month is three (its first UTC day's hours, the
// whole UTC days, its last day's hours), 0.15 + 0.25 + 0.07 s one after
// the other at 10,000 GPUs. It also bounds the parts held in memory
// before they are joined (one row per GPU each).
const coverageQueries = 3

// coverageRow is one GPU's row of a coverage part: its first start, last
// end, the end of its last interval, its holes, and (rollup parts) the
// periods it was read from.
type coverageRow struct {
	cluster, node, gpu string
	first, last, tail  uint64
	holes              [][]any
	hours              uint64
}

func scanCoverageRow(rs driver.Rows) (coverageRow, error) {
	var r coverageRow
	dest := []any{&r.cluster, &r.node, &r.gpu, &r.first, &r.last, &r.tail, &r.holes, &r.hours}
	if len(rs.Columns()) < len(dest) {
		dest = dest[:len(dest)-1] // a raw chunk
	}
	if err := rs.Scan(dest...); err != nil {
		return r, scanError{err}
	}
	return r, nil
}

// fetchedPart is a rollup part read ahead of the join: its rows, or the
// periods whose rows were not all visible.
type fetchedPart struct {
	rows []coverageRow
	torn []period
	err  error
}

// coverageOf reads the parts in time order and joins them per GPU. torn
// are the periods whose build's coverage rows were not all visible: the
// result is then incomplete and the caller reads again. Rollup parts are
// fetched up to coverageQueries at a time, each ahead of the join; raw
// chunks are joined as they stream.
func (s *Store) coverageOf(ctx context.Context, parts []coveragePart) (ledger.Coverage, []period, error) {
	// Reads fetched ahead stop when the join ends early.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	devs := map[[3]string]*coveredDevice{}
	ns := func(v uint64) time.Time { return time.Unix(0, int64(v)).UTC() }
	var out ledger.Coverage
	held := 0
	join := func(r coverageRow) {
		k := [3]string{r.cluster, r.node, r.gpu}
		d := devs[k]
		if d == nil {
			d = &coveredDevice{DeviceCoverage: ledger.DeviceCoverage{Cluster: r.cluster, Node: r.node, GPUUUID: r.gpu, First: ns(r.first), Last: ns(r.last)}}
			devs[k] = d
		} else {
			if d.tail.Before(ns(r.first)) {
				d.Holes = append(d.Holes, ledger.Hole{From: d.tail, To: ns(r.first)})
				held++
			}
			d.Last = maxTime(d.Last, ns(r.last))
		}
		d.tail = ns(r.tail)
		for _, h := range r.holes {
			a, _ := h[0].(uint64)
			b, _ := h[1].(uint64)
			d.Holes = append(d.Holes, ledger.Hole{From: ns(a), To: ns(b)})
			held++
		}
	}
	bound := func() {
		if held > 2*ledger.MaxCoverageHoles {
			// Keep memory bounded: holes past the first MaxCoverageHoles
			// (by cluster, node, GPU, time) now stay past them, whatever comes.
			held = trimHoles(devs)
			out.Truncated = true
		}
	}
	for lo := 0; lo < len(parts); {
		// The next window: up to coverageQueries rollup parts, and the
		// raw parts between them.
		hi, rollups := lo, 0
		for hi < len(parts) && (rollups < coverageQueries || len(parts[hi].builds) == 0) {
			if len(parts[hi].builds) > 0 {
				rollups++
			}
			hi++
		}
		fetched := s.fetchCoverageParts(ctx, parts[lo:hi])
		for i, p := range parts[lo:hi] {
			if p.builds != nil {
				if len(p.builds) == 0 {
					continue // hours without writes
				}
				f := <-fetched[i]
				if f.err != nil || len(f.torn) > 0 {
					return ledger.Coverage{}, f.torn, f.err
				}
				for _, r := range f.rows {
					join(r)
				}
				bound()
				continue
			}
			chunks, err := s.rowChunksOf(ctx, p.from, p.to, s.opts.CoverageChunk)
			if err != nil {
				return ledger.Coverage{}, nil, err
			}
			for _, c := range chunks {
				q := coverageChunkSQL(s.table(tableRows), rawRange(maxTime(p.from, c.from), minTime(p.to, c.to)))
				err := s.query(ctx, "read the ledger's coverage", q, func(rs driver.Rows) error {
					r, err := scanCoverageRow(rs)
					if err == nil {
						join(r)
					}
					return err
				})
				if err != nil {
					return ledger.Coverage{}, nil, err
				}
				bound()
			}
		}
		lo = hi
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
	return out, nil, nil
}

// fetchCoverageParts starts reading the rollup parts with writes among
// parts, all at once; each one's result arrives on its channel (nil for
// the other parts). Every started read delivers, so none is left
// blocked when the caller returns early: the channels are buffered.
func (s *Store) fetchCoverageParts(ctx context.Context, parts []coveragePart) []chan fetchedPart {
	out := make([]chan fetchedPart, len(parts))
	for i, p := range parts {
		if len(p.builds) == 0 {
			continue
		}
		out[i] = make(chan fetchedPart, 1)
		go func() {
			var f fetchedPart
			f.rows, f.torn, f.err = s.coverageRollup(ctx, p)
			out[i] <- f
		}()
	}
	return out
}

// coverageRollup reads a rollup part joined per GPU, counting the (GPU,
// hour) pairs read, then checks them against the builds' headers: a
// rebuild's newer rows can replace an older build's in a merge before the
// newer header is written. Rows never come back once merged away, so a
// full count means the read saw every row. On a short count it returns
// no rows and the periods that are short (all the part's where a recount
// finds none short: the rows went between the two reads).
func (s *Store) coverageRollup(ctx context.Context, p coveragePart) ([]coverageRow, []period, error) {
	filter := buildFilter(p.builds)
	lo, hi := dt(p.from.Unix()), dt(p.to.Unix())
	pp := period{grain: p.grain}
	q := fmt.Sprintf(coverageRollupSQL, pp.column(), s.table(pp.covTable()), lo, hi, filter)
	var (
		rows  []coverageRow
		pairs uint64
	)
	err := s.query(ctx, "read the ledger's coverage rollup", q, func(rs driver.Rows) error {
		r, err := scanCoverageRow(rs)
		if err != nil {
			return err
		}
		pairs += r.hours
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var want int64
	for _, hd := range p.builds {
		want += hd.devices
	}
	if int64(pairs) == want {
		return rows, nil, nil
	}
	seen := map[int64]int64{}
	q = fmt.Sprintf(coverageCountSQL, pp.column(), s.table(pp.covTable()), lo, hi, filter)
	err = s.query(ctx, "count the ledger's coverage rollup", q, func(rs driver.Rows) error {
		var h uint32
		var n uint64
		if err := rs.Scan(&h, &n); err != nil {
			return scanError{err}
		}
		seen[int64(h)] = int64(n)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var torn, all []period
	for start, hd := range p.builds {
		if seen[start] != hd.devices {
			torn = append(torn, period{p.grain, start})
		}
		all = append(all, period{p.grain, start})
	}
	if len(torn) == 0 {
		torn = all
	}
	return nil, torn, nil
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
