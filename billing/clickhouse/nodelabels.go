package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
)

var _ nodelabel.Store = (*Store)(nil)

// tableNodeLabels holds node label changes (migration 5): one row per
// change of a node's label, keyed to the second. A replay inserts the same
// key again under a newer version and collapses to one row; reads use
// FINAL, so they never see two.
const tableNodeLabels = "node_labels"

var nodeLabelsTable = table{
	name: tableNodeLabels,
	columns: `node String,
	key String,
	at DateTime('UTC'),
	value String,
	deleted UInt8,
	version UInt64`,
	engine: "ReplacingMergeTree", args: "version",
	// No partitions: a fleet's label changes are a few rows a month.
	orderBy: "key, node, at",
	// Every change of one node on one shard, so a replay collapses there.
	shardKey: "cityHash64(node)",
}

var nodeLabelsInsertColumns = []string{"node", "key", "at", "value", "deleted", "version"}

// AppendNodeLabels inserts node label changes (nodelabel.Store) with the
// checks of the embedded ledger (nodelabel.Validate), At within
// DateTime's 1970-2106 and stored to the second. One version per call: a
// later call writing the same key and second wins, and a replay changes
// nothing. A failure may leave part of the call written, which the
// caller's retry of the whole call replaces.
func (s *Store) AppendNodeLabels(ctx context.Context, changes []nodelabel.Change) error {
	if err := nodelabel.Validate(changes, minStorable, maxStorable); err != nil {
		return permanentError{fmt.Errorf("cannot append node label changes to %s: %w", s.table(tableNodeLabels), err)}
	}
	n := len(changes)
	if n == 0 {
		return nil
	}
	version := uint64(time.Now().UnixNano())
	var (
		node, key, value = make([]string, n), make([]string, n), make([]string, n)
		at               = make([]int64, n)
		deleted          = make([]uint8, n)
		versions         = make([]uint64, n)
	)
	for i := range changes {
		c := &changes[i]
		node[i], key[i], value[i], at[i], versions[i] = c.Node, c.Key, c.Value, c.At.Unix(), version
		if c.Deleted {
			deleted[i] = 1
		}
	}
	return s.insert(ctx, tableNodeLabels, nodeLabelsInsertColumns, []any{node, key, at, value, deleted, versions}, n)
}

// NodeLabels is each node's value of key as last recorded at or before at,
// as the embedded ledger reads it (nodelabel.Store).
func (s *Store) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	what := fmt.Sprintf("read node label %q at %s", key, ledger.FormatTime(at))
	if !nodelabel.ValidKey(key) {
		// Checked before it is spliced into the query: a label key has
		// only letters, digits, '-', '_', '.' and '/'.
		return nil, fmt.Errorf("cannot %s: not a Kubernetes label key", what)
	}
	sec, _ := clampSec(at)
	// argMax over the node's rows, FINAL so that a replayed change counts
	// once. The alias must not be "at", which would shadow the column.
	q := fmt.Sprintf(`SELECT node, argMax(value, at), argMax(deleted, at) AS last_deleted
FROM %s FINAL WHERE key = '%s' AND at <= %s
GROUP BY node
HAVING last_deleted = 0
LIMIT %d`, s.table(tableNodeLabels), key, dt(sec), nodelabel.MaxChanges+1)
	out := map[string]string{}
	err := s.query(ctx, what, q, func(rs driver.Rows) error {
		if len(out) >= nodelabel.MaxChanges {
			return fmt.Errorf("cannot %s from %s: more than %d nodes", what, s.table(tableNodeLabels), nodelabel.MaxChanges)
		}
		var (
			node, value string
			deleted     uint8
		)
		if err := rs.Scan(&node, &value, &deleted); err != nil {
			return scanError{err}
		}
		out[node] = value
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
