package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// The rollup: ledger_rollup holds, per 15-minute slot of interval start
// (UTC) and row group, the sums a report needs. Every UTC offset in use is
// a multiple of 15 minutes, so the hours, days and months of any real zone
// are whole slots and Aggregate reads a month as a few thousand rollup rows
// instead of millions of ledger rows; a slot a bucket covers only in part
// (query edges, historic local mean times) is read from the raw rows.
//
// A slot's rollup rows are never adjusted by deltas: they are recomputed
// from the raw rows of the slot with the same statement the raw path of
// Aggregate runs (rollupSQL and aggregateSQL), so they equal a raw read
// bit for bit, whatever replays, corrections and prunes happened.
//
// Every rollup row carries a checksum of its key and sums (chk, see
// integrity.go), set by the writer right after the row is computed, and
// every dirty mark one of its slot and lowest seq; readers verify them.
//
// Recomputing the slot the collector is writing at every cycle would
// rescan it fifteen times, so the newest slot an Append touched is only
// marked in rollup_dirty; the next Append that moves on recomputes it.
// Aggregate reads a dirty slot from the raw rows. Rows and marks change in
// one transaction, so a reader always sees a rollup that is exact where it
// is not marked.

// slotNS is the rollup grain.
const slotNS = int64(15 * time.Minute)

// slotExpr is slotOf in SQL: floor division without overflow at either
// end of the int64 range.
const slotExpr = `(interval_start_ns / 900000000000 - (interval_start_ns % 900000000000 < 0))`

var (
	minSlot = slotOf(math.MinInt64)
	maxSlot = slotOf(math.MaxInt64)
)

// slotOf is the slot holding the instant ns (unix nanoseconds).
func slotOf(ns int64) int64 {
	s := ns / slotNS
	if ns%slotNS < 0 {
		s--
	}
	return s
}

// slotStart is the first instant of slot s, clamped to the int64 range:
// the first slot starts at math.MinInt64, and one past the last slot at
// math.MaxInt64 (an instant no range [lo, hi) can hold).
func slotStart(s int64) int64 {
	switch {
	case s <= minSlot:
		return math.MinInt64
	case s > maxSlot:
		return math.MaxInt64
	}
	return s * slotNS
}

func slotEnd(s int64) int64 { return slotStart(s + 1) }

// rollupSQL recomputes one slot; its SELECT is aggregateSQL's with the slot
// number added, so both feed total() the same rows in the same order.
const rollupSQL = `INSERT INTO ledger_rollup (slot, grp, allocated_gpu_seconds, used_gpu_seconds,
	memory_mib_seconds, energy_joules, rows)
SELECT ?3, grp, total(allocated_gpu_seconds), total(used_gpu_seconds),
	total(memory_mib_seconds), total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY grp`

// rollupChkCols are the columns a rollup row's checksum covers, in order.
const rollupChkCols = "slot, grp, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows"

// slotSet collects the slots of the rows a transaction changed.
type slotSet struct {
	slots []int64
	last  int64
}

func (t *slotSet) add(ns int64) {
	s := slotOf(ns)
	if len(t.slots) > 0 && s == t.last {
		return // rows of one cycle share a slot: skip the common case cheaply
	}
	t.slots, t.last = append(t.slots, s), s
}

// sorted returns the distinct slots in order.
func (t *slotSet) sorted() []int64 {
	slices.Sort(t.slots)
	return slices.Compact(t.slots)
}

// rollupWriter recomputes slots inside one write transaction.
type rollupWriter struct {
	tx                     *sql.Tx
	clear, insert, undirty *sql.Stmt
	// sum sets the checksums of a slot's new rows; nil while a file
	// migrates through versions before 8, whose migration sets them all.
	sum *sql.Stmt
	dev *deviceRollupWriter // the per-device rollup (file_device.go)
}

// prepareChecksums prepares the statement setting the checksums of one
// slot's rows of table (chkTables), or returns nil while the table has no
// chk column yet.
func prepareChecksums(ctx context.Context, tx *sql.Tx, table string) (*sql.Stmt, error) {
	has, err := hasColumn(ctx, tx, table, "chk")
	if err != nil || !has {
		return nil, err
	}
	for _, t := range chkTables {
		if t.table == table {
			st, err := tx.PrepareContext(ctx, "UPDATE "+table+" SET chk = "+t.chk+" WHERE slot = ?")
			if err != nil {
				return nil, fmt.Errorf("cannot prepare the checksums of %s: %w", table, err)
			}
			return st, nil
		}
	}
	return nil, fmt.Errorf("no checksum of table %s", table)
}

