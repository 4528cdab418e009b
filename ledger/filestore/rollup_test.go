package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// aggregateRaw is the reference the rollup must match bit for bit: every
// bucket summed from the raw rows only, one aggregateSQL read per
// 15-minute piece (pieces found with time.Truncate, not slotOf), added in
// time order. It never reads ledger_rollup or rollup_dirty.
func aggregateRaw(t *testing.T, s *FileStore, q ledger.AggregateQuery) []ledger.Aggregate {
	t.Helper()
	ctx := context.Background()
	bs, err := queryBuckets(q)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		bucket int
		grp    int64
	}
	idx := map[key]int{}
	var out []ledger.Aggregate
	var grps []int64
	for bi, b := range bs {
		for _, p := range rawPieces(t, s, b.lo, b.hi) {
			rs, err := s.r.QueryContext(ctx, aggregateSQL, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			for rs.Next() {
				var (
					grp                      int64
					alloc, used, mem, energy float64
					n                        int64
				)
				if err := rs.Scan(&grp, &alloc, &used, &mem, &energy, &n); err != nil {
					t.Fatal(err)
				}
				i, ok := idx[key{bi, grp}]
				if !ok {
					i = len(out)
					idx[key{bi, grp}] = i
					out, grps = append(out, ledger.Aggregate{BucketStart: b.start}), append(grps, grp)
				}
				a := &out[i]
				a.AllocatedSeconds += alloc
				a.UsedSeconds += used
				a.MemoryMiBSeconds += mem
				a.EnergyJoules += energy
				a.Rows += n
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
			rs.Close()
		}
	}
	for i := range out {
		g, err := s.groups.key(ctx, s.w, grps[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i].Team, out[i].Namespace, out[i].GPUModel, out[i].Mode, out[i].Kind = g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
	}
	sortAggregates(out)
	return out
}

// rawPieces cuts [lo, hi) at the UTC quarter hours that hold rows.
func rawPieces(t *testing.T, s *FileStore, lo, hi int64) [][2]int64 {
	t.Helper()
	rs, err := s.r.Query("SELECT DISTINCT interval_start_ns FROM ledger_rows WHERE interval_start_ns >= ? AND interval_start_ns < ? ORDER BY 1", lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out [][2]int64
	for rs.Next() {
		var ns int64
		if err := rs.Scan(&ns); err != nil {
			t.Fatal(err)
		}
		qs := fromNS(ns).Truncate(15 * time.Minute)
		plo, phi := max(lo, nsBound(qs, math.MinInt64)), min(hi, nsBound(qs.Add(15*time.Minute), math.MaxInt64))
		if len(out) == 0 || out[len(out)-1][0] != plo {
			out = append(out, [2]int64{plo, phi})
		}
	}
	return out
}

func checkModel(t *testing.T, got []ledger.Aggregate, want map[aggKey]aggSum, q ledger.AggregateQuery) {
	t.Helper()
	for _, a := range got {
		k := aggKey{label(a.BucketStart, q.Location, q.Bucket), a.Team, a.Namespace, a.GPUModel, a.Mode, string(a.Kind)}
		w, ok := want[k]
		if !ok {
			t.Fatalf("query %s: unexpected group %+v", describe(q), k)
		}
		if a.Rows != w.n || !near(a.AllocatedSeconds, w.alloc) || !near(a.UsedSeconds, w.used) ||
			!near(a.MemoryMiBSeconds, w.mem) || !near(a.EnergyJoules, w.energy) {
			t.Fatalf("query %s group %+v: got %+v, want %+v", describe(q), k, a, w)
		}
		delete(want, k)
	}
	if len(want) > 0 {
		t.Fatalf("query %s: %d groups missing, e.g. %v", describe(q), len(want), firstKey(want))
	}
}

func describe(q ledger.AggregateQuery) string {
	return fmt.Sprintf("[%s, %s) %s in %v", ledger.FormatTime(q.From), ledger.FormatTime(q.To), q.Bucket, q.Location)
}

type rowKey struct {
	start                                     int64
	node, gpu, slice, podUID, container, kind string
}

func keyOf(r attribution.Row) rowKey {
	return rowKey{r.IntervalStart.UnixNano(), r.Node, r.GPUUUID, r.SliceID, r.PodUID, r.Container, string(r.Kind)}
}

// randomLedger is one store and the rows the test expects in it.
type randomLedger struct {
	t       *testing.T
	rng     *rand.Rand
	s       *FileStore
	model   map[rowKey]attribution.Row
	batches [][]attribution.Row
	from    time.Time
	to      time.Time
	zones   []*time.Location
}

// The windows straddle what makes buckets hard: DST changes (Los Angeles,
// Lord Howe's 30-minute one), month ends in +05:30 and +05:45, and an
// offset that is no multiple of 15 minutes (Monrovia until 1972), where
// bucket boundaries cut slots.
var rollupAnchors = []time.Time{
	time.Date(2025, 3, 9, 10, 0, 0, 0, time.UTC),   // Los Angeles springs forward
	time.Date(2025, 11, 2, 9, 0, 0, 0, time.UTC),   // Los Angeles falls back
	time.Date(2025, 4, 5, 15, 0, 0, 0, time.UTC),   // Lord Howe ends DST (+11 -> +10:30)
	time.Date(2025, 10, 4, 15, 30, 0, 0, time.UTC), // Lord Howe starts DST
	time.Date(2025, 3, 31, 18, 15, 0, 0, time.UTC), // April begins in Kathmandu
	time.Date(2025, 4, 30, 18, 30, 0, 0, time.UTC), // May begins in Kolkata
	time.Date(1972, 1, 7, 0, 44, 30, 0, time.UTC),  // Monrovia leaves -00:44:30: buckets split slots
}

func newRandomLedger(t *testing.T, seed uint64) *randomLedger {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var zones []*time.Location
	for _, z := range []string{"UTC", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe", "America/Los_Angeles", "Africa/Monrovia"} {
		loc, err := time.LoadLocation(z)
		if err != nil {
			t.Fatalf("no tzdata for %s: %v", z, err)
		}
		zones = append(zones, loc)
	}
	anchor := rollupAnchors[seed%uint64(len(rollupAnchors))] // each anchor in turn
	// Interval starts off the quarter hours by an odd number of seconds,
	// so rows sit anywhere in their slots, or on them.
	from := anchor.Add(-time.Duration(rng.IntN(20*3600)) * time.Second).Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
	if rng.IntN(2) == 0 {
		from = from.Truncate(15 * time.Minute) // and rows on slot boundaries
	}
	l := &randomLedger{t: t, rng: rng, s: openTemp(t, FileOptions{}), model: map[rowKey]attribution.Row{},
		from: from, to: from.Add(time.Duration(26+rng.IntN(16)) * time.Hour), zones: zones}
	return l
}

var rollupTeams = []string{"ml", "web", "vision, \"eu\"", "=sum(A1)", "search"}

// rows builds the rows of [from, to) at one step for gpus GPUs with random
// values, teams and tenants.
func (l *randomLedger) rows(from, to time.Time, step time.Duration, gpus int) []attribution.Row {
	var out []attribution.Row
	for s := from; s.Before(to); s = s.Add(step) {
		d := step.Seconds()
		for g := 0; g < gpus; g++ {
			uuid := fmt.Sprintf("GPU-%d", g)
			base := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: s, IntervalEnd: s.Add(step), Node: fmt.Sprintf("n%d", g/2), GPUUUID: uuid,
				GPUModel: []string{"L4", "H100-80GB-HBM3"}[g%2], SliceID: uuid, SharingMode: string(tenancy.Timeslicing),
				Method: attribution.MethodMeasured}
			for c := 0; c < 1+l.rng.IntN(3); c++ {
				r := base
				team := rollupTeams[l.rng.IntN(len(rollupTeams))]
				r.Kind, r.SliceID, r.Team, r.Namespace = attribution.KindContainer, fmt.Sprintf("%s::%d", uuid, c), team, "ns-"+team[:1]
				r.Pod, r.PodUID, r.Container = fmt.Sprintf("p%d", c), fmt.Sprintf("u%d-%d", g, c), "main"
				if g%2 == 1 {
					// The H100s are MIG-partitioned: each slice has its profile.
					r.MIGProfile = fmt.Sprintf("%dg.%dgb", c+1, 10*(c+1))
				}
				l.values(&r, d)
				out = append(out, r)
			}
			for _, k := range []attribution.Kind{attribution.KindUnallocated, attribution.KindIdle} {
				r := base
				r.Kind = k
				l.values(&r, d)
				out = append(out, r)
			}
		}
	}
	return out
}

func (l *randomLedger) values(r *attribution.Row, d float64) {
	r.AllocatedGPUSeconds = d * l.rng.Float64()
	r.UsedGPUSeconds = d * l.rng.Float64() / 3
	r.MemoryMiBSeconds = d * 1024 * l.rng.Float64()
	r.EnergyJoules = d * 300 * l.rng.Float64()
	if l.rng.IntN(50) == 0 {
		r.EnergyJoules = -r.EnergyJoules // counters reset: negative values must survive too
	}
}

func (l *randomLedger) append(rows []attribution.Row) {
	l.t.Helper()
	if err := l.s.Append(context.Background(), rows, nil); err != nil {
		l.t.Fatal(err)
	}
	for _, r := range rows {
		l.model[keyOf(r)] = r
	}
}

// fill writes the window in batches of random length, some out of order.
func (l *randomLedger) fill() {
	step := []time.Duration{3 * time.Minute, 5 * time.Minute, 7 * time.Minute, 15 * time.Minute, 20 * time.Minute}[l.rng.IntN(5)]
	gpus := 1 + l.rng.IntN(3)
	var batches [][]attribution.Row
	for s := l.from; s.Before(l.to); {
		e := s.Add(step * time.Duration(1+l.rng.IntN(40)))
		batches = append(batches, l.rows(s, minTime(e, l.to), step, gpus))
		s = e
	}
	for i := range batches {
		if j := i + 1; j < len(batches) && l.rng.IntN(6) == 0 {
			batches[i], batches[j] = batches[j], batches[i]
		}
	}
	for _, b := range batches {
		l.append(b)
	}
	l.batches = batches
}

// replay re-sends the stored rows of a written batch, shuffled: nothing
// may change.
func (l *randomLedger) replay() {
	var b []attribution.Row
	for _, r := range l.batches[l.rng.IntN(len(l.batches))] {
		if m, ok := l.model[keyOf(r)]; ok {
			b = append(b, m)
		}
	}
	l.rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	q := ledger.AggregateQuery{From: l.from.Add(-time.Hour), To: l.to.Add(time.Hour), Location: l.zones[l.rng.IntN(len(l.zones))], Bucket: ledger.BucketHour}
	before := l.aggregate(q)
	l.append(b)
	if after := l.aggregate(q); !reflect.DeepEqual(before, after) {
		l.t.Fatalf("replaying a batch of %d rows changed the hourly aggregates", len(b))
	}
}

// correct re-sends some stored rows with new values, some under another
// team (another group), mixed with new rows and identical replays.
func (l *randomLedger) correct() {
	keys := make([]rowKey, 0, len(l.model))
	for k := range l.model {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rowKey) int { return cmpKey(a, b) })
	var batch []attribution.Row
	for range 1 + l.rng.IntN(60) {
		r := l.model[keys[l.rng.IntN(len(keys))]]
		switch l.rng.IntN(3) {
		case 0:
			l.values(&r, r.IntervalEnd.Sub(r.IntervalStart).Seconds())
		case 1:
			r.Team = rollupTeams[l.rng.IntN(len(rollupTeams))]
			r.UsedGPUSeconds += 0.1
		}
		batch = append(batch, r)
	}
	late := l.from.Add(time.Duration(l.rng.IntN(int(l.to.Sub(l.from).Seconds()))) * time.Second)
	batch = append(batch, l.rows(late, late.Add(time.Minute), time.Minute, 4)...)
	l.append(batch)
}

func cmpKey(a, b rowKey) int {
	if a.start != b.start {
		return int(min(max(a.start-b.start, -1), 1))
	}
	return slices.Compare([]string{a.node, a.gpu, a.slice, a.podUID, a.container, a.kind},
		[]string{b.node, b.gpu, b.slice, b.podUID, b.container, b.kind})
}

// prune deletes the oldest-written rows up to a random sequence number, as
// Prune does once they are shipped; the model becomes what is left, which
// must be a part of it, unchanged.
func (l *randomLedger) prune() {
	ctx := context.Background()
	var next int64
	if err := l.s.w.QueryRow("SELECT value FROM meta WHERE key = 'next_seq'").Scan(&next); err != nil {
		l.t.Fatal(err)
	}
	cutoff := l.rng.Int64N(next)
	if _, err := l.s.pruneOldest(ctx, cutoff); err != nil {
		l.t.Fatal(err)
	}
	left := map[rowKey]attribution.Row{}
	for _, r := range readAll(l.t, l.s, time.Time{}, time.Time{}) {
		if m, ok := l.model[keyOf(r)]; !ok || !reflect.DeepEqual(m, r) {
			l.t.Fatalf("after prune: row %+v is not the one written", r)
		}
		left[keyOf(r)] = r
	}
	l.model = left
}

func (l *randomLedger) aggregate(q ledger.AggregateQuery) []ledger.Aggregate {
	l.t.Helper()
	got, err := l.s.Aggregate(context.Background(), q)
	if err != nil {
		l.t.Fatalf("Aggregate %s: %v", describe(q), err)
	}
	return got
}

// randomQuery picks a zone, a bucket and a range whose ends are anywhere,
// down to the nanosecond, around the window.
func (l *randomLedger) randomQuery() ledger.AggregateQuery {
	span := l.to.Sub(l.from) + 4*time.Hour
	at := func() time.Time {
		t := l.from.Add(-2*time.Hour + time.Duration(l.rng.Int64N(int64(span))))
		switch l.rng.IntN(4) {
		case 0:
			t = t.Truncate(15 * time.Minute) // aligned ends too
		case 1:
			// on a row, or a nanosecond either side of one
			t = l.batches[l.rng.IntN(len(l.batches))][0].IntervalStart.Add(time.Duration(l.rng.IntN(3) - 1))
		}
		return t
	}
	a, b := at(), at()
	if b.Before(a) {
		a, b = b, a
	}
	if a.Equal(b) {
		b = b.Add(time.Nanosecond)
	}
	q := ledger.AggregateQuery{From: a, To: b, Location: l.zones[l.rng.IntN(len(l.zones))],
		Bucket: []string{ledger.BucketNone, ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth}[l.rng.IntN(4)]}
	if q.Bucket == ledger.BucketNone {
		q.Location = nil
		switch l.rng.IntN(4) {
		case 0:
			q.From = time.Time{}
		case 1:
			q.To = time.Time{}
		}
	}
	return q
}

// check runs random queries against the raw reference (bit for bit) and
// the model (to rounding).
func (l *randomLedger) check(n int) {
	l.t.Helper()
	for range n {
		q := l.randomQuery()
		got := l.aggregate(q)
		if want := aggregateRaw(l.t, l.s, q); !reflect.DeepEqual(got, want) {
			l.t.Fatalf("query %s: rollup and raw scan differ:\n got %d aggregates %+v\nwant %d aggregates %+v", describe(q), len(got), got, len(want), want)
		}
		checkModel(l.t, got, sumByKey(maps.Values(l.model), q), q)
	}
}

// churn applies rounds random changes (a replay, a correction or a
// prune), calling check after each.
func (l *randomLedger) churn(rounds int, check func()) {
	for range rounds {
		switch l.rng.IntN(4) {
		case 0:
			l.replay()
		case 1, 2:
			l.correct()
		case 3:
			l.prune()
		}
		check()
	}
}

func TestRollupMatchesRawScan(t *testing.T) {
	seeds := 2 * len(rollupAnchors)
	if testing.Short() {
		seeds = len(rollupAnchors)
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			l := newRandomLedger(t, seed)
			l.fill()
			l.check(4)
			l.churn(7, func() { l.check(2) })
			checkRollupTable(t, l.s)
		})
	}
}

