package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"golang.org/x/sync/errgroup"
)

// readRollup reads the rows of the given builds (period start -> header) of
// one grain in [from, to). ok[start] says the build's rows are all visible:
// a build whose rows a newer, not yet visible build replaced in a merge
// fails this check and its period is read from a finer source instead.
func (s *Store) readRollup(ctx context.Context, grain string, from, to int64, want map[int64]header) (map[int64][]group, map[int64]bool, error) {
	rows := map[int64][]group{}
	ok := map[int64]bool{}
	if len(want) == 0 {
		return rows, ok, nil
	}
	p := period{grain: grain}
	seen := map[int64]map[groupKey]bool{}
	q := fmt.Sprintf(`SELECT toUInt32(%[1]s), build, team, namespace, gpu_model, sharing_mode, kind, cluster,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows
FROM %[2]s WHERE %[1]s >= %[3]s AND %[1]s < %[4]s%[5]s`, p.column(), s.table(p.table()), dt(from), dt(to), buildFilter(want))
	err := s.query(ctx, "read rollups", q, func(rs driver.Rows) error {
		var start uint32
		var build uint64
		var g group
		if err := rs.Scan(&start, &build, &g.key.team, &g.key.namespace, &g.key.model, &g.key.mode, &g.key.kind, &g.key.cluster,
			&g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			return scanError{err}
		}
		ps := int64(start)
		h, wanted := want[ps]
		if !wanted || h.build != build {
			return nil // an older build, or a period read elsewhere
		}
		// A retried insert can leave the same build row twice until a
		// merge; it counts once.
		if seen[ps] == nil {
			seen[ps] = map[groupKey]bool{}
		}
		if seen[ps][g.key] {
			return nil
		}
		seen[ps][g.key] = true
		rows[ps] = append(rows[ps], g)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for ps, h := range want {
		ok[ps] = uint64(len(rows[ps])) == h.groups
	}
	return rows, ok, nil
}

// maxBuildFilter bounds the builds named in one rollup read (about 22
// bytes each; max_query_size is 256 KiB by default).
const maxBuildFilter = 4000

// buildFilter keeps older builds of a period on the server until merges
// drop them: each rebuild of an hour adds a copy of its groups, and a month
// of hours rebuilt three times sent 3x the rows to be thrown away here (91
// MB, 0.4 s of a Los Angeles monthly report in the benchmark). With more
// builds than maxBuildFilter, every build is read and filtered here.
func buildFilter(want map[int64]header) string {
	if len(want) > maxBuildFilter {
		return ""
	}
	var b strings.Builder
	b.WriteString(" AND build IN (")
	first := true
	for _, h := range want {
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(strconv.FormatUint(h.build, 10))
	}
	b.WriteString(")")
	return b.String()
}

func (k groupKey) less(o groupKey) bool {
	if k.team != o.team {
		return k.team < o.team
	}
	if k.namespace != o.namespace {
		return k.namespace < o.namespace
	}
	if k.model != o.model {
		return k.model < o.model
	}
	if k.mode != o.mode {
		return k.mode < o.mode
	}
	if k.kind != o.kind {
		return k.kind < o.kind
	}
	return k.cluster < o.cluster
}

// rollupSource is one rollup table of a period grain as the aggregates
// read it, and how many rows a build wrote there (-1: none).
type rollupSource struct {
	what  string // names the read in errors
	table func(period) string
	rows  func(header) int64
	// final reads the table FINAL, which collapses a retried insert's
	// second copy of a row. Without it, each group also counts the
	// distinct periods it was read in, which is the number of its rows
	// unless one was read twice: only where every grain read from the
	// table groups by the table's whole key (the team rollup; the
	// per-device rollups are read by coarser grains too, whose groups
	// hold several rows a period).
	final bool
}

var (
	teamRollup = rollupSource{
		what:  "read rollups",
		table: period.table,
		rows:  func(h header) int64 { return int64(h.groups) },
	}
	deviceRollup = rollupSource{
		what:  "read the per-device rollups",
		table: period.devTable,
		rows:  func(h header) int64 { return h.deviceGroups },
		final: true,
	}
)

// rollupPeriodsPerQuery bounds the periods one summing read names: about
// 40 bytes each (period, unit and build; at most maxPeriodRanges ranges
// besides); max_query_size is 256 KiB by default.
const rollupPeriodsPerQuery = 1000

// sumRollup adds the segments of one period grain whose newest build is
// current and has rows in src, all visible, summed per bucket and key of
// acc's grain in the server; it returns the others, in their order.
//
// The server sums a bucket's periods, so a bucket's groups come back once,
// not once per period: a Los Angeles month by day is 743 hourly periods in
// 31 buckets, and reading each hour's groups into Go was most of that
// report's time and memory at 10,000 GPUs (BENCHMARKS.md).
//
// A bucket counts only when, in the same query (one snapshot), its rows
// read are as many as its periods' builds wrote and none was read twice.
// The build filter keeps the wanted builds' rows alone (build ids are
// random, so a build names its period). A build writes each key once a
// period, so a second copy of a row (a retried insert) is either
// collapsed by FINAL or, in the team rollup, seen as a group read more
// often than in distinct periods; a count short of the builds' is a row a
// newer, not yet visible build replaced in a merge. Either way the
// bucket's periods are read again one by one, and only the periods still
// wrong go to a finer source. The team rollup is read without FINAL,
// which 18.16 reads on one thread: a Los Angeles month's hours took 0.10
// s without it, 0.19-0.26 s with it, at 10,000 GPUs.
func sumRollup[K comparable](ctx context.Context, s *Store, grain string, src rollupSource, segs []segment, st *rollupState, acc *accumulator[K]) ([]segment, error) {
	hdr := map[int64]header{}
	var want []segment
	for _, sg := range segs {
		if h, ok := st.clean(period{grain, sg.from.Unix()}); ok && src.rows(h) >= 0 {
			hdr[sg.from.Unix()] = h
			want = append(want, sg)
		}
	}
	done := map[int64]bool{}
	var mu sync.Mutex // acc and done, between two halves read at once
	for _, perPeriod := range []bool{false, true} {
		var short []segment
		for len(want) > 0 {
			n := min(len(want), rollupPeriodsPerQuery)
			chunks := [][]segment{want[:n]}
			// FINAL reads on one thread in 18.16: a read of the
			// per-device rollup over many buckets is two queries at once,
			// cut between buckets, so that each bucket is still summed by
			// one query.
			if cut := bucketCut(want[:n]); src.final && !perPeriod && cut > 0 {
				chunks = [][]segment{want[:cut], want[cut:n]}
			}
			missed := make([][]segment, len(chunks))
			g, gctx := errgroup.WithContext(ctx)
			for i, c := range chunks {
				g.Go(func() (err error) {
					missed[i], err = sumRollupChunk(gctx, s, grain, src, c, hdr, perPeriod, acc, done, &mu)
					return err
				})
			}
			if err := g.Wait(); err != nil {
				return nil, fmt.Errorf("cannot %s: %w", acc.grain.what, err)
			}
			for _, m := range missed {
				short = append(short, m...)
			}
			want = want[n:]
		}
		want = short
	}
	var rest []segment
	for _, sg := range segs {
		if !done[sg.from.Unix()] {
			rest = append(rest, sg)
		}
	}
	return rest, nil
}

// sumRollupChunk is sumRollup's query over segs, each with a header in
// hdr, summed per bucket or, perPeriod, per segment. It adds the units
// that passed the count to acc, marks their periods done and returns the
// segments of the others.
func sumRollupChunk[K comparable](ctx context.Context, s *Store, grain string, src rollupSource, segs []segment, hdr map[int64]header, perPeriod bool, acc *accumulator[K], done map[int64]bool, mu *sync.Mutex) ([]segment, error) {
	p := period{grain: grain}
	gr := acc.grain
	unitOf := func(i int) int {
		if perPeriod {
			return i
		}
		return segs[i].bucket
	}
	var periods, units, builds strings.Builder
	expect := map[int]int64{} // unit -> rows its periods' builds wrote
	bucket := map[int]int{}   // unit -> its bucket
	for i, sg := range segs {
		if i > 0 {
			periods.WriteString(",")
			units.WriteString(",")
			builds.WriteString(",")
		}
		h := hdr[sg.from.Unix()]
		periods.WriteString(strconv.FormatInt(sg.from.Unix(), 10))
		// One above the unit: 0 is what transform gives a period not in
		// the list, which the scan refuses.
		units.WriteString(strconv.Itoa(unitOf(i) + 1))
		builds.WriteString(strconv.FormatUint(h.build, 10))
		expect[unitOf(i)] += src.rows(h)
		bucket[unitOf(i)] = sg.bucket
	}
	// Per group: FINAL, or the distinct periods it was read in.
	final, inPeriods := "", fmt.Sprintf("uniqExact(toUInt32(%s))", p.column())
	if src.final {
		final, inPeriods = "FINAL", "count()"
	}
	// transform looks a period up in a hash table; indexOf searched the
	// list for every row (743 hours: 0.9 s of a Los Angeles month at
	// 10,000 GPUs, against 0.2 s).
	q := fmt.Sprintf(`SELECT toUInt32(transform(toUInt32(%[3]s), [%[2]s], [%[1]s], 0)) AS unit, %[4]s,
	%[5]ssum(allocated_gpu_seconds), sum(used_gpu_seconds), sum(memory_mib_seconds), sum(energy_joules), sum(rows), count(),
	%[10]s
FROM %[6]s %[9]s WHERE %[7]s AND build IN (%[8]s)
GROUP BY unit, %[4]s`, units.String(), periods.String(), p.column(), gr.keyCols, gr.extraCols,
		s.table(src.table(p)), periodRanges(p.column(), segs), builds.String(), final, inPeriods)
	type row struct {
		unit    int
		key     K
		profile string
		sums
	}
	var (
		// got is kept in blocks: a month's per-device read is 36,000 rows
		// of several strings each at 1,000 GPUs (ten times that at
		// 10,000), copied at every doubling of one slice.
		got       [][]row
		counted   = map[int]int64{}
		doubled   = map[int]bool{} // units with a row read twice
		u         uint32
		r         row
		n, seenIn uint64
	)
	dest := append(append([]any{&u}, gr.dest(&r.key, &r.profile)...), &r.alloc, &r.used, &r.mem, &r.energy, &r.rows, &n, &seenIn)
	err := s.query(ctx, src.what, q, func(rs driver.Rows) error {
		if err := rs.Scan(dest...); err != nil {
			return scanError{err}
		}
		r.unit = int(u) - 1
		if _, ok := expect[r.unit]; !ok {
			return fmt.Errorf("%s returned rows of a period not asked for (unit %d)", src.what, u)
		}
		counted[r.unit] += int64(n)
		if n != seenIn {
			doubled[r.unit] = true
		}
		if len(got) == 0 || len(got[len(got)-1]) == cap(got[len(got)-1]) {
			got = append(got, make([]row, 0, 4096))
		}
		got[len(got)-1] = append(got[len(got)-1], r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	whole := func(unit int) bool { return counted[unit] == expect[unit] && !doubled[unit] }
	mu.Lock()
	defer mu.Unlock()
	for _, block := range got {
		for i := range block {
			if r := &block[i]; whole(r.unit) {
				acc.add(bucket[r.unit], r.key, r.sums, r.profile)
			}
		}
	}
	var short []segment
	for i, sg := range segs {
		if whole(unitOf(i)) {
			done[sg.from.Unix()] = true
		} else {
			short = append(short, sg)
		}
	}
	return short, nil
}

// minBucketsToCut: a read of fewer buckets is one query.
const minBucketsToCut = 8

// bucketCut is where segs (in bucket order) are cut in two between
// buckets, near the middle; 0 for fewer than minBucketsToCut buckets.
func bucketCut(segs []segment) int {
	if len(segs) == 0 || segs[len(segs)-1].bucket-segs[0].bucket+1 < minBucketsToCut ||
		!slices.IsSortedFunc(segs, func(a, b segment) int { return cmp.Compare(a.bucket, b.bucket) }) {
		return 0
	}
	mid := segs[len(segs)/2].bucket
	for i, sg := range segs {
		if sg.bucket >= mid && i > 0 {
			return i
		}
	}
	return 0
}

// maxPeriodRanges bounds the ranges of periodRanges' condition.
const maxPeriodRanges = 8

// periodRanges is the condition on col that keeps the periods of segs:
// their runs of adjacent periods, each a range the primary key prunes by.
// One range from the first to the last would read every period between:
// a Los Angeles month's 23 edge hours read the whole month's hourly
// rollup FINAL (0.34 s at 10,000 GPUs).
func periodRanges(col string, segs []segment) string {
	type run struct{ from, to int64 }
	runs := make([]run, 0, len(segs))
	for _, sg := range segs {
		runs = append(runs, run{sg.from.Unix(), sg.to.Unix()})
	}
	slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.from, b.from) })
	merged := runs[:0]
	for _, r := range runs {
		if n := len(merged); n > 0 && merged[n-1].to >= r.from {
			merged[n-1].to = max(merged[n-1].to, r.to)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) > maxPeriodRanges {
		// Each range is tested on every row read: 1,000 of them took
		// 100 s over a 10,000-GPU month's per-device hours. The build
		// filter keeps the periods' rows alone.
		merged = []run{{merged[0].from, merged[len(merged)-1].to}}
	}
	conds := make([]string, len(merged))
	for i, r := range merged {
		conds[i] = fmt.Sprintf("(%[1]s >= %[2]s AND %[1]s < %[3]s)", col, dt(r.from), dt(r.to))
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}
