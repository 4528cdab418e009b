package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/calendar"
	"github.com/gpuledger/gpuledger/ledger"
)

// insertRow writes one row per execution: modernc binds parameters in time
// quadratic in their number, so multi-row VALUES lists are slower than
// re-running one prepared single-row statement. A replayed row that differs
// takes the new values and a new seq, so the outbox ships it again; an
// identical one is left alone, seq included. chk is the row's checksum
// (rowChecksum): a function of the other columns, so it changes with them.
const insertRow = `INSERT INTO ledger_rows (
	interval_start_ns, node, gpu_uuid, slice_id, pod_uid, container, kind,
	interval_end_ns, grp, pod, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds,
	energy_joules, method, mig_profile, seq, chk, cluster)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (interval_start_ns, cluster, node, gpu_uuid, slice_id, pod_uid, container, kind) DO UPDATE SET
	interval_end_ns = excluded.interval_end_ns, grp = excluded.grp, pod = excluded.pod,
	allocated_gpu_seconds = excluded.allocated_gpu_seconds, used_gpu_seconds = excluded.used_gpu_seconds,
	memory_mib_seconds = excluded.memory_mib_seconds, energy_joules = excluded.energy_joules,
	method = excluded.method, mig_profile = excluded.mig_profile, seq = excluded.seq, chk = excluded.chk
WHERE interval_end_ns IS NOT excluded.interval_end_ns OR grp IS NOT excluded.grp OR pod IS NOT excluded.pod
	OR allocated_gpu_seconds IS NOT excluded.allocated_gpu_seconds
	OR used_gpu_seconds IS NOT excluded.used_gpu_seconds
	OR memory_mib_seconds IS NOT excluded.memory_mib_seconds
	OR energy_joules IS NOT excluded.energy_joules OR method IS NOT excluded.method
	OR mig_profile IS NOT excluded.mig_profile`

const insertFinding = `INSERT INTO findings (
	kind, cluster, node, gpu_uuid, namespace, pod, container, start_ns, end_ns, team, detail, noisy_pod, seq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (kind, cluster, node, gpu_uuid, namespace, pod, container, start_ns) DO UPDATE SET
	end_ns = excluded.end_ns, team = excluded.team, detail = excluded.detail,
	noisy_pod = excluded.noisy_pod, seq = excluded.seq
WHERE end_ns IS NOT excluded.end_ns OR team IS NOT excluded.team
	OR detail IS NOT excluded.detail OR noisy_pod IS NOT excluded.noisy_pod`

// Append commits rows and findings in one transaction; a replay changes
// nothing. When the commit fails (disk full, read-only file) the rows are
// kept in memory, up to FileOptions.MaxPendingRows, and committed before the
// next batch, so nothing is lost while space returns; the error wraps the
// cause. Rows that can never be stored (NaN, times out of range) are
// refused without being kept.
func (s *FileStore) Append(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("cannot append to ledger %s: it is opened read-only", s.path)
	}
	if err := validateRows(rows); err != nil {
		return err
	}
	if err := validateFindings(findings); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	allRows, allFindings := rows, findings
	held := len(s.pending) + len(s.pendingF)
	if held > 0 {
		allRows = append(s.pending[:len(s.pending):len(s.pending)], rows...)
		allFindings = append(s.pendingF[:len(s.pendingF):len(s.pendingF)], findings...)
	}
	if err := s.commit(ctx, allRows, allFindings); err != nil {
		s.hold(rows, findings)
		s.failing = true
		s.log.Error("cannot commit to the ledger: rows held in memory, committed with the next write that succeeds, lost if the process stops first",
			"rows_held", len(s.pending), "findings_held", len(s.pendingF), "rows_dropped_total", s.dropped, "err", err)
		return fmt.Errorf("cannot append %d rows and %d findings to ledger %s (%d rows held for retry): %w",
			len(rows), len(findings), s.path, len(s.pending)+len(s.pendingF), err)
	}
	if s.failing {
		s.log.Info("ledger writable again: rows held for retry are committed", "held", held)
		s.failing = false
	}
	s.pending, s.pendingF = nil, nil
	return nil
}