// checkRollupTable compares every clean slot's rollup rows with a raw read
// of the slot, and checks at most the newest written slot is dirty.
func checkRollupTable(t *testing.T, s *FileStore) {
	t.Helper()
	dirty := map[int64]bool{}
	rs, err := s.r.Query("SELECT slot FROM rollup_dirty")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var k int64
		rs.Scan(&k)
		dirty[k] = true
	}
	rs.Close()
	if len(dirty) > 1 {
		t.Errorf("%d dirty slots, want at most the last one written", len(dirty))
	}
	got := dumpRollup(t, s.r, dirty)
	want := map[int64][]sums{}
	for _, r := range readAll(t, s, time.Time{}, time.Time{}) {
		ws := r.IntervalStart.Truncate(15 * time.Minute)
		k := ws.Unix() / 900
		if dirty[k] || want[k] != nil {
			continue
		}
		lo, hi := nsBound(ws, math.MinInt64), nsBound(ws.Add(15*time.Minute), math.MaxInt64)
		st, err := s.r.Prepare(aggregateSQL)
		if err != nil {
			t.Fatal(err)
		}
		if want[k], err = rawRows(context.Background(), st, lo, hi, teamGrain.dest); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rollup table (%d slots) differs from raw sums of the slots (%d)", len(got), len(want))
	}
}

