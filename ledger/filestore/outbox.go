package filestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// ErrOutboxFull: the file is over FileOptions.MaxBytes and only unshipped
// rows are left to prune, which Prune never deletes.
var ErrOutboxFull = errors.New("ledger outbox full")

// pruneChunk is how many sequence numbers one prune transaction deletes
// before the size is measured again.
const pruneChunk = 4096

// OutboxBatch is the next run of unshipped rows and findings for one sink,
// in outbox order (the order they were written, which keeps order per GPU).
type OutboxBatch struct {
	FirstSeq, LastSeq int64
	Rows              []attribution.Row
	Findings          []attribution.Finding
}

// Empty reports whether nothing was pending.
func (b OutboxBatch) Empty() bool { return len(b.Rows) == 0 && len(b.Findings) == 0 }

// NextBatch returns up to max rows and findings with a sequence number above
// sink's shipped mark, ordered by sequence; an empty batch when nothing is
// pending. It does not move the mark: call MarkShipped once the batch is
// stored, so a crash in between ships it again (at least once).
func (s *FileStore) NextBatch(ctx context.Context, sink string, max int) (OutboxBatch, error) {
	if sink == "" || max <= 0 {
		return OutboxBatch{}, fmt.Errorf("cannot read outbox of %s: need a sink name and max > 0 (got %q, %d)", s.path, sink, max)
	}
	// One read transaction: the mark and the rows come from one snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return OutboxBatch{}, fmt.Errorf("cannot read outbox of %s: %w", s.path, err)
	}
	defer tx.Rollback()
	mark, err := shippedMark(ctx, tx, sink)
	if err != nil {
		return OutboxBatch{}, fmt.Errorf("cannot read outbox mark of sink %q in %s: %w", sink, s.path, err)
	}
	rows, rowSeqs, err := s.pendingRows(ctx, tx, mark, max)
	if err != nil {
		return OutboxBatch{}, fmt.Errorf("cannot read outbox rows of %s: %w", s.path, err)
	}
	findings, findingSeqs, err := pendingFindings(ctx, tx, mark, max)
	if err != nil {
		return OutboxBatch{}, fmt.Errorf("cannot read outbox findings of %s: %w", s.path, err)
	}
	return mergeBatch(rows, rowSeqs, findings, findingSeqs, max), nil
}

// mergeBatch interleaves two seq-ordered runs and keeps the first max.
func mergeBatch(rows []attribution.Row, rowSeqs []int64, fs []attribution.Finding, fSeqs []int64, max int) OutboxBatch {
	var b OutboxBatch
	i, j := 0, 0
	for n := 0; n < max && (i < len(rows) || j < len(fs)); n++ {
		var seq int64
		if j >= len(fs) || (i < len(rows) && rowSeqs[i] < fSeqs[j]) {
			seq = rowSeqs[i]
			b.Rows = append(b.Rows, rows[i])
			i++
		} else {
			seq = fSeqs[j]
			b.Findings = append(b.Findings, fs[j])
			j++
		}
		if n == 0 {
			b.FirstSeq = seq
		}
		b.LastSeq = seq
	}
	return b
}

func shippedMark(ctx context.Context, q querier, sink string) (int64, error) {
	var mark int64
	err := q.QueryRowContext(ctx, "SELECT shipped_seq FROM outbox_marks WHERE sink = ?", sink).Scan(&mark)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return mark, err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *FileStore) pendingRows(ctx context.Context, q querier, mark int64, max int) ([]attribution.Row, []int64, error) {
	rs, err := q.QueryContext(ctx, s.selectRowsSQL()+" WHERE seq > ? ORDER BY seq LIMIT ?", mark, max)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	var (
		rows []attribution.Row
		seqs []int64
	)
	for rs.Next() {
		r, seq, err := s.scanRow(ctx, rs)
		if err != nil {
			return nil, nil, err
		}
		rows, seqs = append(rows, r), append(seqs, seq)
	}
	return rows, seqs, rs.Err()
}

func pendingFindings(ctx context.Context, q querier, mark int64, max int) ([]attribution.Finding, []int64, error) {
	rs, err := q.QueryContext(ctx, fmt.Sprintf(selectFindings, "cluster")+" WHERE seq > ? ORDER BY seq LIMIT ?", mark, max)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	var (
		fs   []attribution.Finding
		seqs []int64
	)
	for rs.Next() {
		f, seq, err := scanFinding(rs)
		if err != nil {
			return nil, nil, err
		}
		fs, seqs = append(fs, f), append(seqs, seq)
	}
	return fs, seqs, rs.Err()
}

