package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"
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
	dev                    *deviceRollupWriter // the per-device rollup (file_device.go)
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
	if err := w.dev.rebuild(ctx, s); err != nil {
		return err
	}
	if _, err := w.undirty.ExecContext(ctx, s); err != nil {
		return fmt.Errorf("cannot clear dirty mark of slot %s: %w", slotName(s), err)
	}
	return nil
}

func slotName(s int64) string { return FormatTime(fromNS(slotStart(s))) }

// afterAppend brings the rollup up to date with the slots an Append
// changed: every dirty slot but the newest changed one is recomputed, and
// that one is marked dirty for the next Append to recompute.
func afterAppend(ctx context.Context, tx *sql.Tx, changed []int64) error {
	if len(changed) == 0 {
		return nil // a pure replay: nothing moved
	}
	head := changed[len(changed)-1]
	dirty, err := dirtySlots(ctx, tx, math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	todo := slices.Compact(slices.Sorted(slices.Values(append(dirty, changed[:len(changed)-1]...))))
	todo = slices.DeleteFunc(todo, func(s int64) bool { return s == head })
	if err := rebuildSlots(ctx, tx, todo); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO rollup_dirty (slot) VALUES (?)", head); err != nil {
		return fmt.Errorf("cannot mark rollup slot %s dirty: %w", slotName(head), err)
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

// dirtySlots lists the marked slots in [lo, hi), in order.
func dirtySlots(ctx context.Context, q querier, lo, hi int64) ([]int64, error) {
	rs, err := q.QueryContext(ctx, "SELECT slot FROM rollup_dirty WHERE slot >= ? AND slot < ? ORDER BY slot", lo, hi)
	if err != nil {
		return nil, fmt.Errorf("cannot read dirty rollup slots: %w", err)
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var s int64
		if err := rs.Scan(&s); err != nil {
			return nil, fmt.Errorf("cannot read dirty rollup slots: %w", err)
		}
		out = append(out, s)
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
			return fmt.Errorf("cannot find ledger rows after %s: %w", FormatTime(fromNS(from)), err)
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