// dumpRollup reads ledger_rollup, leaving out the skip slots.
func dumpRollup(t *testing.T, db *sql.DB, skip map[int64]bool) map[int64][]sums {
	t.Helper()
	rs, err := db.Query("SELECT slot, grp, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows FROM ledger_rollup ORDER BY slot, grp")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[int64][]sums{}
	for rs.Next() {
		var (
			k int64
			g sums
		)
		if err := rs.Scan(&k, &g.grp, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			t.Fatal(err)
		}
		if !skip[k] {
			out[k] = append(out[k], g)
		}
	}
	return out
}

func TestRollupExtremeTimes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	lo, hi := time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64-1).UTC()
	var rows []attribution.Row
	for i, at := range []time.Time{lo, lo.Add(16 * time.Minute), time.Unix(-1, 0), time.Unix(0, 0), hi.Add(-20 * time.Minute), hi} {
		rows = append(rows, attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: at, IntervalEnd: at, Node: "n", GPUUUID: "g", SliceID: "g",
			Kind: attribution.KindIdle, UsedGPUSeconds: float64(i) + 0.5, Team: fmt.Sprint(i % 2)})
	}
	// One row per Append so each slot goes through the dirty mark.
	for _, r := range rows {
		if err := s.Append(ctx, []attribution.Row{r}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []ledger.AggregateQuery{
		{},
		{From: lo, To: hi},
		{From: lo.Add(time.Nanosecond), To: time.Unix(0, math.MaxInt64)},
		{From: time.Unix(-1, 0), To: time.Unix(0, 1)},
	} {
		got, err := s.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if want := aggregateRaw(t, s, q); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: rollup %+v, raw %+v", describe(q), got, want)
		}
		model := map[rowKey]attribution.Row{}
		for _, r := range rows {
			model[keyOf(r)] = r
		}
		checkModel(t, got, sumByKey(maps.Values(model), q), q)
	}
	checkRollupTable(t, s)
}

