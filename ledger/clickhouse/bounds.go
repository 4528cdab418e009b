package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

// FirstRowStart and LastRowEnd give the report its data's first and last
// instant: the start of the earliest and the end of the latest
// deduplicated row whose interval starts in [from, to), as streaming those
// rows (Rows) and taking the extremes would; zero when there is none.
//
// Both are computed in the server, without FINAL where that is exact: at
// 10,000 GPUs an edge hour is ~700,000 rows, and streaming them took
// 1.1-1.2 s per edge hour, reading them FINAL about as long (every key
// column is read), while a min or max of two columns takes ~0.1 s.
//
// FirstClusterRowStart and LastClusterRowEnd are the same of one cluster's
// rows (ledger.ClusterRowBounder): a fleet of several clusters is billed
// cluster by cluster (ledger.OneCluster), and each cluster's edge hours
// would otherwise be streamed whole to keep a cluster's rows.

var _ ledger.ClusterRowBounder = (*Store)(nil)

// FirstRowStart needs no deduplication: a replaced row has the same key,
// its start included, as the row that replaces it.
func (s *Store) FirstRowStart(ctx context.Context, from, to time.Time) (time.Time, error) {
	return s.firstRowStart(ctx, "", from, to)
}

// LastRowEnd needs it (the end is not in the key), unless the range holds
// no replaced row at all. That is so when the range is whole UTC hours with
// clean hourly rollups and the stored row count equals the rollups'
// deduplicated count: keys never disappear, so the stored rows can only be
// as many as the keys counted at build time when every key has one version
// now. Otherwise the end is read FINAL.
func (s *Store) LastRowEnd(ctx context.Context, from, to time.Time) (time.Time, error) {
	return s.lastRowEnd(ctx, "", from, to)
}

// FirstClusterRowStart is FirstRowStart of cluster's rows only.
func (s *Store) FirstClusterRowStart(ctx context.Context, cluster string, from, to time.Time) (time.Time, error) {
	if err := ledger.CheckClusterName(cluster); err != nil {
		return time.Time{}, fmt.Errorf("cannot read the ledger's first row of a cluster: %w", err)
	}
	return s.firstRowStart(ctx, cluster, from, to)
}

// LastRowStart is the start of the latest row whose interval starts in
// [from, to), zero when there is none. The start is in the key, so a
// replaced row starts where its replacement does: no FINAL, as
// FirstRowStart. A report finds its data's last hour so, without an
// hour aggregate of its last day.
func (s *Store) LastRowStart(ctx context.Context, from, to time.Time) (time.Time, error) {
	return s.lastRowStart(ctx, "", from, to)
}

// LastClusterRowStart is LastRowStart of cluster's rows only.
func (s *Store) LastClusterRowStart(ctx context.Context, cluster string, from, to time.Time) (time.Time, error) {
	if err := ledger.CheckClusterName(cluster); err != nil {
		return time.Time{}, fmt.Errorf("cannot read the ledger's last row start of a cluster: %w", err)
	}
	return s.lastRowStart(ctx, cluster, from, to)
}

// LastClusterRowEnd is LastRowEnd of cluster's rows only. The rollups
// count each cluster's rows apart (the cluster is one of their keys), so
// the shortcut holds per cluster: a cluster's stored rows equal its
// deduplicated count when none of its rows is replaced, whatever another
// cluster's are.
func (s *Store) LastClusterRowEnd(ctx context.Context, cluster string, from, to time.Time) (time.Time, error) {
	if err := ledger.CheckClusterName(cluster); err != nil {
		return time.Time{}, fmt.Errorf("cannot read the ledger's last row of a cluster: %w", err)
	}
	return s.lastRowEnd(ctx, cluster, from, to)
}

// firstRowStart and lastRowEnd read the bounds of cluster's rows, of
// every cluster's when it is empty.
func (s *Store) firstRowStart(ctx context.Context, cluster string, from, to time.Time) (time.Time, error) {
	n, first, err := s.rawExtreme(ctx, "min", "interval_start", false, cluster, from, to)
	if err != nil || n == 0 {
		return time.Time{}, err
	}
	return first, nil
}

