package filestore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
)

var (
	_ quota.Store        = (*FileStore)(nil)
	_ ledger.QuotaReader = (*FileStore)(nil)
)

// maxQuotaChanges is MaxQuotaChanges, lowered by tests.
var maxQuotaChanges = ledger.MaxQuotaChanges

// upsertQuota replaces the change of a key at the same second: a replay of
// a batch writes the same rows, and a second change within one second wins.
const upsertQuota = `INSERT INTO quota_changes (cluster, source, object, resource, at, team, milli, limit_milli, deleted)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (cluster, source, object, resource, at) DO UPDATE SET
	team = excluded.team, milli = excluded.milli, limit_milli = excluded.limit_milli, deleted = excluded.deleted`

// AppendQuota writes quota changes in one transaction (quota.Store). At is
// stored to the second (truncated); a change whose key and second are
// stored replaces it, so a replay changes nothing. Every change is checked
// first, and one bad change refuses the call: a change that is not
// deleted must be a valid quota.Entry; a deletion needs a known source
// and an object and resource; At must be set and between 1678 and 2262,
// and one call may not hold two changes of one key in one second.
func (s *FileStore) AppendQuota(ctx context.Context, changes []quota.Change) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("cannot append quota changes to ledger %s: it is opened read-only", s.path)
	}
	if err := ledger.ValidateQuotaChanges(changes, minStorable, maxStorable); err != nil {
		return fmt.Errorf("cannot append quota changes to ledger %s: %w", s.path, err)
	}
	if len(changes) == 0 {
		return nil
	}
	return s.upsertAll(ctx, "quota changes", upsertQuota, len(changes), func(i int) ([]any, string) {
		c := &changes[i]
		return []any{ledger.ClusterOrDefault(c.Cluster), c.Source, c.Object, c.Resource, c.At.Unix(), c.Team, c.Milli, c.LimitMilli, c.Deleted},
			fmt.Sprintf("quota change of %s %s %s", c.Source, c.Object, c.Resource)
	})
}

// QuotaChanges streams, ordered by At then source, object and resource,
// for each key the last change at or before from, unless it is a deletion
// (nothing is in force then), and every change in (from, to): what
// quota.Intervals(changes, from, to) and quota.State need. At is whole
// seconds in UTC. A version-5 file opened read-only has no quota table and
// returns nothing. More than MaxQuotaChanges changes is an error naming the
// period (fn has then seen the first MaxQuotaChanges).
func (s *FileStore) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	period := fmt.Sprintf("%s to %s", ledger.FormatTime(from), ledger.FormatTime(to))
	if to.Before(from) {
		return fmt.Errorf("cannot read quota changes of %s from %s: the period ends before it starts", s.path, period)
	}
	has, err := hasQuotaTable(ctx, s.r)
	if err != nil {
		return fmt.Errorf("cannot read quota changes of %s from %s: %w", s.path, period, s.describe(err))
	}
	if !has {
		return nil // a version-5 file read as it is: no quota was ever recorded
	}
	// SQLite takes the bare columns of a max() aggregate from the row
	// holding the maximum: the last change of each key at or before from.
	// The second part is a range scan of the at index.
	q := strings.ReplaceAll(`SELECT source, object, resource, last_at, team, milli, limit_milli, deleted, cl FROM (
	SELECT source, object, resource, max(at) AS last_at, team, milli, limit_milli, deleted, CL AS cl
	FROM quota_changes WHERE at <= ?1 GROUP BY CL, source, object, resource
) WHERE deleted = 0
UNION ALL
SELECT source, object, resource, at, team, milli, limit_milli, deleted, CL
FROM quota_changes WHERE at > ?1 AND at < ?2
ORDER BY 4, 9, 1, 2, 3`, "CL", s.clusterCol())
	rs, err := s.r.QueryContext(ctx, q, from.Unix(), quotaCeil(to))
	if err != nil {
		return fmt.Errorf("cannot read quota changes of %s from %s: %w", s.path, period, s.describe(err))
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		if n++; n > maxQuotaChanges {
			return fmt.Errorf("cannot read quota changes of %s from %s: more than %d changes; read a shorter period", s.path, period, maxQuotaChanges)
		}
		var (
			c  quota.Change
			at int64
		)
		if err := rs.Scan(&c.Source, &c.Object, &c.Resource, &at, &c.Team, &c.Milli, &c.LimitMilli, &c.Deleted, &c.Cluster); err != nil {
			return fmt.Errorf("cannot read quota changes of %s from %s: %w", s.path, period, s.describe(err))
		}
		c.At = time.Unix(at, 0).UTC()
		if err := fn(c); err != nil {
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("cannot read quota changes of %s from %s: %w", s.path, period, s.describe(err))
	}
	return nil
}

// hasQuotaTable says whether the file has the quota table: a version-5
// file opened read-only has not.
func hasQuotaTable(ctx context.Context, q querier) (bool, error) {
	var n int
	err := retryBusy(ctx, func() error {
		return q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'quota_changes'").Scan(&n)
	})
	return n > 0, err
}

// quotaCeil is the first whole second not before t: a change at a stored
// second s is before t exactly when s < quotaCeil(t).
func quotaCeil(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++
	}
	return u
}

// pruneQuota deletes the quota changes that no period from expiry on
// needs: every change of a key followed by another at or before expiry,
// then the deletions left as a key's last change at or before it (nothing
// was in force from them on). A report of any period starting at or
// after expiry reads the same changes as before. It returns how many went.
func (s *FileStore) pruneQuota(ctx context.Context, expiry time.Time) (int64, error) {
	h := expiry.Unix()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("cannot prune quota changes of %s: %w", s.path, s.busyWriter(err))
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM quota_changes WHERE at < ?1 AND EXISTS (
	SELECT 1 FROM quota_changes n WHERE n.cluster = quota_changes.cluster AND n.source = quota_changes.source AND n.object = quota_changes.object
		AND n.resource = quota_changes.resource AND n.at > quota_changes.at AND n.at <= ?1)`, h)
	if err != nil {
		return 0, fmt.Errorf("cannot prune quota changes of %s: %w", s.path, err)
	}
	superseded, _ := res.RowsAffected()
	if res, err = tx.ExecContext(ctx, `DELETE FROM quota_changes WHERE at <= ? AND deleted = 1`, h); err != nil {
		return 0, fmt.Errorf("cannot prune quota changes of %s: %w", s.path, err)
	}
	deletions, _ := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("cannot prune quota changes of %s: %w", s.path, err)
	}
	return superseded + deletions, nil
}