func TestSlotArithmetic(t *testing.T) {
	cases := []struct{ ns, slot int64 }{
		{0, 0}, {1, 0}, {slotNS - 1, 0}, {slotNS, 1}, {-1, -1}, {-slotNS, -1}, {-slotNS - 1, -2},
		{math.MaxInt64, 10248191}, {math.MinInt64, -10248192},
	}
	for _, c := range cases {
		if got := slotOf(c.ns); got != c.slot {
			t.Errorf("slotOf(%d) = %d, want %d", c.ns, got, c.slot)
		}
	}
	if slotStart(minSlot) != math.MinInt64 || slotEnd(maxSlot) != math.MaxInt64 || slotStart(-1) != -slotNS {
		t.Errorf("slot bounds: start(min) %d, end(max) %d, start(-1) %d", slotStart(minSlot), slotEnd(maxSlot), slotStart(-1))
	}
	// The SQL form agrees with the Go one, ends of the range included.
	s := openTemp(t, FileOptions{})
	for _, c := range cases {
		var got int64
		if err := s.r.QueryRow("SELECT "+slotExpr+" FROM (SELECT ? AS interval_start_ns)", c.ns).Scan(&got); err != nil || got != c.slot {
			t.Errorf("SQL slot of %d = %d (%v), want %d", c.ns, got, err, c.slot)
		}
	}
}