// hold keeps a failed batch for retry, dropping the oldest held rows beyond
// the bound: memory must stay bounded even if the disk never recovers.
func (s *FileStore) hold(rows []attribution.Row, findings []attribution.Finding) {
	s.pending = append(s.pending, rows...)
	s.pendingF = append(s.pendingF, findings...)
	over := len(s.pending) + len(s.pendingF) - s.opts.MaxPendingRows
	if over <= 0 {
		return
	}
	dropF := min(over, len(s.pendingF))
	dropR := min(over-dropF, len(s.pending))
	s.pendingF = append([]attribution.Finding(nil), s.pendingF[dropF:]...)
	s.pending = append([]attribution.Row(nil), s.pending[dropR:]...)
	s.dropped += int64(dropR + dropF)
	s.log.Error("ledger retry buffer full: oldest uncommitted rows DROPPED", "dropped", dropR+dropF,
		"dropped_total", s.dropped, "max_pending_rows", s.opts.MaxPendingRows)
}

// PendingRows is the number of rows and findings held in memory because
// their commit failed.
func (s *FileStore) PendingRows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + len(s.pendingF)
}

// DroppedRows counts rows and findings lost because the retry buffer was
// full while the file stayed unwritable.
func (s *FileStore) DroppedRows() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *FileStore) commit(ctx context.Context, rows []attribution.Row, findings []attribution.Finding) error {
	if len(rows) == 0 && len(findings) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin ledger transaction: %w", s.busyWriter(err))
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'next_seq'").Scan(&seq); err != nil {
		return fmt.Errorf("cannot read outbox sequence: %w", err)
	}
	groups := &groupIDs{cache: s.groups, tx: tx}
	var changed slotSet
	if seq, err = insertRows(ctx, tx, groups, rows, seq, &changed); err != nil {
		return err
	}
	if err := afterAppend(ctx, tx, changed.sorted()); err != nil {
		return err
	}
	if seq, err = insertFindings(ctx, tx, findings, seq); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'next_seq'", seq); err != nil {
		return fmt.Errorf("cannot advance outbox sequence: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit ledger transaction: %w", err)
	}
	s.groups.add(groups.created)
	return nil
}

