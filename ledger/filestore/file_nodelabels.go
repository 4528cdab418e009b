package filestore

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/nodelabel"
)

var (
	_ nodelabel.Store        = (*FileStore)(nil)
	_ ledger.NodeLabelReader = (*FileStore)(nil)
)

// upsertNodeLabel replaces the change of a node's key at the same second:
// a replay writes the same rows, and a second change within one second wins.
const upsertNodeLabel = `INSERT INTO node_labels (cluster, node, key, at, value, deleted) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (cluster, node, key, at) DO UPDATE SET value = excluded.value, deleted = excluded.deleted`

// AppendNodeLabels writes node label changes in one transaction
// (nodelabel.Store), At stored to the second (truncated). Every change is
// checked first (nodelabel.Validate, At between 1678 and 2262) and one
// bad change refuses the call.
func (s *FileStore) AppendNodeLabels(ctx context.Context, changes []nodelabel.Change) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("cannot append node label changes to ledger %s: it is opened read-only", s.path)
	}
	if err := ledger.ValidateNodeLabels(changes, minStorable, maxStorable); err != nil {
		return fmt.Errorf("cannot append node label changes to ledger %s: %w", s.path, err)
	}
	if len(changes) == 0 {
		return nil
	}
	return s.upsertAll(ctx, "node label changes", upsertNodeLabel, len(changes), func(i int) ([]any, string) {
		c := &changes[i]
		return []any{ledger.ClusterOrDefault(c.Cluster), c.Node, c.Key, c.At.Unix(), c.Value, c.Deleted}, fmt.Sprintf("label %s of node %s", c.Key, c.Node)
	})
}

// upsertAll runs query on the n argument lists row gives, in one
// transaction: the writes of AppendQuota and AppendNodeLabels. what names
// the rows in errors, and row's text the one that failed.
func (s *FileStore) upsertAll(ctx context.Context, what, query string, n int, row func(i int) ([]any, string)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot append %s to ledger %s: %w", what, s.path, s.busyWriter(err))
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return fmt.Errorf("cannot append %s to ledger %s: %w", what, s.path, err)
	}
	defer st.Close()
	for i := range n {
		args, which := row(i)
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("cannot append %s to ledger %s: %w", which, s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit %s to ledger %s: %w", what, s.path, s.describe(err))
	}
	return nil
}

// NodeLabels is each node's value of key as last recorded at or before at
// (nodelabel.Store); a node whose last change removed the label is
// absent. A file older than version 7 opened read-only has none. More
// than nodelabel.MaxChanges nodes is an error.
func (s *FileStore) NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error) {
	out := map[string]string{}
	where := fmt.Sprintf("cannot read node label %q of %s at %s", key, s.path, ledger.FormatTime(at))
	var n int
	err := retryBusy(ctx, func() error {
		return s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'node_labels'").Scan(&n)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, s.describe(err))
	}
	if n == 0 {
		return out, nil // an older file read as it is: no label was ever recorded
	}
	// SQLite takes the bare columns of a max() aggregate from the row
	// holding the maximum: each node's last change at or before at.
	rs, err := s.r.QueryContext(ctx, `SELECT `+s.clusterCol()+`, node, value, deleted, max(at) FROM node_labels
WHERE key = ? AND at <= ? GROUP BY `+s.clusterCol()+`, node LIMIT ?`, key, at.Unix(), nodelabel.MaxChanges+1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, s.describe(err))
	}
	defer rs.Close()
	rows := 0
	for rs.Next() {
		if rows++; rows > nodelabel.MaxChanges {
			return nil, fmt.Errorf("%s: more than %d nodes", where, nodelabel.MaxChanges)
		}
		var (
			cluster     string
			node, value string
			deleted     bool
			last        int64
		)
		if err := rs.Scan(&cluster, &node, &value, &deleted, &last); err != nil {
			return nil, fmt.Errorf("%s: %w", where, s.describe(err))
		}
		if !deleted {
			out[ledger.NodeKey(cluster, node)] = value
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, s.describe(err))
	}
	return out, nil
}