func TestPlanSlots(t *testing.T) {
	m := int64(time.Minute)
	S := slotNS
	cases := []struct {
		name  string
		bs    []bucket
		dirty []int64
		whole []slotSpan
		raw   [][4]int64 // bucket, slot, lo, hi
	}{
		{"aligned", []bucket{{lo: 0, hi: 4 * S}}, nil, []slotSpan{{0, 4}}, nil},
		{"inside one slot", []bucket{{lo: 2 * m, hi: 3 * m}}, nil, []slotSpan{{1, 1}}, [][4]int64{{0, 0, 2 * m, 3 * m}}},
		{"edges and a dirty slot", []bucket{{lo: S - m, hi: 2 * S}, {lo: 2 * S, hi: 4*S + m}}, []int64{1, 3, 9},
			[]slotSpan{{1, 2}, {2, 4}},
			[][4]int64{{0, 0, S - m, S}, {0, 1, S, 2 * S}, {1, 3, 3 * S, 4 * S}, {1, 4, 4 * S, 4*S + m}}},
		{"boundary inside a slot", []bucket{{lo: 0, hi: S + 5*m}, {lo: S + 5*m, hi: 3 * S}}, nil,
			[]slotSpan{{0, 1}, {2, 3}}, [][4]int64{{0, 1, S, S + 5*m}, {1, 1, S + 5*m, 2 * S}}},
	}
	for _, c := range cases {
		p := planSlots(c.bs, c.dirty)
		var raw [][4]int64
		for _, r := range p.raw {
			raw = append(raw, [4]int64{int64(r.bucket), r.slot, r.lo, r.hi})
		}
		if !reflect.DeepEqual(p.whole, c.whole) || !reflect.DeepEqual(raw, c.raw) {
			t.Errorf("%s: whole %v raw %v, want %v %v", c.name, p.whole, raw, c.whole, c.raw)
		}
	}
}

