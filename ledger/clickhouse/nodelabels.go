package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
)

var (
	_ nodelabel.Store        = (*Store)(nil)
	_ ledger.NodeLabelReader = (*Store)(nil)
)

var nodeLabelsInsertColumns = []string{"node", "key", "at", "value", "deleted", "version", "cluster"}

// AppendNodeLabels inserts node label changes (nodelabel.Store) with the
// checks of the embedded ledger (nodelabel.Validate), At within
// DateTime's 1970-2106 and stored to the second. One version per call: a
// later call writing the same key and second wins, and a replay changes
// nothing. A failure may leave part of the call written, which the
// caller's retry of the whole call replaces.
func (s *Store) AppendNodeLabels(ctx context.Context, changes []nodelabel.Change) error {
	if err := ledger.ValidateNodeLabels(changes, minStorable, maxStorable); err != nil {
		return permanentError{fmt.Errorf("cannot append node label changes to %s: %w", s.table(tableNodeLabels), err)}
	}
	if len(changes) == 0 {
		return nil
	}
	return s.insert(ctx, tableNodeLabels, nodeLabelsInsertColumns, nodeLabelColumns(changes, uint64(time.Now().UnixNano())), len(changes))
}

// nodeLabelColumns are the insert's columns (nodeLabelsInsertColumns),
// every row of one version.
func nodeLabelColumns(changes []nodelabel.Change, version uint64) []any {
	n := len(changes)
	node, key, value := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	at, deleted, versions := make([]int64, 0, n), make([]uint8, 0, n), make([]uint64, 0, n)
	clusters := make([]string, 0, n)
	for _, c := range changes {
		clusters = append(clusters, ledger.ClusterOrDefault(c.Cluster))
		node, key, value = append(node, c.Node), append(key, c.Key), append(value, c.Value)
		d := uint8(0)
		if c.Deleted {
			d = 1
		}
		at, deleted, versions = append(at, c.At.Unix()), append(deleted, d), append(versions, version)
	}
	return []any{node, key, at, value, deleted, versions, clusters}
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
	q := fmt.Sprintf(`SELECT cluster, node, argMax(value, at), argMax(deleted, at) AS last_deleted
FROM %s FINAL WHERE key = '%s' AND at <= %s
GROUP BY cluster, node
HAVING last_deleted = 0
LIMIT %d`, s.table(tableNodeLabels), key, dt(sec), nodelabel.MaxChanges+1)
	out := map[string]string{}
	err := s.query(ctx, what, q, func(rs driver.Rows) error {
		if len(out) >= nodelabel.MaxChanges {
			return fmt.Errorf("cannot %s from %s: more than %d nodes", what, s.table(tableNodeLabels), nodelabel.MaxChanges)
		}
		var (
			cluster, node, value string
			deleted              uint8
		)
		if err := rs.Scan(&cluster, &node, &value, &deleted); err != nil {
			return scanError{err}
		}
		out[ledger.NodeKey(cluster, node)] = value
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
