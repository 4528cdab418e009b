package allocation

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/workload"
)

// Source is the cheapest read that gives a grouping its fields.
type Source string

const (
	// SourceRollups: Store.Aggregate's day (or hour) aggregates, the
	// report's own read: team, namespace, gpu_model, sharing_mode.
	SourceRollups Source = "rollups"
	// SourceDevices: the per-device aggregates (ByDevice, the FOCUS
	// export's grain): adds pod and workload.
	SourceDevices Source = "devices"
	// SourceContainerRows: every container row (Store.ContainerRows):
	// adds container and node. The only read with those fields, and the
	// dearest (a row per container and ledger interval).
	SourceContainerRows Source = "container_rows"
)

// SourceFor is the read a query's fields (grouped and filtered) need.
func SourceFor(dims []Dim) Source {
	src := SourceRollups
	for _, d := range dims {
		switch d {
		case Container, Node:
			return SourceContainerRows
		case Pod, Workload:
			src = SourceDevices
		}
	}
	return src
}

// maxGroups bounds the (day, pod, container, node) groups a container
// rows read holds in memory.
const maxGroups = 1_000_000

// sep joins a line's extra fields to its namespace: no Kubernetes name
// holds it.
const sep = "\x1f"

// extra are the fields that ride in an aggregate's namespace, in order.
var extra = []Dim{Workload, Pod, Container, Node}

func encode(ns, wl, pod, ctr, node string) string {
	vs := []string{ns, wl, pod, ctr, node}
	for i, v := range vs {
		// Kubernetes names never hold it; a ledger row that does cannot
		// split its line into someone else's fields.
		vs[i] = strings.ReplaceAll(v, sep, "\uFFFD")
	}
	return strings.Join(vs, sep)
}

// decode splits a line's namespace into the namespace and its extra
// fields; a line the source did not encode (platform, rounding, a quota
// line) has none.
func decode(ns string) (string, [4]string) {
	var x [4]string
	if strings.Count(ns, sep) != 4 {
		return ns, x
	}
	// Cut, not Split: a month by pod decodes 70,000 lines.
	first, rest, _ := strings.Cut(ns, sep)
	for i := range 3 {
		x[i], rest, _ = strings.Cut(rest, sep)
	}
	x[3] = rest
	return first, x
}

// bucketed is a window's aggregates at one grain, per calendar bucket:
// bucket i's are all[at[i]:at[i+1]], in the order they were read.
type bucketed struct {
	buckets []calendar.Bucket
	all     []ledger.Aggregate
	at      []int
}

// grainSource is the ledger as the report reads it for one query: plain
// aggregate queries are answered at the query's grain, from what was read
// once for the window; every other read goes to the store.
type grainSource struct {
	st       ledger.Store
	loc      *time.Location
	src      Source
	from, to time.Time
	// The window's report and the steps' are built at once (Run), so
	// what they share is read once, by whoever asks first (the others
	// wait for it): the aggregates at each bucket unit and cluster, and
	// the recorded price books. mu guards the two fields.
	mu    sync.Mutex
	cache map[string]func() (*bucketed, error) // by bucket unit and cluster (cacheKey)
	books func() ([]ledger.PriceBookRecord, error)
	// quotaPriced: the book bills quota (policy quota), so a step's
	// report needs the quota changes; under any other policy they only
	// fill the report's quota section, which a step does not show.
	quotaPriced bool
}

func cacheKey(unit, cluster string) string { return unit + "\x00" + cluster }

// load is the window at unit (day or hour), of one cluster ("" the whole
// ledger), read once per query.
func (g *grainSource) load(ctx context.Context, unit, cluster string) (*bucketed, error) {
	g.mu.Lock()
	read := g.cache[cacheKey(unit, cluster)]
	if read == nil {
		read = sync.OnceValues(func() (*bucketed, error) { return g.readBucketed(ctx, unit, cluster) })
		g.cache[cacheKey(unit, cluster)] = read
	}
	g.mu.Unlock()
	return read()
}