// insertRows upserts rows in order, numbering them from seq on; it returns
// the next free number and adds the slots of the rows it inserted or
// changed to changed (an identical replay changes no row, so no slot).
func insertRows(ctx context.Context, tx *sql.Tx, groups *groupIDs, rows []attribution.Row, seq int64, changed *slotSet) (int64, error) {
	if len(rows) == 0 {
		return seq, nil
	}
	st, err := tx.PrepareContext(ctx, insertRow)
	if err != nil {
		return 0, fmt.Errorf("cannot prepare ledger insert: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		grp, err := groups.id(ctx, groupOf(r))
		if err != nil {
			return 0, err
		}
		start, end := r.IntervalStart.UnixNano(), r.IntervalEnd.UnixNano()
		res, err := st.ExecContext(ctx,
			start, r.Node, r.GPUUUID, r.SliceID, r.PodUID, r.Container, string(r.Kind),
			end, grp, r.Pod, r.AllocatedGPUSeconds, r.UsedGPUSeconds,
			r.MemoryMiBSeconds, r.EnergyJoules, r.Method, r.MIGProfile, seq, rowChecksum(r, start, end, grp), grp0cluster(r))
		if err != nil {
			return 0, fmt.Errorf("cannot insert ledger row: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			changed.add(start) // unknown counts as changed: a needless recompute is harmless
		}
		seq++
	}
	return seq, nil
}

// grp0cluster is the row's cluster column: the key's copy of the cluster
// its group names. The checksum covers both (rowChecksum), and a read
// checks that they agree (scanRow).
func grp0cluster(r *attribution.Row) string { return ledger.ClusterOrDefault(r.Cluster) }

// rowChkCols are the columns a raw row's checksum covers, in
// rowChecksum's order: all but seq, the outbox's number.
const rowChkCols = `interval_start_ns, node, gpu_uuid, slice_id, pod_uid, container, kind,
	interval_end_ns, grp, pod, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds,
	energy_joules, method, mig_profile`

// rowChecksum is what chkFunc gives for the row's stored columns.
func rowChecksum(r *attribution.Row, start, end, grp int64) int64 {
	h := newChecksum()
	h.i64(start)
	h.str(r.Node)
	h.str(r.GPUUUID)
	h.str(r.SliceID)
	h.str(r.PodUID)
	h.str(r.Container)
	h.str(string(r.Kind))
	h.i64(end)
	h.i64(grp)
	h.str(r.Pod)
	h.f64(r.AllocatedGPUSeconds)
	h.f64(r.UsedGPUSeconds)
	h.f64(r.MemoryMiBSeconds)
	h.f64(r.EnergyJoules)
	h.str(r.Method)
	h.str(r.MIGProfile)
	// The cluster (schema 11) only where it is not the default, so rows
	// stored before keep their checksums (rowChkSQL).
	if c := r.Cluster; c != "" && c != attribution.DefaultCluster {
		h.str(c)
	}
	return h.sum()
}

// rowChkSQL is the SQL of a raw row's checksum (rowChecksum) in a file
// with the cluster column (hasCluster) or without.
func rowChkSQL(hasCluster bool) string {
	plain := chkFunc + "(" + rowChkCols + ")"
	if !hasCluster {
		return plain
	}
	return "CASE WHEN cluster = '" + attribution.DefaultCluster + "' THEN " + plain +
		" ELSE " + chkFunc + "(" + rowChkCols + ", cluster) END"
}

func insertFindings(ctx context.Context, tx *sql.Tx, findings []attribution.Finding, seq int64) (int64, error) {
	if len(findings) == 0 {
		return seq, nil
	}
	st, err := tx.PrepareContext(ctx, insertFinding)
	if err != nil {
		return 0, fmt.Errorf("cannot prepare finding insert: %w", err)
	}
	for i := range findings {
		f := &findings[i]
		if _, err := st.ExecContext(ctx, f.Kind, ledger.ClusterOrDefault(f.Cluster), f.Node, f.GPUUUID, f.Namespace, f.Pod, f.Container,
			f.Start.UnixNano(), f.End.UnixNano(), f.Team, f.Detail, f.NoisyPod, seq); err != nil {
			return 0, fmt.Errorf("cannot insert finding: %w", err)
		}
		seq++
	}
	return seq, nil
}

// Unix nanoseconds in an int64 span 1677-09-21 to 2262-04-11.
var (
	minStorable = calendar.MinTime
	maxStorable = calendar.MaxTime
)

func storable(t time.Time) bool { return !t.Before(minStorable) && !t.After(maxStorable) }

func validateRows(rows []attribution.Row) error {
	for i := range rows {
		r := &rows[i]
		where := func() string {
			return fmt.Sprintf("ledger row %d (node %q, gpu %q, slice %q, container %q, interval %s)",
				i, r.Node, r.GPUUUID, r.SliceID, r.Container, r.IntervalStart.UTC().Format(time.RFC3339))
		}
		switch {
		case r.IntervalStart.IsZero() || !storable(r.IntervalStart) || !storable(r.IntervalEnd):
			return fmt.Errorf("%s: interval times missing or outside 1678-2262", where())
		case r.IntervalEnd.Before(r.IntervalStart):
			return fmt.Errorf("%s: interval ends before it starts", where())
		}
		if err := ledger.CheckRowCluster(r.Cluster); err != nil {
			return fmt.Errorf("%s: %w", where(), err)
		}
		if name, v := nonFinite(r); name != "" {
			return fmt.Errorf("%s: %s is %v", where(), name, v)
		}
	}
	return nil
}

// nonFinite names the first NaN or infinite number of r: SQLite would store
// NaN as NULL and the row could never be read back.
func nonFinite(r *attribution.Row) (string, float64) {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case bad(r.AllocatedGPUSeconds):
		return "allocated_gpu_seconds", r.AllocatedGPUSeconds
	case bad(r.UsedGPUSeconds):
		return "used_gpu_seconds", r.UsedGPUSeconds
	case bad(r.MemoryMiBSeconds):
		return "memory_mib_seconds", r.MemoryMiBSeconds
	case bad(r.EnergyJoules):
		return "energy_joules", r.EnergyJoules
	}
	return "", 0
}

func validateFindings(findings []attribution.Finding) error {
	for i := range findings {
		f := &findings[i]
		if f.Start.IsZero() || !storable(f.Start) || !storable(f.End) || f.End.Before(f.Start) {
			return fmt.Errorf("finding %d (%s, node %q, gpu %q, pod %q): start/end missing, reversed or outside 1678-2262",
				i, f.Kind, f.Node, f.GPUUUID, f.Pod)
		}
		if err := ledger.CheckRowCluster(f.Cluster); err != nil {
			return fmt.Errorf("finding %d (%s, node %q): %w", i, f.Kind, f.Node, err)
		}
	}
	return nil
}