// MarkShipped records that sink has stored everything up to lastSeq. The
// mark only moves forward, so a late or repeated call changes nothing.
func (s *FileStore) MarkShipped(ctx context.Context, sink string, lastSeq int64) error {
	if sink == "" {
		return fmt.Errorf("cannot mark outbox of %s shipped: empty sink name", s.path)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot mark outbox of %s shipped: %w", s.path, err)
	}
	defer tx.Rollback()
	var next int64
	if err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'next_seq'").Scan(&next); err != nil {
		return fmt.Errorf("cannot read outbox sequence of %s: %w", s.path, err)
	}
	if lastSeq < 0 || lastSeq >= next {
		return fmt.Errorf("cannot mark seq %d shipped to %q in %s: only 1..%d were written", lastSeq, sink, s.path, next-1)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_marks (sink, shipped_seq) VALUES (?, ?)
ON CONFLICT (sink) DO UPDATE SET shipped_seq = max(shipped_seq, excluded.shipped_seq)`, sink, lastSeq); err != nil {
		return fmt.Errorf("cannot mark seq %d shipped to %q in %s: %w", lastSeq, sink, s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot mark seq %d shipped to %q in %s: %w", lastSeq, sink, s.path, err)
	}
	return nil
}

// OutboxStats returns how many rows and findings sink has not shipped and
// the end of the oldest of them (zero when none): the caller's clock turns
// that into the age of the oldest unshipped row.
func (s *FileStore) OutboxStats(ctx context.Context, sink string) (pending int64, oldest time.Time, err error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cannot read outbox of %s: %w", s.path, err)
	}
	defer tx.Rollback()
	mark, err := shippedMark(ctx, tx, sink)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cannot read outbox mark of sink %q in %s: %w", sink, s.path, err)
	}
	var oldestNS sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM ledger_rows WHERE seq > ?1) + (SELECT count(*) FROM findings WHERE seq > ?1),
	min(coalesce((SELECT interval_end_ns FROM ledger_rows WHERE seq > ?1 ORDER BY seq LIMIT 1), ?2),
	    coalesce((SELECT end_ns FROM findings WHERE seq > ?1 ORDER BY seq LIMIT 1), ?2))`,
		mark, int64(math.MaxInt64)).Scan(&pending, &oldestNS)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cannot count outbox of %s: %w", s.path, err)
	}
	if pending > 0 && oldestNS.Valid && oldestNS.Int64 != math.MaxInt64 {
		oldest = fromNS(oldestNS.Int64)
	}
	return pending, oldest, nil
}

// Prune first deletes what is older than FileOptions.Retention (when set),
// then keeps the file under FileOptions.MaxBytes by deleting the oldest
// rows and findings that every sink in FileOptions.Sinks has shipped, then
// returns the freed pages to the file system. It never deletes rows a sink
// has not shipped: when they alone exceed the bound it logs loudly and
// returns ErrOutboxFull (the caller counts it). With no sinks only the
// retention deletes. Quota changes are never pruned for size; the
// retention deletes those superseded before it (pruneQuota), keeping the
// last change of each key, and they do not count in deleted. Size is the database's used pages;
// the WAL is bounded separately by journal_size_limit.
func (s *FileStore) Prune(ctx context.Context) (deleted int64, err error) {
	cutoff, err := s.pruneCutoff(ctx)
	if err != nil {
		return 0, err
	}
	if s.opts.Retention > 0 {
		shipped := cutoff
		if len(s.opts.Sinks) == 0 {
			shipped = math.MaxInt64
		}
		expiry := s.now().Add(-s.opts.Retention)
		if deleted, err = s.pruneExpired(ctx, expiry, shipped); err != nil {
			return 0, err
		}
		if deleted > 0 {
			s.log.Info("deleted ledger rows and findings past the retention", "deleted", deleted,
				"retention", s.opts.Retention.String(), "before", ledger.FormatTime(expiry))
		}
		// Quota changes are not shipped: the last one of each key before
		// the expiry stays, so reports from it on price quota as before.
		q, err := s.pruneQuota(ctx, expiry)
		if err != nil {
			return deleted, err
		}
		if q > 0 {
			s.log.Info("deleted quota changes superseded before the retention", "deleted", q,
				"retention", s.opts.Retention.String(), "before", ledger.FormatTime(expiry))
		}
	}
	if s.opts.MaxBytes <= 0 {
		if deleted > 0 {
			s.shrink(ctx)
		}
		return deleted, nil
	}
	used, err := s.usedBytes(ctx)
	if err != nil || used <= s.opts.MaxBytes {
		if deleted > 0 {
			s.shrink(ctx)
		}
		return deleted, err
	}
	for used > s.opts.MaxBytes {
		n, err := s.pruneOldest(ctx, cutoff)
		if err != nil {
			return deleted, err
		}
		if n == 0 {
			break
		}
		deleted += n
		if used, err = s.usedBytes(ctx); err != nil {
			return deleted, err
		}
	}
	if deleted > 0 {
		s.shrink(ctx)
	}
	if used > s.opts.MaxBytes {
		pending, _, _ := s.OutboxStats(ctx, s.slowestSink(ctx))
		s.log.Error("ledger over its size bound with only unshipped rows left: NOT deleting them",
			"bytes", used, "max_bytes", s.opts.MaxBytes, "pruned", deleted, "unshipped", pending, "sinks", s.opts.Sinks)
		return deleted, fmt.Errorf("%w: %s uses %d bytes, bound %d, after pruning %d shipped rows",
			ErrOutboxFull, s.path, used, s.opts.MaxBytes, deleted)
	}
	if deleted > 0 {
		s.log.Info("pruned shipped ledger rows", "deleted", deleted, "bytes", used, "max_bytes", s.opts.MaxBytes)
	}
	return deleted, nil
}