func newRollupWriter(ctx context.Context, tx *sql.Tx) (*rollupWriter, error) {
	w := &rollupWriter{tx: tx}
	var err error
	if w.clear, err = tx.PrepareContext(ctx, "DELETE FROM ledger_rollup WHERE slot = ?"); err != nil {
		return nil, fmt.Errorf("cannot prepare rollup update: %w", err)
	}
	if w.insert, err = tx.PrepareContext(ctx, rollupSQL); err != nil {
		return nil, fmt.Errorf("cannot prepare rollup update: %w", err)
	}
	if w.undirty, err = tx.PrepareContext(ctx, "DELETE FROM rollup_dirty WHERE slot = ?"); err != nil {
		return nil, fmt.Errorf("cannot prepare rollup update: %w", err)
	}
	if w.sum, err = prepareChecksums(ctx, tx, "ledger_rollup"); err != nil {
		return nil, err
	}
	if w.dev, err = newDeviceRollupWriter(ctx, tx); err != nil {
		return nil, err
	}
	return w, nil
}

// rebuild recomputes slot s from its raw rows and clears its dirty mark.
func (w *rollupWriter) rebuild(ctx context.Context, s int64) error {
	if _, err := w.clear.ExecContext(ctx, s); err != nil {
		return fmt.Errorf("cannot clear rollup of slot %s: %w", slotName(s), err)
	}
	if _, err := w.insert.ExecContext(ctx, slotStart(s), slotEnd(s), s); err != nil {
		return fmt.Errorf("cannot recompute rollup of slot %s: %w", slotName(s), err)
	}
	if w.sum != nil {
		if _, err := w.sum.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("cannot checksum rollup of slot %s: %w", slotName(s), err)
		}
	}
	if err := w.dev.rebuild(ctx, s); err != nil {
		return err
	}
	if _, err := w.undirty.ExecContext(ctx, s); err != nil {
		return fmt.Errorf("cannot clear dirty mark of slot %s: %w", slotName(s), err)
	}
	return nil
}

func slotName(s int64) string { return ledger.FormatTime(fromNS(slotStart(s))) }

// afterAppend brings the rollup up to date with the slots an Append
// changed: every dirty slot but the newest changed one is recomputed, and
// that one is marked dirty for the next Append to recompute.
func afterAppend(ctx context.Context, tx *sql.Tx, changed []int64) error {
	if len(changed) == 0 {
		return nil // a pure replay: nothing moved
	}
	head := changed[len(changed)-1]
	// Verified: a mark damaged into another slot's number would make
	// this recompute that slot and drop the mark, leaving the slot it
	// named stale and unmarked, billed short for good. The append fails
	// instead (ErrCorrupt), as every read of the file does.
	dirty, err := dirtySlots(ctx, tx, math.MinInt64, math.MaxInt64, true)
	if err != nil {
		return err
	}
	todo := slices.Compact(slices.Sorted(slices.Values(append(dirty, changed[:len(changed)-1]...))))
	todo = slices.DeleteFunc(todo, func(s int64) bool { return s == head })
	if err := rebuildSlots(ctx, tx, todo); err != nil {
		return err
	}
	if slices.Contains(dirty, head) {
		return nil
	}
	return markDirty(ctx, tx, head)
}

// markDirty marks slot s dirty, with the lowest seq of its rows: a reader
// counts the slot's rows from there through the table itself as well as
// through the key index, and refuses the file when the counts differ (see
// checkDirty). Rows written to the slot later get higher numbers, and a
// changed row a new one, so the bound holds while the mark does.
func markDirty(ctx context.Context, tx *sql.Tx, s int64) error {
	var low sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(seq) FROM ledger_rows WHERE interval_start_ns >= ? AND interval_start_ns < ?",
		slotStart(s), slotEnd(s)).Scan(&low); err != nil {
		return fmt.Errorf("cannot mark rollup slot %s dirty: %w", slotName(s), err)
	}
	if !low.Valid { // no rows: any written later are numbered from next_seq
		if err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'next_seq'").Scan(&low.Int64); err != nil {
			return fmt.Errorf("cannot mark rollup slot %s dirty: %w", slotName(s), err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO rollup_dirty (slot, seq, chk) VALUES (?, ?, ?)", s, low.Int64, checksumOf(s, low.Int64)); err != nil {
		return fmt.Errorf("cannot mark rollup slot %s dirty: %w", slotName(s), err)
	}
	return nil
}

