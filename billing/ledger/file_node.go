package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/attribution"
)

// nodeEnergySQL sums the raw rows' energy of [?1, ?2) per group and node:
// Aggregate with ByNode, which a report reads only when its price book
// gives some nodes their own carbon intensity. The rollups do not keep the
// node, so this reads the raw rows (by the interval-start index).
const nodeEnergySQL = `SELECT grp, node, total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY grp, node`

// aggregateNodes is Aggregate with ByNode: energy and row counts per
// bucket, group and node, from one snapshot.
func (s *FileStore) aggregateNodes(ctx context.Context, q AggregateQuery) ([]Aggregate, error) {
	fail := func(err error) ([]Aggregate, error) {
		return nil, fmt.Errorf("cannot aggregate ledger %s per node: %w", s.path, err)
	}
	bs, err := queryBuckets(q)
	if err != nil {
		return fail(err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, nodeEnergySQL)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	var out []Aggregate
	var grps []int64
	for _, b := range bs {
		rs, err := st.QueryContext(ctx, b.lo, b.hi)
		if err != nil {
			return fail(err)
		}
		for rs.Next() {
			var (
				grp int64
				a   = Aggregate{BucketStart: b.start}
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
	for i := range out {
		g, err := s.groups.key(ctx, s.w, grps[i])
		if err != nil {
			return fail(err)
		}
		a := &out[i]
		a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind = g.team, g.namespace, g.model, g.mode, attribution.Kind(g.kind)
	}
	slices.SortFunc(out, func(x, y Aggregate) int {
		if c := x.BucketStart.Compare(y.BucketStart); c != 0 {
			return c
		}
		return strings.Compare(x.Team+"\x00"+x.Namespace+"\x00"+x.GPUModel+"\x00"+x.Mode+"\x00"+string(x.Kind)+"\x00"+x.Node,
			y.Team+"\x00"+y.Namespace+"\x00"+y.GPUModel+"\x00"+y.Mode+"\x00"+string(y.Kind)+"\x00"+y.Node)
	})
	return out, nil
}