func (s *FileStore) usedBytes(ctx context.Context) (int64, error) {
	var pages, free, size int64
	err := s.w.QueryRowContext(ctx, "SELECT page_count, freelist_count, page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()").
		Scan(&pages, &free, &size)
	if err != nil {
		return 0, fmt.Errorf("cannot measure ledger file %s: %w", s.path, err)
	}
	return (pages - free) * size, nil
}

// pruneCutoff is the highest seq every registered sink has shipped; 0 (prune
// nothing) when there are no sinks or one has shipped nothing.
func (s *FileStore) pruneCutoff(ctx context.Context) (int64, error) {
	if len(s.opts.Sinks) == 0 {
		return 0, nil
	}
	cutoff := int64(math.MaxInt64)
	for _, sink := range s.opts.Sinks {
		m, err := shippedMark(ctx, s.w, sink)
		if err != nil {
			return 0, fmt.Errorf("cannot read outbox mark of sink %q in %s: %w", sink, s.path, err)
		}
		cutoff = min(cutoff, m)
	}
	return cutoff, nil
}

func (s *FileStore) slowestSink(ctx context.Context) string {
	slowest, low := "", int64(math.MaxInt64)
	for _, sink := range s.opts.Sinks {
		if m, err := shippedMark(ctx, s.w, sink); err == nil && m < low {
			slowest, low = sink, m
		}
	}
	return slowest
}

// pruneOldest deletes the next pruneChunk sequence numbers at or below
// cutoff, rows and findings alike, in one transaction.
func (s *FileStore) pruneOldest(ctx context.Context, cutoff int64) (int64, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("cannot prune %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var lo sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(coalesce((SELECT min(seq) FROM ledger_rows), ?1), coalesce((SELECT min(seq) FROM findings), ?1))",
		int64(math.MaxInt64)).Scan(&lo); err != nil {
		return 0, fmt.Errorf("cannot prune %s: %w", s.path, err)
	}
	if !lo.Valid || lo.Int64 == math.MaxInt64 || lo.Int64 > cutoff {
		return 0, nil
	}
	hi := min(cutoff, lo.Int64+pruneChunk-1)
	slots, err := prunedSlots(ctx, tx, hi)
	if err != nil {
		return 0, fmt.Errorf("cannot prune %s: %w", s.path, err)
	}
	var n int64
	for _, q := range []string{"DELETE FROM ledger_rows WHERE seq <= ?", "DELETE FROM findings WHERE seq <= ?"} {
		res, err := tx.ExecContext(ctx, q, hi)
		if err != nil {
			return 0, fmt.Errorf("cannot prune %s: %w", s.path, err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := rebuildSlots(ctx, tx, slots); err != nil {
		return 0, fmt.Errorf("cannot prune %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("cannot prune %s: %w", s.path, err)
	}
	return n, nil
}

// prunedSlots lists the rollup slots of the rows with seq <= hi: those a
// prune must recompute.
func prunedSlots(ctx context.Context, tx *sql.Tx, hi int64) ([]int64, error) {
	rs, err := tx.QueryContext(ctx, "SELECT DISTINCT "+slotExpr+" FROM ledger_rows WHERE seq <= ? ORDER BY 1", hi)
	if err != nil {
		return nil, fmt.Errorf("cannot find rollup slots of pruned rows: %w", err)
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var slot int64
		if err := rs.Scan(&slot); err != nil {
			return nil, fmt.Errorf("cannot find rollup slots of pruned rows: %w", err)
		}
		out = append(out, slot)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("cannot find rollup slots of pruned rows: %w", err)
	}
	return out, nil
}

// shrink hands freed pages back to the file system and truncates the WAL.
// Failure only delays that, so it is logged, not returned.
func (s *FileStore) shrink(ctx context.Context) {
	if _, err := s.w.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
		s.log.Warn("cannot shrink ledger file", "err", err)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		s.log.Warn("cannot checkpoint ledger WAL", "err", err)
	}
}
