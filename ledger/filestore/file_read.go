package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// selectRows reads whole rows for scanRow; %s is chk, or 0 in a file
// without checksums (see selectRowsSQL).
const selectRows = `SELECT
	interval_start_ns, interval_end_ns, node, gpu_uuid, slice_id, kind, pod, pod_uid, container, grp,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, method, mig_profile, seq, %s, %s
FROM ledger_rows`

// selectRowsSQL is selectRows for this file.
func (s *FileStore) selectRowsSQL() string {
	if s.hasChk {
		return fmt.Sprintf(selectRows, "chk", s.clusterCol())
	}
	return fmt.Sprintf(selectRows, "0", s.clusterCol())
}

const selectFindings = `SELECT start_ns, end_ns, kind, %s, node, gpu_uuid, namespace, pod, container, team, detail, noisy_pod, seq
FROM findings`

var _ ledger.RowReader = (*FileStore)(nil)

// Rows streams the rows whose interval starts in [from, to) in key order.
// The primary key is that order, so SQLite walks it without sorting and
// memory stays constant for any range. A zero from or to is open-ended.
func (s *FileStore) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	if err := s.checkRows(ctx); err != nil {
		return err
	}
	lo, hi := nsBound(from, math.MinInt64), nsBound(to, math.MaxInt64)
	rs, err := s.r.QueryContext(ctx, s.selectRowsSQL()+`
WHERE interval_start_ns >= ? AND interval_start_ns < ?
ORDER BY interval_start_ns, `+s.clusterCol()+`, node, gpu_uuid, slice_id, pod_uid, container, kind`, lo, hi)
	if err != nil {
		return fmt.Errorf("cannot query ledger rows in %s: %w", s.path, s.describe(err))
	}
	defer rs.Close()
	for rs.Next() {
		r, _, err := s.scanRow(ctx, rs)
		if err != nil {
			return fmt.Errorf("cannot read ledger row in %s: %w", s.path, s.describe(err))
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("cannot read ledger rows in %s: %w", s.path, s.describe(err))
	}
	return nil
}

// Findings streams the findings that overlap [from, to) (an instantaneous
// finding counts when it lies in the range), ordered by start.
func (s *FileStore) Findings(ctx context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	lo, hi := nsBound(from, math.MinInt64), nsBound(to, math.MaxInt64)
	rs, err := s.r.QueryContext(ctx, fmt.Sprintf(selectFindings, s.clusterCol())+`
WHERE start_ns < ?2 AND (end_ns > ?1 OR start_ns >= ?1)
ORDER BY start_ns, kind, `+s.clusterCol()+`, node, gpu_uuid, namespace, pod, container`, lo, hi)
	if err != nil {
		return fmt.Errorf("cannot query findings in %s: %w", s.path, s.describe(err))
	}
	defer rs.Close()
	for rs.Next() {
		f, _, err := scanFinding(rs)
		if err != nil {
			return fmt.Errorf("cannot read finding in %s: %w", s.path, s.describe(err))
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("cannot read findings in %s: %w", s.path, s.describe(err))
	}
	return nil
}

func (s *FileStore) scanRow(ctx context.Context, rs *sql.Rows) (attribution.Row, int64, error) {
	var (
		r               attribution.Row
		start, end, grp int64
		kind            string
		seq, chk        int64
	)
	err := rs.Scan(&start, &end, &r.Node, &r.GPUUUID, &r.SliceID, &kind, &r.Pod, &r.PodUID, &r.Container, &grp,
		&r.AllocatedGPUSeconds, &r.UsedGPUSeconds, &r.MemoryMiBSeconds, &r.EnergyJoules, &r.Method, &r.MIGProfile, &seq, &chk, &r.Cluster)
	if err != nil {
		return r, 0, err
	}
	r.Kind = attribution.Kind(kind)
	// Rows shipped, exported and advised on are checked like the ones
	// billed: a hash of the fields is cheap beside reading them.
	if chk != 0 && chk != rowChecksum(&r, start, end, grp) {
		return r, 0, errDamaged("ledger row %d (node %q, gpu %q, interval %s) fails its checksum", seq, r.Node, r.GPUUUID, ledger.FormatTime(fromNS(start)))
	}
	// A miss reloads through the writer: readers may all be busy streaming.
	g, err := s.groups.key(ctx, s.w, grp)
	if err != nil {
		return r, 0, err
	}
	if r.Cluster != g.cluster {
		return r, 0, errDamaged("ledger row %d (node %q, gpu %q, interval %s) is keyed to cluster %q and grouped under %q", seq, r.Node, r.GPUUUID, ledger.FormatTime(fromNS(start)), r.Cluster, g.cluster)
	}
	r.IntervalStart, r.IntervalEnd = fromNS(start), fromNS(end)
	r.Team, r.Namespace, r.GPUModel, r.SharingMode = g.team, g.namespace, g.model, g.mode
	return r, seq, nil
}

func scanFinding(rs *sql.Rows) (attribution.Finding, int64, error) {
	var (
		f          attribution.Finding
		start, end int64
		seq        int64
	)
	err := rs.Scan(&start, &end, &f.Kind, &f.Cluster, &f.Node, &f.GPUUUID, &f.Namespace, &f.Pod, &f.Container,
		&f.Team, &f.Detail, &f.NoisyPod, &seq)
	f.Start, f.End = fromNS(start), fromNS(end)
	return f, seq, err
}

func fromNS(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// nsBound turns a range bound into unix nanoseconds; zero means open.
func nsBound(t time.Time, open int64) int64 {
	switch {
	case t.IsZero():
		return open
	case t.Before(minStorable):
		return math.MinInt64
	case t.After(maxStorable):
		return math.MaxInt64
	}
	return t.UnixNano()
}
