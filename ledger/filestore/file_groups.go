package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// groupKey is what reports group by. Rows store it as one integer (grp)
// into row_groups: GROUP BY then sorts integers instead of five strings
// (about three times faster in SQLite), and rows are smaller.
// The cluster is part of the group, so the rollups, which are keyed by
// group, split by cluster without a column of their own.
type groupKey struct{ cluster, team, namespace, model, mode, kind string }

func groupOf(r *attribution.Row) groupKey {
	return groupKey{ledger.ClusterOrDefault(r.Cluster), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind)}
}

// groupCache mirrors row_groups. Groups are never deleted or changed, so
// an id seen once stays valid; an unknown id (written by another process)
// reloads the table.
type groupCache struct {
	mu   sync.RWMutex
	ids  map[groupKey]int64
	keys map[int64]groupKey
}

func newGroupCache() *groupCache {
	return &groupCache{ids: map[groupKey]int64{}, keys: map[int64]groupKey{}}
}

func (c *groupCache) id(k groupKey) (int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.ids[k]
	return id, ok
}

// add records groups once the transaction that created them committed.
func (c *groupCache) add(m map[groupKey]int64) {
	if len(m) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, id := range m {
		c.ids[k], c.keys[id] = id, k
	}
}

func (c *groupCache) key(ctx context.Context, db *sql.DB, id int64) (groupKey, error) {
	c.mu.RLock()
	k, ok := c.keys[id]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	if err := c.load(ctx, db); err != nil {
		return groupKey{}, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if k, ok = c.keys[id]; !ok {
		return groupKey{}, errDamaged("row group %d missing from row_groups", id)
	}
	return k, nil
}

func (c *groupCache) load(ctx context.Context, db *sql.DB) error {
	col := "'" + attribution.DefaultCluster + "'"
	if has, err := hasColumn(ctx, db, "row_groups", "cluster"); err != nil {
		return err
	} else if has {
		col = "cluster"
	}
	rs, err := db.QueryContext(ctx, "SELECT id, "+col+", team, namespace, gpu_model, sharing_mode, kind FROM row_groups")
	if err != nil {
		return fmt.Errorf("cannot read row groups: %w", err)
	}
	defer rs.Close()
	m := map[groupKey]int64{}
	for rs.Next() {
		var (
			id int64
			k  groupKey
		)
		if err := rs.Scan(&id, &k.cluster, &k.team, &k.namespace, &k.model, &k.mode, &k.kind); err != nil {
			return fmt.Errorf("cannot read row groups: %w", err)
		}
		m[k] = id
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("cannot read row groups: %w", err)
	}
	c.add(m)
	return nil
}

// groupIDs resolves the groups of a transaction's rows, creating missing
// ones in tx; created holds those to add to the cache after the commit.
type groupIDs struct {
	cache   *groupCache
	tx      *sql.Tx
	insert  *sql.Stmt
	created map[groupKey]int64
}

func (g *groupIDs) id(ctx context.Context, k groupKey) (int64, error) {
	if id, ok := g.cache.id(k); ok {
		return id, nil
	}
	if id, ok := g.created[k]; ok {
		return id, nil
	}
	if g.insert == nil {
		var err error
		// DO UPDATE (a no-op) rather than DO NOTHING so RETURNING also
		// yields the id of a group another process created.
		g.insert, err = g.tx.PrepareContext(ctx, `INSERT INTO row_groups (cluster, team, namespace, gpu_model, sharing_mode, kind)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (cluster, team, namespace, gpu_model, sharing_mode, kind) DO UPDATE SET team = excluded.team
RETURNING id`)
		if err != nil {
			return 0, fmt.Errorf("cannot prepare row group insert: %w", err)
		}
		g.created = map[groupKey]int64{}
	}
	var id int64
	if err := g.insert.QueryRowContext(ctx, k.cluster, k.team, k.namespace, k.model, k.mode, k.kind).Scan(&id); err != nil {
		return 0, fmt.Errorf("cannot store row group: %w", err)
	}
	g.created[k] = id
	return id, nil
}
