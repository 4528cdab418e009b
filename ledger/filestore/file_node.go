package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/ledger"
)

// nodeEnergySQL sums the raw rows' energy of [?1, ?2) per group and node:
// the fallback of Aggregate with ByNode (aggregateNodes), which a report
// reads only when its price book gives some nodes their own carbon
// intensity.
const nodeEnergySQL = `SELECT grp, node, total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY grp, node`

// gpuNodesSQL lists the (node, GPU) pairs of [?1, ?2) from the rows' key
// index alone (interval_start_ns, node, gpu_uuid lead it), so no row is
// read.
const gpuNodesSQL = `SELECT DISTINCT %s, node, gpu_uuid FROM ledger_rows WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2`

// aggregateNodes is Aggregate with ByNode. A GPU sits in one node, so the
// per-device aggregates (from the device rollup) summed by their GPU's
// node are the per-node sums; the GPU-to-node map comes from the rows' key
// index. Where a GPU UUID appears on two nodes in the range (a simulator
// reusing names), the raw rows are summed per node instead.
func (s *FileStore) aggregateNodes(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	fail := func(err error) ([]ledger.Aggregate, error) {
		return nil, fmt.Errorf("cannot aggregate ledger %s per node: %w", s.path, err)
	}
	bs, err := queryBuckets(q)
	if err != nil {
		return fail(err)
	}
	dq := q
	dq.ByNode, dq.ByDevice = false, true
	devs, err := aggregateGrain(ctx, s, dq, &deviceGrain)
	if err != nil {
		return nil, err
	}
	// After the devices: a GPU they hold is in the map.
	nodes, ambiguous, err := s.gpuNodes(ctx, bs[0].lo, bs[len(bs)-1].hi)
	if err != nil {
		return fail(s.describe(err))
	}
	if ambiguous {
		return s.aggregateNodesRaw(ctx, bs)
	}
	type key struct {
		bucket                      int64
		team, ns, model, mode, kind string
		cluster, node               string
	}
	index := map[key]int{}
	var out []ledger.Aggregate
	for _, d := range devs {
		k := key{d.BucketStart.UnixNano(), d.Team, d.Namespace, d.GPUModel, d.Mode, string(d.Kind), d.Cluster, nodes[gpuKey{d.Cluster, d.GPUUUID}]}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ledger.Aggregate{BucketStart: d.BucketStart, Team: d.Team, Namespace: d.Namespace, GPUModel: d.GPUModel,
				Mode: d.Mode, Kind: d.Kind, Cluster: d.Cluster, Node: k.node})
		}
		out[i].EnergyJoules += d.EnergyJoules
		out[i].Rows += d.Rows
	}
	sortNodeAggregates(out)
	return out, nil
}

// gpuKey is a GPU of the fleet: two clusters may each have a GPU of one
// UUID (simulated nodes do).
type gpuKey struct{ cluster, gpu string }

// gpuNodes maps each GPU of [lo, hi) to its node; ambiguous is true
// when one UUID appears on two nodes of a cluster.
func (s *FileStore) gpuNodes(ctx context.Context, lo, hi int64) (nodes map[gpuKey]string, ambiguous bool, err error) {
	rs, err := s.r.QueryContext(ctx, fmt.Sprintf(gpuNodesSQL, s.clusterCol()), lo, hi)
	if err != nil {
		return nil, false, err
	}
	defer rs.Close()
	nodes = map[gpuKey]string{}
	for rs.Next() {
		var (
			k    gpuKey
			node string
		)
		if err := rs.Scan(&k.cluster, &node, &k.gpu); err != nil {
			return nil, false, err
		}
		if prev, ok := nodes[k]; ok && prev != node {
			ambiguous = true
		}
		nodes[k] = node
	}
	return nodes, ambiguous, rs.Err()
}

// aggregateNodesRaw sums the raw rows per bucket, group and node. In a
// file with checksums it first checks, in the same snapshot, every row of
// the range against its checksum (the node is read from the key index,
// whose copy the check covers) and each bucket's row count against the
// checked rollups' (verifyRange): a flipped bit in the key index is what
// makes a GPU look as if it sat on two nodes, and it must not bill.
func (s *FileStore) aggregateNodesRaw(ctx context.Context, bs []bucket) ([]ledger.Aggregate, error) {
	fail := func(err error) ([]ledger.Aggregate, error) {
		return nil, fmt.Errorf("cannot aggregate ledger %s per node: %w", s.path, s.describe(err))
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	var want map[int64]int64
	if s.hasChk {
		if want, err = verifyRange(ctx, tx, bs); err != nil {
			return fail(err)
		}
	}
	st, err := tx.PrepareContext(ctx, nodeEnergySQL)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	var out []ledger.Aggregate
	var grps []int64
	for _, b := range bs {
		rs, err := st.QueryContext(ctx, b.lo, b.hi)
		if err != nil {
			return fail(err)
		}
		for rs.Next() {
			var (
				grp int64
				a   = ledger.Aggregate{BucketStart: b.start}
			)
			if err := rs.Scan(&grp, &a.Node, &a.EnergyJoules, &a.Rows); err != nil {
				rs.Close()
				return fail(err)
			}
			out = append(out, a)
			grps = append(grps, grp)
		}
		err = rs.Err()
		rs.Close()
		if err != nil {
			return fail(err)
		}
	}
	if want != nil {
		got := map[int64]int64{}
		for _, a := range out {
			got[a.BucketStart.UnixNano()] += a.Rows
		}
		for _, b := range bs {
			if k := b.start.UnixNano(); got[k] != want[k] {
				return fail(errDamaged("the bucket from %s holds %d ledger rows by the key index and %d by the rollups", ledger.FormatTime(b.start), got[k], want[k]))
			}
		}
	}
	if err := s.nameGroups(ctx, out, grps); err != nil {
		return fail(err)
	}
	sortNodeAggregates(out)
	return out, nil
}

// verifyRange checks every raw row of bs's range against its checksum and
// returns each bucket's row count (by its start) as the checked rollups
// give it.
func verifyRange(ctx context.Context, tx *sql.Tx, bs []bucket) (map[int64]int64, error) {
	var bad int64
	q, err := badRowsSQL(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, q, bs[0].lo, bs[len(bs)-1].hi).Scan(&bad); err != nil {
		return nil, fmt.Errorf("cannot check ledger rows: %w", err)
	}
	if bad > 0 {
		return nil, errDamaged("%d ledger rows in [%s, %s) fail their checksums", bad, ledger.FormatTime(fromNS(bs[0].lo)), ledger.FormatTime(fromNS(bs[len(bs)-1].hi)))
	}
	acc, err := aggregateSlots(ctx, tx, bs, &teamGrain, true, nil)
	if err != nil {
		return nil, err
	}
	want := map[int64]int64{}
	for _, a := range acc.out {
		want[a.BucketStart.UnixNano()] += a.Rows
	}
	return want, nil
}

func sortNodeAggregates(out []ledger.Aggregate) {
	slices.SortFunc(out, func(x, y ledger.Aggregate) int {
		if c := x.BucketStart.Compare(y.BucketStart); c != 0 {
			return c
		}
		return strings.Compare(x.Team+"\x00"+x.Namespace+"\x00"+x.GPUModel+"\x00"+x.Mode+"\x00"+string(x.Kind)+"\x00"+x.Cluster+"\x00"+x.Node,
			y.Team+"\x00"+y.Namespace+"\x00"+y.GPUModel+"\x00"+y.Mode+"\x00"+string(y.Kind)+"\x00"+y.Cluster+"\x00"+y.Node)
	})
}
