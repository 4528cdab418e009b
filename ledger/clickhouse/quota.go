package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/quota"
)

var (
	_ quota.Store        = (*Store)(nil)
	_ ledger.QuotaReader = (*Store)(nil)
)

// tableQuota holds GPU quota changes (migration 4): one row per change of
// a quota object's resource, keyed to the second. A replay inserts the
// same key again under a newer version and collapses to one row; reads
// use FINAL, so they never see two.
const tableQuota = "quota_changes"

var quotaTable = table{
	name: tableQuota,
	columns: `source String,
	object String,
	resource String,
	at DateTime('UTC'),
	team String,
	milli Int64,
	limit_milli Int64,
	deleted UInt8,
	version UInt64`,
	engine: "ReplacingMergeTree", args: "version",
	// No partitions: a cluster's quota changes are a few rows a month, and
	// FINAL then merges across the whole (small) table.
	orderBy: "source, object, resource, at",
	// Every change of one object on one shard, so a replay collapses there.
	shardKey: "cityHash64(object)",
}

var quotaInsertColumns = []string{"source", "object", "resource", "at", "team", "milli", "limit_milli", "deleted", "version", "cluster"}

// maxQuotaChanges is ledger.MaxQuotaChanges, lowered by tests.
var maxQuotaChanges = ledger.MaxQuotaChanges

// AppendQuota inserts quota changes (quota.Store) with the checks of the
// embedded ledger (ledger.ValidateQuotaChanges), At within DateTime's
// 1970-2106 and stored to the second. One version per call: a later call
// writing the same key and second wins, and a replay changes nothing.
// ClickHouse has no transactions: a failure may leave part of the call
// written, which the caller's retry of the whole call replaces.
func (s *Store) AppendQuota(ctx context.Context, changes []quota.Change) error {
	if err := ledger.ValidateQuotaChanges(changes, minStorable, maxStorable); err != nil {
		return permanentError{fmt.Errorf("cannot append quota changes to %s: %w", s.table(tableQuota), err)}
	}
	n := len(changes)
	if n == 0 {
		return nil
	}
	version := uint64(time.Now().UnixNano())
	var (
		source, object, resource, team = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		at                             = make([]int64, n)
		milli, limit                   = make([]int64, n), make([]int64, n)
		deleted                        = make([]uint8, n)
		versions                       = make([]uint64, n)
		clusters                       = make([]string, n)
	)
	for i := range changes {
		c := &changes[i]
		source[i], object[i], resource[i], team[i] = c.Source, c.Object, c.Resource, c.Team
		at[i], milli[i], limit[i], versions[i] = c.At.Unix(), c.Milli, c.LimitMilli, version
		clusters[i] = ledger.ClusterOrDefault(c.Cluster)
		if c.Deleted {
			deleted[i] = 1
		}
	}
	return s.insert(ctx, tableQuota, quotaInsertColumns,
		[]any{source, object, resource, at, team, milli, limit, deleted, versions, clusters}, n)
}

// QuotaChanges streams, ordered by At then source, object and resource,
// for each key the last change at or before from, unless it is a deletion
// (nothing is in force then), and every change in (from, to), as the
// embedded ledger does (quota.Store). More than ledger.MaxQuotaChanges is
// an error naming the period.
func (s *Store) QuotaChanges(ctx context.Context, from, to time.Time, fn func(quota.Change) error) error {
	period := fmt.Sprintf("%s to %s", ledger.FormatTime(from), ledger.FormatTime(to))
	if to.Before(from) {
		return fmt.Errorf("cannot read quota changes from %s: the period ends before it starts", period)
	}
	f, _ := clampSec(from)
	t := to.Unix()
	if to.Nanosecond() > 0 {
		t++ // a change at a whole second s is before to exactly when s < ceil(to)
	}
	// The state at from: argMax over the key's rows, FINAL so that a
	// replayed change counts once. The alias must not be "at", which
	// would shadow the column inside argMax.
	state := fmt.Sprintf(`SELECT source, object, resource, max(at) AS last_at, argMax(team, at), argMax(milli, at),
	argMax(limit_milli, at), argMax(deleted, at) AS last_deleted, cluster
FROM %s FINAL WHERE at <= %s
GROUP BY cluster, source, object, resource
HAVING last_deleted = 0
ORDER BY last_at, cluster, source, object, resource
LIMIT %d`, s.table(tableQuota), dt(f), maxQuotaChanges+1)
	after := fmt.Sprintf(`SELECT source, object, resource, at, team, milli, limit_milli, deleted, cluster
FROM %s FINAL WHERE at > %s AND at < %s
ORDER BY at, cluster, source, object, resource
LIMIT %d`, s.table(tableQuota), dt(f), dt(t), maxQuotaChanges+1)
	n := 0
	each := func(rs driver.Rows) error {
		if n++; n > maxQuotaChanges {
			return fmt.Errorf("cannot read quota changes of %s from %s: more than %d changes; read a shorter period",
				s.table(tableQuota), period, maxQuotaChanges)
		}
		var (
			c       quota.Change
			at      time.Time
			deleted uint8
		)
		if err := rs.Scan(&c.Source, &c.Object, &c.Resource, &at, &c.Team, &c.Milli, &c.LimitMilli, &deleted, &c.Cluster); err != nil {
			return scanError{err}
		}
		c.At, c.Deleted = at.UTC(), deleted != 0
		return fn(c)
	}
	if err := s.query(ctx, "read quota changes from "+period, state, each); err != nil {
		return err
	}
	return s.query(ctx, "read quota changes from "+period, after, each)
}