// readBucketed reads the window at unit, of one cluster, placed in its
// buckets.
func (g *grainSource) readBucketed(ctx context.Context, unit, cluster string) (*bucketed, error) {
	bs, err := calendar.Buckets(g.from, g.to, g.loc, unit)
	if err != nil {
		return nil, err
	}
	aggs, err := g.read(ctx, g.from, g.to, unit, bs, cluster)
	if err != nil {
		return nil, err
	}
	// Placed in one array, counted first: a month by pod is some 36,000
	// large aggregates, and growing a slice per bucket copied them twice.
	idx := map[int64]int{}
	for i, k := range bs {
		idx[k.Start.UnixNano()] = i
	}
	in := make([]int, len(aggs))
	b := &bucketed{buckets: bs, all: make([]ledger.Aggregate, len(aggs)), at: make([]int, len(bs)+1)}
	for j := range aggs {
		i, ok := idx[aggs[j].BucketStart.UnixNano()]
		if !ok {
			return nil, fmt.Errorf("cannot place the ledger's %s bucket %s in the window", unit, aggs[j].BucketStart.Format(time.RFC3339))
		}
		in[j] = i
		b.at[i+1]++
	}
	for i := range bs {
		b.at[i+1] += b.at[i]
	}
	next := slices.Clone(b.at[:len(bs)])
	for j := range aggs {
		b.all[next[in[j]]] = aggs[j]
		next[in[j]]++
	}
	return b, nil
}

// bucket is bucket i's aggregates, capped: an append by a reader copies.
func (b *bucketed) bucket(i int) []ledger.Aggregate { return b.all[b.at[i]:b.at[i+1]:b.at[i+1]] }

// read is [from, to)'s aggregates at unit and the source's grain, of one
// cluster ("" the whole ledger).
func (g *grainSource) read(ctx context.Context, from, to time.Time, unit string, bs []calendar.Bucket, cluster string) ([]ledger.Aggregate, error) {
	q := ledger.AggregateQuery{From: from, To: to, Location: g.loc, Bucket: unit, Cluster: cluster}
	switch g.src {
	case SourceRollups:
		return g.st.Aggregate(ctx, q)
	case SourceDevices:
		q.ByDevice = true
		aggs, err := g.st.Aggregate(ctx, q)
		if err != nil {
			return nil, err
		}
		for i := range aggs {
			a := &aggs[i]
			if a.Kind == attribution.KindContainer {
				a.Namespace = encode(a.Namespace, workload.FromPod(a.Pod), a.Pod, "", "")
			}
		}
		return resum(aggs), nil
	}
	// A store that sums per container itself (ClickHouse, from its
	// per-device rollups) answers in one read; the same sums as below.
	if ca, ok := g.st.(ledger.ContainerAggregator); ok {
		aggs, err := ca.AggregateContainers(ctx, q)
		if err != nil {
			return nil, err
		}
		for i := range aggs {
			a := &aggs[i]
			if a.Kind == attribution.KindContainer {
				a.Namespace = encode(a.Namespace, workload.FromPod(a.Pod), a.Pod, a.Container, a.Node)
			}
			a.Container, a.Node = "", ""
		}
		return resum(aggs), nil
	}
	// Container rows: the platform's kinds from the rollups (they have no
	// container or pod), the containers' own from their rows.
	aggs, err := g.st.Aggregate(ctx, q)
	if err != nil {
		return nil, err
	}
	out := aggs[:0]
	for _, a := range aggs {
		if a.Kind != attribution.KindContainer {
			out = append(out, a)
		}
	}
	if bs == nil {
		if bs, err = calendar.Buckets(from, to, g.loc, unit); err != nil {
			return nil, err
		}
	}
	type key struct {
		b                                     int
		team, ns, model, mode, pod, ctr, node string
	}
	sums := map[key]*ledger.Aggregate{}
	err = g.st.ContainerRows(ctx, from, to, func(r attribution.Row) error {
		if cluster != "" && ledger.ClusterOrDefault(r.Cluster) != cluster {
			return nil
		}
		i := sort.Search(len(bs), func(i int) bool { return bs[i].To.After(r.IntervalStart) })
		if i == len(bs) || r.IntervalStart.Before(bs[i].From) {
			return fmt.Errorf("ledger row of pod %q starting %s is outside the window", r.Pod, r.IntervalStart.Format(time.RFC3339))
		}
		k := key{i, r.Team, r.Namespace, r.GPUModel, r.SharingMode, r.Pod, r.Container, r.Node}
		a := sums[k]
		if a == nil {
			if len(sums) >= maxGroups {
				return &ParamError{Param: "window", Msg: fmt.Sprintf("more than %d containers a day in the window: use a shorter window or group without container and node", maxGroups)}
			}
			a = &ledger.Aggregate{BucketStart: bs[i].Start, Team: r.Team, GPUModel: r.GPUModel, Mode: r.SharingMode,
				Kind: attribution.KindContainer, Namespace: encode(r.Namespace, workload.FromPod(r.Pod), r.Pod, r.Container, r.Node)}
			sums[k] = a
		}
		a.AllocatedSeconds += r.AllocatedGPUSeconds
		a.UsedSeconds += r.UsedGPUSeconds
		a.MemoryMiBSeconds += r.MemoryMiBSeconds
		a.EnergyJoules += r.EnergyJoules
		a.Rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range sums {
		out = append(out, *a)
	}
	return out, nil
}

// resum adds up aggregates that differ only in the per-device fields,
// which the report does not read.
func resum(aggs []ledger.Aggregate) []ledger.Aggregate {
	type key struct {
		at                    int64
		team, ns, model, mode string
		kind                  attribution.Kind
	}
	idx := make(map[key]int, len(aggs))
	out := make([]ledger.Aggregate, 0, len(aggs))
	for _, a := range aggs {
		k := key{a.BucketStart.UnixNano(), a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind}
		i, ok := idx[k]
		if !ok {
			a.GPUUUID, a.SliceID, a.Pod, a.MIGProfile, a.Container, a.Node = "", "", "", "", "", ""
			idx[k] = len(out)
			out = append(out, a)
			continue
		}
		o := &out[i]
		o.AllocatedSeconds += a.AllocatedSeconds
		o.UsedSeconds += a.UsedSeconds
		o.MemoryMiBSeconds += a.MemoryMiBSeconds
		o.EnergyJoules += a.EnergyJoules
		o.Rows += a.Rows
	}
	return out
}

// view is what one report build reads: the grain source at one bucket
// unit (a step of hours hands the report hour buckets, each priced as the
// report prices a day), with the abilities the report asks of a store.
// A step's view lists no coverage, findings or rows: those only say how
// partial the data is, which the window's own build says (fullView).
type view struct {
	g    *grainSource
	unit string
}

func (v view) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.ByDevice || q.ByNode || q.ByCluster || q.Bucket != ledger.BucketDay {
		return v.g.st.Aggregate(ctx, q) // the report's own reads (edges, carbon, clusters)
	}
	b, err := v.g.load(ctx, v.unit, q.Cluster)
	if err != nil {
		return nil, err
	}
	lo, hi := -1, -1
	for i, k := range b.buckets {
		if k.To.After(q.From) && k.From.Before(q.To) {
			if k.From.Before(q.From) || k.To.After(q.To) {
				// A range that cuts a bucket (a price book in force from
				// within it) is read as asked.
				return v.g.read(ctx, q.From, q.To, v.unit, nil, q.Cluster)
			}
			if lo < 0 {
				lo = i
			}
			hi = i + 1
		}
	}
	if lo < 0 {
		return nil, nil
	}
	// The buckets in range are one run of the array, handed over without
	// a copy (the report only reads what it is given), capped so that an
	// append copies.
	return b.all[b.at[lo]:b.at[hi]:b.at[hi]], nil
}

func (v view) Findings(context.Context, time.Time, time.Time, func(attribution.Finding) error) error {
	return nil
}

func (v view) Coverage(context.Context, time.Time, time.Time) (ledger.Coverage, error) {
	return ledger.Coverage{}, nil
}

func (v view) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	if !v.g.quotaPriced {
		return nil
	}
	return v.quotaChanges(ctx, from, to, fn)
}