// TestMigrateVersion1BuildsRollup: a file from before the rollup (schema
// 1) gets it built on open, exactly, once.
func TestMigrateVersion1BuildsRollup(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	s, err := OpenFile(ctx, path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := fleetRows(t0, 90, time.Minute, 3)
	if err := s.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	fixed := rows[100]
	fixed.Team, fixed.EnergyJoules = "moved", 1e-3
	if err := s.Append(ctx, []attribution.Row{fixed}, nil); err != nil {
		t.Fatal(err)
	}
	q := ledger.AggregateQuery{From: t0, To: t0.Add(2 * time.Hour), Location: time.UTC, Bucket: ledger.BucketHour}
	before, err := s.Aggregate(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Schema 1 is schema 2 without the two rollup tables.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(undoSchema4and5 + "DROP TABLE ledger_rollup; DROP TABLE rollup_dirty; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var firstDump map[int64][]sums
	for i := range 2 {
		s, err := OpenFile(ctx, path, FileOptions{MustExist: true})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var v, dirty int
		if err := s.r.QueryRow("SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM rollup_dirty)").Scan(&v, &dirty); err != nil {
			t.Fatal(err)
		}
		if v != FileSchemaVersion || dirty != 0 {
			t.Fatalf("open %d: schema %d, %d dirty slots; want %d and none", i, v, dirty, FileSchemaVersion)
		}
		dump := dumpRollup(t, s.r, nil)
		if len(dump) != 6 { // 90 minutes from a quarter hour
			t.Fatalf("open %d: rollup has %d slots, want 6", i, len(dump))
		}
		if i == 0 {
			firstDump = dump
		} else if !reflect.DeepEqual(dump, firstDump) {
			t.Fatalf("reopening changed the rollup")
		}
		after, err := s.Aggregate(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("open %d: aggregates after migration differ from before", i)
		}
		checkRollupTable(t, s)
		s.Close()
	}
}

// TestRollupEdgePieces puts rows a nanosecond either side of slot
// boundaries and queries every range between such instants, with the
// newest slot dirty and then clean.
func TestRollupEdgePieces(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, FileOptions{})
	b := t0 // a quarter hour
	at := func(d time.Duration) time.Time { return b.Add(d) }
	var instants []time.Time
	for _, d := range []time.Duration{-1, 0, 1, 7 * time.Minute, 7*time.Minute + 1, 15*time.Minute - 1, 15 * time.Minute,
		15*time.Minute + 1, 30*time.Minute + 1, 45*time.Minute - 1, 45 * time.Minute, time.Hour} {
		instants = append(instants, at(d))
	}
	model := map[rowKey]attribution.Row{}
	write := func(v float64, ts ...time.Time) {
		var rows []attribution.Row
		for i, ts := range ts {
			r := attribution.Row{Cluster: attribution.DefaultCluster, IntervalStart: ts, IntervalEnd: ts.Add(time.Minute), Node: "n", GPUUUID: "g", SliceID: "g",
				Kind: attribution.KindIdle, Team: fmt.Sprint(i % 3), UsedGPUSeconds: v / float64(3+i), EnergyJoules: float64(i)}
			rows = append(rows, r)
			model[keyOf(r)] = r
		}
		if err := s.Append(ctx, rows, nil); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string) {
		for _, from := range instants {
			for _, to := range instants {
				if !from.Before(to) {
					continue
				}
				for _, q := range []ledger.AggregateQuery{{From: from, To: to}, {From: from, To: to, Location: time.UTC, Bucket: ledger.BucketHour}} {
					got, err := s.Aggregate(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					if want := aggregateRaw(t, s, q); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: %s: rollup %+v, raw %+v", stage, describe(q), got, want)
					}
					checkModel(t, got, sumByKey(maps.Values(model), q), q)
				}
			}
		}
	}
	write(1, instants[:len(instants)-1]...) // the slot of 45m-1ns stays dirty
	check("newest slot dirty")
	write(1, at(3*time.Hour))
	check("all clean")
	write(2, at(30*time.Minute+1)) // a correction: the slot is dirty, its rollup stale
	check("stale slot dirty")
}
