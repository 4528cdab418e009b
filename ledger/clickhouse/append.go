package clickhouse

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// Column lists of the inserts, in the order the column slices are built.
var (
	rowInsertColumns = []string{
		"interval_start", "interval_start_ns", "interval_end", "interval_end_ns",
		"node", "gpu_uuid", "gpu_model", "slice_id", "sharing_mode", "kind",
		"namespace", "pod", "pod_uid", "container", "team", "mig_profile",
		"allocated_gpu_seconds", "used_gpu_seconds", "memory_mib_seconds", "energy_joules",
		"method", "version", "cluster",
	}
	findingInsertColumns = []string{
		"start_time", "start_ns", "end_time", "end_ns", "kind", "node", "gpu_uuid",
		"namespace", "pod", "container", "team", "detail", "noisy_pod", "version", "cluster",
	}
)

// DateTime holds unsigned 32-bit seconds.
var (
	minStorable = time.Unix(0, 0)
	maxStorable = time.Unix(math.MaxUint32-1, 0)
)

func storable(t time.Time) bool { return !t.Before(minStorable) && t.Before(maxStorable) }

// Append inserts rows and findings, then marks the hours the rows touched so
// that rollup builds know what they have not seen yet. ClickHouse has no
// transactions: a failure part-way leaves some of the data written, and the
// caller's retry of the whole call (the shipper's at-least-once) replaces it
// through the deterministic keys.
func (s *Store) Append(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error {
	if err := validateRows(rows); err != nil {
		return err
	}
	if err := validateFindings(findings); err != nil {
		return err
	}
	// One version per call: a later write of the same key wins.
	version := uint64(time.Now().UnixNano())
	if len(rows) > 0 {
		buf, cols := rowColumns(rows, version)
		err := s.insert(ctx, tableRows, rowInsertColumns, cols, len(rows))
		buf.release()
		if err != nil {
			return err
		}
	}
	if len(findings) > 0 {
		cols := findingColumns(findings, version)
		if err := s.insert(ctx, tableFindings, findingInsertColumns, cols, len(findings)); err != nil {
			return err
		}
	}
	return s.mark(ctx, touchedHours(rows))
}

// insert sends one batch with explicit columns, retrying the whole batch:
// a failed batch may or may not have been stored, and a second copy is
// collapsed by the table's key.
func (s *Store) insert(ctx context.Context, name string, columns []string, cols []any, n int) error {
	query := "INSERT INTO " + s.table(name) + " (" + strings.Join(columns, ", ") + ")"
	err := s.retry(ctx, "insert "+name, func(ctx context.Context) error {
		b, err := s.conn.PrepareBatch(s.writeCtx(ctx), query)
		if err != nil {
			return err
		}
		for lo := 0; lo < n; lo += insertBlockRows {
			hi := min(n, lo+insertBlockRows)
			if err := appendColumns(b, cols, lo, hi); err != nil {
				_ = b.Abort()
				return err
			}
			if hi < n {
				if err := b.Flush(); err != nil {
					_ = b.Abort()
					return err
				}
			}
		}
		return b.Send()
	})
	if err != nil {
		return s.describe(fmt.Sprintf("cannot insert %d rows into %s on %s", n, s.table(name), s.addr), err)
	}
	return nil
}

func appendColumns(b driver.Batch, cols []any, lo, hi int) error {
	for i, c := range cols {
		if err := b.Column(i).Append(sliceColumn(c, lo, hi)); err != nil {
			return permanent("cannot fill column %d of the batch: %w", i, err)
		}
	}
	return nil
}

// mark records, after the rows are stored, that this writer touched hours.
// The sequence number is taken only now so that any mark a rollup build has
// seen belongs to a write that completed before the build read raw rows.
func (s *Store) mark(ctx context.Context, hours []time.Time) error {
	if len(hours) == 0 {
		return nil
	}
	seq := s.seq.Add(1)
	hs := make([]time.Time, len(hours))
	ws := make([]string, len(hours))
	qs := make([]uint64, len(hours))
	for i, h := range hours {
		hs[i], ws[i], qs[i] = h, s.writer, seq
	}
	return s.insert(ctx, tableMarks, []string{"hour", "writer", "seq"}, []any{hs, ws, qs}, len(hours))
}

// touchedHours returns the distinct UTC hours of the rows' interval starts.
func touchedHours(rows []attribution.Row) []time.Time {
	seen := map[int64]bool{}
	for i := range rows {
		seen[hourOf(rows[i].IntervalStart)] = true
	}
	out := make([]time.Time, 0, len(seen))
	for h := range seen {
		out = append(out, time.Unix(h, 0).UTC())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// hourOf is the unix second of the UTC hour t falls in.
func hourOf(t time.Time) int64 {
	u := t.Unix()
	return u - mod(u, 3600)
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// insertBlockRows is how many rows go to the server per block: the client
// reuses one block's buffers, so a large Append neither holds a second copy
// of itself nor churns the garbage collector.
const insertBlockRows = 1 << 14

// rowCols are the insert columns of ledger rows, pooled across Appends.
// Times are int64 unix seconds: no pointers for the collector to scan.
type rowCols struct {
	starts, ends          []int64
	startNs, endNs        []uint32
	str                   [12][]string
	alloc, used, mem, erg []float64
	method                []string
	versions              []uint64
	cluster               []string
}

// rowColsFree keeps a few column buffers across Appends; unlike a
// sync.Pool it is not emptied by every garbage collection.
var rowColsFree = make(chan *rowCols, 4)

func rowColumns(rows []attribution.Row, version uint64) (*rowCols, []any) {
	var c *rowCols
	select {
	case c = <-rowColsFree:
	default:
		c = new(rowCols)
	}
	c.starts, c.ends, c.startNs, c.endNs = c.starts[:0], c.ends[:0], c.startNs[:0], c.endNs[:0]
	for j := range c.str {
		c.str[j] = c.str[j][:0]
	}
	c.alloc, c.used, c.mem, c.erg = c.alloc[:0], c.used[:0], c.mem[:0], c.erg[:0]
	c.method, c.versions, c.cluster = c.method[:0], c.versions[:0], c.cluster[:0]
	for i := range rows {
		r := &rows[i]
		c.starts, c.startNs = append(c.starts, r.IntervalStart.Unix()), append(c.startNs, uint32(r.IntervalStart.Nanosecond()))
		c.ends, c.endNs = append(c.ends, r.IntervalEnd.Unix()), append(c.endNs, uint32(r.IntervalEnd.Nanosecond()))
		for j, v := range [12]string{r.Node, r.GPUUUID, r.GPUModel, r.SliceID, r.SharingMode, string(r.Kind),
			r.Namespace, r.Pod, r.PodUID, r.Container, r.Team, r.MIGProfile} {
			c.str[j] = append(c.str[j], v)
		}
		c.alloc, c.used = append(c.alloc, r.AllocatedGPUSeconds), append(c.used, r.UsedGPUSeconds)
		c.mem, c.erg = append(c.mem, r.MemoryMiBSeconds), append(c.erg, r.EnergyJoules)
		c.method, c.versions = append(c.method, r.Method), append(c.versions, version)
		c.cluster = append(c.cluster, ledger.ClusterOrDefault(r.Cluster))
	}
	cols := []any{c.starts, c.startNs, c.ends, c.endNs}
	for j := range c.str {
		cols = append(cols, c.str[j])
	}
	return c, append(cols, c.alloc, c.used, c.mem, c.erg, c.method, c.versions, c.cluster)
}

// release returns the buffers to the pool, dropping the strings they point
// to so pooled buffers do not keep old rows alive.
func (c *rowCols) release() {
	for j := range c.str {
		clear(c.str[j])
	}
	clear(c.method)
	clear(c.cluster)
	select {
	case rowColsFree <- c:
	default:
	}
}

func findingColumns(fs []attribution.Finding, version uint64) []any {
	n := len(fs)
	starts, ends := make([]int64, n), make([]int64, n)
	startNs, endNs := make([]uint32, n), make([]uint32, n)
	var str [9][]string
	for j := range str {
		str[j] = make([]string, n)
	}
	versions := make([]uint64, n)
	clusters := make([]string, n)
	for i := range fs {
		f := &fs[i]
		starts[i], startNs[i] = f.Start.Unix(), uint32(f.Start.Nanosecond())
		ends[i], endNs[i] = f.End.Unix(), uint32(f.End.Nanosecond())
		str[0][i], str[1][i], str[2][i], str[3][i] = f.Kind, f.Node, f.GPUUUID, f.Namespace
		str[4][i], str[5][i], str[6][i], str[7][i], str[8][i] = f.Pod, f.Container, f.Team, f.Detail, f.NoisyPod
		versions[i], clusters[i] = version, ledger.ClusterOrDefault(f.Cluster)
	}
	cols := []any{starts, startNs, ends, endNs}
	for j := range str {
		cols = append(cols, str[j])
	}
	return append(cols, versions, clusters)
}

// sliceColumn returns rows [lo, hi) of a column slice.
func sliceColumn(c any, lo, hi int) any {
	switch v := c.(type) {
	case []int64:
		return v[lo:hi]
	case []uint8:
		return v[lo:hi]
	case []uint32:
		return v[lo:hi]
	case []uint64:
		return v[lo:hi]
	case [][]uint64:
		return v[lo:hi]
	case []float64:
		return v[lo:hi]
	case []string:
		return v[lo:hi]
	case []time.Time:
		return v[lo:hi]
	}
	panic(fmt.Sprintf("sliceColumn: unexpected column type %T", c))
}

func validateRows(rows []attribution.Row) error {
	for i := range rows {
		r := &rows[i]
		where := func() string {
			return fmt.Sprintf("ledger row %d (node %q, gpu %q, slice %q, container %q, interval %s)",
				i, r.Node, r.GPUUUID, r.SliceID, r.Container, r.IntervalStart.UTC().Format(time.RFC3339Nano))
		}
		switch {
		case !storable(r.IntervalStart) || !storable(r.IntervalEnd):
			return permanent("%s: interval times outside 1970-2106, which ClickHouse DateTime cannot hold", where())
		case r.IntervalEnd.Before(r.IntervalStart):
			return permanent("%s: interval ends before it starts", where())
		}
		if err := ledger.CheckRowCluster(r.Cluster); err != nil {
			return permanent("%s: %w", where(), err)
		}
		for _, v := range []struct {
			name string
			v    float64
		}{
			{"allocated_gpu_seconds", r.AllocatedGPUSeconds}, {"used_gpu_seconds", r.UsedGPUSeconds},
			{"memory_mib_seconds", r.MemoryMiBSeconds}, {"energy_joules", r.EnergyJoules},
		} {
			if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
				return permanent("%s: %s is %v", where(), v.name, v.v)
			}
		}
	}
	return nil
}

func validateFindings(fs []attribution.Finding) error {
	for i := range fs {
		f := &fs[i]
		if !storable(f.Start) || !storable(f.End) || f.End.Before(f.Start) {
			return permanent("finding %d (%s, node %q, gpu %q, pod %q): start/end reversed or outside 1970-2106",
				i, f.Kind, f.Node, f.GPUUUID, f.Pod)
		}
		if err := ledger.CheckRowCluster(f.Cluster); err != nil {
			return permanent("finding %d (%s, node %q): %w", i, f.Kind, f.Node, err)
		}
	}
	return nil
}