func (v view) quotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	qr, err := ledger.Quota(v.g.st)
	if err != nil {
		return err
	}
	return qr.QuotaChanges(ctx, from, to, fn)
}

func (v view) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	nr, err := ledger.NodeLabels(v.g.st)
	if err != nil {
		return nil, err
	}
	return nr.NodeLabels(ctx, key, at)
}

// PriceBooks are the books the ledger records (none where it records
// none): the report prices each hour at the book then in force.
func (v view) PriceBooks(ctx context.Context) ([]ledger.PriceBookRecord, error) {
	v.g.mu.Lock()
	read := v.g.books
	if read == nil {
		read = sync.OnceValues(func() ([]ledger.PriceBookRecord, error) {
			if ps, ok := v.g.st.(ledger.PriceBookStore); ok {
				return ps.PriceBooks(ctx)
			}
			return nil, nil
		})
		v.g.books = read
	}
	v.g.mu.Unlock()
	return read()
}

// RecordPriceBook refuses: the API only reads.
func (v view) RecordPriceBook(context.Context, ledger.PriceBookRecord, time.Time) (bool, error) {
	return false, fmt.Errorf("the allocation API does not record price books")
}

// fullView is the window's build: its findings, coverage and edge rows
// come from the store, so partial and the data's bounds are the report's.
type fullView struct{ view }

func (v fullView) Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	return v.g.st.Findings(ctx, from, to, fn)
}