func (s *Store) lastRowStart(ctx context.Context, cluster string, from, to time.Time) (time.Time, error) {
	n, last, err := s.rawExtreme(ctx, "max", "interval_start", false, cluster, from, to)
	if err != nil || n == 0 {
		return time.Time{}, err
	}
	return last, nil
}

func (s *Store) lastRowEnd(ctx context.Context, cluster string, from, to time.Time) (time.Time, error) {
	n, last, err := s.rawExtreme(ctx, "max", "interval_end", false, cluster, from, to)
	if err != nil || n == 0 {
		return time.Time{}, err
	}
	deduped, known, err := s.cleanHourRows(ctx, cluster, from, to)
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot read the ledger's last row end: %w", err)
	}
	if known && deduped == n {
		return last, nil
	}
	if n, last, err = s.rawExtreme(ctx, "max", "interval_end", true, cluster, from, to); err != nil || n == 0 {
		return time.Time{}, err
	}
	return last, nil
}

// rawExtreme is the count of the raw rows of cluster (every cluster's when
// empty) whose interval starts in [from, to) and fn (min or max) of a time
// column over them, read FINAL (deduplicated) or not.
func (s *Store) rawExtreme(ctx context.Context, fn, col string, final bool, cluster string, from, to time.Time) (uint64, time.Time, error) {
	from, to = openBounds(from, to)
	if !from.Before(to) {
		return 0, time.Time{}, nil
	}
	dedup := ""
	if final {
		dedup = " FINAL"
	}
	where := rawRange(from, to)
	if cluster != "" {
		// A DNS label (checked by the callers): safe to splice. Rows
		// stored before the cluster column read it as 'default', its
		// DEFAULT, so the default cluster's filter finds them too.
		where += " AND cluster = '" + cluster + "'"
	}
	q := fmt.Sprintf("SELECT count(), %s(toUInt64(%s) * 1000000000 + %s_ns) FROM %s%s WHERE %s",
		fn, col, col, s.table(tableRows), dedup, where)
	var n, v uint64
	err := s.query(ctx, "read the ledger's row bounds", q, func(rs driver.Rows) error {
		if err := rs.Scan(&n, &v); err != nil {
			return scanError{err}
		}
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cannot read the ledger's row bounds: %w", err)
	}
	return n, time.Unix(0, int64(v)).UTC(), nil
}

// cleanHourRows is the deduplicated row count of cluster (every
// cluster's when empty) in [from, to) from the hourly rollups, when the
// range is whole UTC hours whose rollups are clean and visible; known is
// false otherwise. At most a day of hours: callers ask about an edge hour.
func (s *Store) cleanHourRows(ctx context.Context, cluster string, from, to time.Time) (n uint64, known bool, err error) {
	lo, hi := from.Unix(), to.Unix()
	if from.Nanosecond() != 0 || to.Nanosecond() != 0 || mod(lo, 3600) != 0 || mod(hi, 3600) != 0 || hi <= lo || hi-lo > 86400 {
		return 0, false, nil
	}
	st, err := s.loadState(ctx, floorUnix(from, 86400), ceilUnix(to, 86400))
	if err != nil {
		return 0, false, err
	}
	want := map[int64]header{}
	for h := lo; h < hi; h += 3600 {
		hd, ok := st.clean(period{grainHour, h})
		if !ok {
			return 0, false, nil
		}
		want[h] = hd
	}
	rows, ok, err := s.readRollup(ctx, grainHour, lo, hi, want)
	if err != nil {
		return 0, false, err
	}
	for h := range want {
		if !ok[h] {
			return 0, false, nil
		}
		for _, g := range rows[h] {
			if cluster == "" || g.key.cluster == cluster {
				n += g.rows
			}
		}
	}
	return n, true, nil
}
