package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// retentionChunk is how much of the ledger's time one retention
// transaction deletes: a first prune of a long history is many short
// transactions, so the collector's writes wait for none of them long.
const retentionChunk = 6 * time.Hour

// pruneExpired deletes the rows whose interval started before expiry and
// the findings that ended before it, keeping what a sink has not shipped
// yet (rows with seq above shipped), and recomputes the rollup slots it
// touched. It returns the rows and findings deleted.
func (s *FileStore) pruneExpired(ctx context.Context, expiry time.Time, shipped int64) (int64, error) {
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("cannot delete rows of %s older than %s: %w", s.path, ledger.FormatTime(expiry), err)
	}
	end := nsBound(expiry, math.MinInt64)
	var deleted int64
	// Chunks start at rows, so a gap in the history costs one query.
	for from := int64(math.MinInt64); ; {
		var lo sql.NullInt64
		if err := s.w.QueryRowContext(ctx, "SELECT min(interval_start_ns) FROM ledger_rows WHERE interval_start_ns >= ?", from).Scan(&lo); err != nil {
			return fail(err)
		}
		if !lo.Valid || lo.Int64 >= end {
			break
		}
		hi := lo.Int64 + min(int64(retentionChunk), end-lo.Int64)
		n, err := s.deleteRange(ctx, lo.Int64, hi, shipped)
		if err != nil {
			return fail(err)
		}
		deleted += n
		from = hi
	}
	res, err := s.w.ExecContext(ctx, "DELETE FROM findings WHERE end_ns < ? AND seq <= ?", end, shipped)
	if err != nil {
		return fail(err)
	}
	n, _ := res.RowsAffected()
	return deleted + n, nil
}

// deleteRange deletes the shipped rows starting in [lo, hi) in one
// transaction with the rollups of their slots.
func (s *FileStore) deleteRange(ctx context.Context, lo, hi, shipped int64) (int64, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	const where = " FROM ledger_rows WHERE interval_start_ns >= ? AND interval_start_ns < ? AND seq <= ?"
	rs, err := tx.QueryContext(ctx, "SELECT DISTINCT "+slotExpr+where+" ORDER BY 1", lo, hi, shipped)
	if err != nil {
		return 0, err
	}
	var slots []int64
	for rs.Next() {
		var slot int64
		if err := rs.Scan(&slot); err != nil {
			rs.Close()
			return 0, err
		}
		slots = append(slots, slot)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return 0, err
	}
	if len(slots) == 0 {
		return 0, nil
	}
	res, err := tx.ExecContext(ctx, "DELETE"+where, lo, hi, shipped)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if err := rebuildSlots(ctx, tx, slots); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