// rebuildSlots recomputes the given slots.
func rebuildSlots(ctx context.Context, tx *sql.Tx, slots []int64) error {
	if len(slots) == 0 {
		return nil
	}
	w, err := newRollupWriter(ctx, tx)
	if err != nil {
		return err
	}
	for _, s := range slots {
		if err := w.rebuild(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// dirtySlots lists the marked slots in [lo, hi), in order (dirtyMarks).
func dirtySlots(ctx context.Context, q querier, lo, hi int64, verify bool) ([]int64, error) {
	marks, err := dirtyMarks(ctx, q, lo, hi, verify)
	out := make([]int64, len(marks))
	for i, m := range marks {
		out[i] = m.slot
	}
	return out, err
}

// dirtyMark is a slot whose rollup is stale, and the lowest seq of its
// rows (0 where the file has no checksums).
type dirtyMark struct{ slot, seq int64 }

// dirtyMarks lists the marks of the slots in [lo, hi), in order. With
// verify (a file with checksums) it reads every mark, a few at most, and
// checks each: a flipped bit that moved a mark out of the range would
// otherwise leave its slot to a stale rollup row, billed short without a
// word.
func dirtyMarks(ctx context.Context, q querier, lo, hi int64, verify bool) ([]dirtyMark, error) {
	query, args := "SELECT slot, 0, 0 FROM rollup_dirty WHERE slot >= ? AND slot < ? ORDER BY slot", []any{lo, hi}
	if verify {
		query, args = "SELECT slot, seq, chk FROM rollup_dirty ORDER BY slot", nil
	}
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("cannot read dirty rollup slots: %w", err)
	}
	defer rs.Close()
	var out []dirtyMark
	for rs.Next() {
		var m dirtyMark
		var chk int64
		if err := rs.Scan(&m.slot, &m.seq, &chk); err != nil {
			if verify {
				return nil, errDamaged("cannot read dirty rollup slots: %v", err)
			}
			return nil, fmt.Errorf("cannot read dirty rollup slots: %w", err)
		}
		if verify && chk != 0 && chk != checksumOf(m.slot, m.seq) {
			return nil, errDamaged("the dirty mark of rollup slot %s fails its checksum", slotName(m.slot))
		}
		if m.slot >= lo && m.slot < hi {
			out = append(out, m)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("cannot read dirty rollup slots: %w", err)
	}
	return out, nil
}

// rebuildRollup recomputes the rollup of every slot holding rows: the
// migration of files written before the rollup existed.
func rebuildRollup(ctx context.Context, tx *sql.Tx) error {
	w, err := newRollupWriter(ctx, tx)
	if err != nil {
		return err
	}
	return forEachSlotWithRows(ctx, tx, w.rebuild)
}

// forEachSlotWithRows calls fn for every rollup slot holding ledger rows,
// in time order. Slots are found by seeking the key index, so empty
// stretches cost nothing.
func forEachSlotWithRows(ctx context.Context, tx *sql.Tx, fn func(context.Context, int64) error) error {
	next, err := tx.PrepareContext(ctx, "SELECT min(interval_start_ns) FROM ledger_rows WHERE interval_start_ns >= ?")
	if err != nil {
		return fmt.Errorf("cannot prepare the slot scan: %w", err)
	}
	defer next.Close()
	from := int64(math.MinInt64)
	for {
		var ns sql.NullInt64
		if err := next.QueryRowContext(ctx, from).Scan(&ns); err != nil {
			return fmt.Errorf("cannot find ledger rows after %s: %w", ledger.FormatTime(fromNS(from)), err)
		}
		if !ns.Valid {
			return nil
		}
		s := slotOf(ns.Int64)
		if err := fn(ctx, s); err != nil {
			return err
		}
		if from = slotEnd(s); from == math.MaxInt64 {
			return nil
		}
	}
}