func (v fullView) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	cr, err := ledger.Covered(v.g.st)
	if err != nil {
		return ledger.Coverage{}, err
	}
	return cr.Coverage(ctx, from, to)
}

// QuotaChanges: the window's report has its quota section, as report's.
func (v fullView) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	return v.quotaChanges(ctx, from, to, fn)
}

func (v fullView) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	return v.g.st.Rows(ctx, from, to, fn)
}

// rowBounder is a store that finds the extremes of its rows itself
// (ClickHouse, in the server), as report asks of its source: the window's
// build passes it on, so the data bounds cost what report's do.
type rowBounder interface {
	FirstRowStart(ctx context.Context, from, to time.Time) (time.Time, error)
	LastRowStart(ctx context.Context, from, to time.Time) (time.Time, error)
	LastRowEnd(ctx context.Context, from, to time.Time) (time.Time, error)
}

// boundedView is a fullView over a store that is a rowBounder.
type boundedView struct {
	fullView
	rowBounder
}

// windowSource is the window's build over g's store: a fullView, which
// finds its data bounds as the store does.
func windowSource(g *grainSource) report.Source {
	v := fullView{view{g, ledger.BucketDay}}
	if rb, ok := g.st.(rowBounder); ok {
		return boundedView{v, rb}
	}
	return v
}

// fleetOf is src as the ledger.Store report.BuildFleet takes: a
// fleetSource, or where src streams the store's rows (the window's
// source) and the store finds one cluster's row bounds itself, a
// boundedFleet, so that each cluster's view (ledger.OneCluster) finds its
// edges in the store as the window's report over one cluster does. A
// step's view streams no rows and keeps its days' bounds: it gets no
// bounds either.
func fleetOf(st ledger.Store, src report.Source) ledger.Store {
	f := fleetSource{st, src}
	if _, rows := src.(ledger.RowReader); rows {
		if cb, ok := st.(ledger.ClusterRowBounder); ok {
			return boundedFleet{f, cb}
		}
	}
	return f
}

// boundedFleet is a fleetSource of the window over a store that is a
// ledger.ClusterRowBounder.
type boundedFleet struct {
	fleetSource
	ledger.ClusterRowBounder
}

// fleetSource is a view (or the window's source) as the ledger.Store
// report.BuildFleet takes for a fleet of several clusters, which it sees
// cluster by cluster through ledger.OneCluster: the view answers every
// read the report makes, the store the rest (writes, Close). A view
// streams no rows (a step keeps its days' bounds); the window's does.
type fleetSource struct {
	ledger.Store
	v report.Source
}

func (f fleetSource) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	return f.v.Aggregate(ctx, q)
}

func (f fleetSource) Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	return f.v.Findings(ctx, from, to, fn)
}

func (f fleetSource) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	if rr, ok := f.v.(ledger.RowReader); ok {
		return rr.Rows(ctx, from, to, fn)
	}
	return nil
}

func (f fleetSource) Coverage(ctx context.Context, from, to time.Time) (ledger.Coverage, error) {
	if cr, ok := f.v.(ledger.CoverageReader); ok {
		return cr.Coverage(ctx, from, to)
	}
	return ledger.Coverage{}, nil
}

func (f fleetSource) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	if qr, ok := f.v.(ledger.QuotaReader); ok {
		return qr.QuotaChanges(ctx, from, to, fn)
	}
	return nil
}

func (f fleetSource) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	if nr, ok := f.v.(ledger.NodeLabelReader); ok {
		return nr.NodeLabels(ctx, key, at)
	}
	return nil, nil
}

func (f fleetSource) PriceBooks(ctx context.Context) ([]ledger.PriceBookRecord, error) {
	if ps, ok := f.v.(ledger.PriceBookStore); ok {
		return ps.PriceBooks(ctx)
	}
	return nil, nil
}

// RecordPriceBook refuses: the API only reads.
func (f fleetSource) RecordPriceBook(context.Context, ledger.PriceBookRecord, time.Time) (bool, error) {
	return false, fmt.Errorf("the allocation API does not record price books")
}

var (
	_ ledger.Store             = fleetSource{}
	_ ledger.PriceBookStore    = fleetSource{}
	_ ledger.CoverageReader    = fleetSource{}
	_ ledger.ClusterRowBounder = boundedFleet{}
	_ ledger.PriceBookStore    = view{}
	_ ledger.QuotaReader       = view{}
	_ ledger.NodeLabelReader   = view{}
	_ ledger.CoverageReader    = fullView{}
	_ ledger.RowReader         = fullView{}
)
