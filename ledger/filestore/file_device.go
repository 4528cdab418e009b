package filestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/gpuledger/gpuledger/ledger"
)

// The per-device rollup: ledger_rollup_device holds, per 15-minute slot and
// (row group, GPU UUID, slice, pod name), the sums a report needs, for
// Aggregate queries with ByDevice (the FOCUS export's per-GPU rows). It is
// kept exactly like ledger_rollup: every slot the slot rollup recomputes
// is recomputed here in the same transaction, from the raw rows, by the
// statement the raw path runs (deviceRollupSQL and deviceAggregateSQL share
// their SELECT), and dirty or partial slots are read raw. So a ByDevice
// aggregate does not depend on the rollup's state either.
//
// The pod is the pod name, not its UID: a pod recreated under the same
// name (a StatefulSet's) is one allocated resource to finance.

// deviceRollupDDLv4 is the table as migration 4 created it; migration 5
// drops it and creates deviceRollupDDL, with the MIG profile, in its
// place. Kept as it was so that an older file migrates step by step.
const deviceRollupDDLv4 = `
CREATE TABLE IF NOT EXISTS ledger_rollup_device (
	slot                  INTEGER NOT NULL,
	grp                   INTEGER NOT NULL REFERENCES row_groups (id),
	gpu_uuid              TEXT    NOT NULL,
	slice_id              TEXT    NOT NULL,
	pod                   TEXT    NOT NULL,
	allocated_gpu_seconds REAL    NOT NULL,
	used_gpu_seconds      REAL    NOT NULL,
	memory_mib_seconds    REAL    NOT NULL,
	energy_joules         REAL    NOT NULL,
	rows                  INTEGER NOT NULL,
	PRIMARY KEY (slot, grp, gpu_uuid, slice_id, pod)
) WITHOUT ROWID;
`

// deviceRollupDDL is the per-device rollup since version 5. A slice lies
// on one MIG instance for its life (a MIG UUID is never reused), so the
// profile is a function of the key: max() picks it over rows written
// before the column existed (”), and it is not part of the key.
const deviceRollupDDL = `
CREATE TABLE IF NOT EXISTS ledger_rollup_device (
	slot                  INTEGER NOT NULL,
	grp                   INTEGER NOT NULL REFERENCES row_groups (id),
	gpu_uuid              TEXT    NOT NULL,
	slice_id              TEXT    NOT NULL,
	pod                   TEXT    NOT NULL,
	mig_profile           TEXT    NOT NULL,
	allocated_gpu_seconds REAL    NOT NULL,
	used_gpu_seconds      REAL    NOT NULL,
	memory_mib_seconds    REAL    NOT NULL,
	energy_joules         REAL    NOT NULL,
	rows                  INTEGER NOT NULL,
	PRIMARY KEY (slot, grp, gpu_uuid, slice_id, pod)
) WITHOUT ROWID;
`

const deviceAggregateSQL = `SELECT grp, gpu_uuid, slice_id, pod, max(mig_profile), total(allocated_gpu_seconds), total(used_gpu_seconds),
	total(memory_mib_seconds), total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY grp, gpu_uuid, slice_id, pod`

// deviceRollupSQL is deviceAggregateSQL with the slot number added.
const deviceRollupSQL = `INSERT INTO ledger_rollup_device (slot, grp, gpu_uuid, slice_id, pod, mig_profile,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows)
SELECT ?3, grp, gpu_uuid, slice_id, pod, max(mig_profile), total(allocated_gpu_seconds), total(used_gpu_seconds),
	total(memory_mib_seconds), total(energy_joules), count(*)
FROM ledger_rows
WHERE interval_start_ns >= ?1 AND interval_start_ns < ?2
GROUP BY grp, gpu_uuid, slice_id, pod`

// deviceRollupRowsSQL reads the whole device rollup in key order, as
// rollupRowsSQL.
const deviceRollupRowsSQL = `SELECT slot, grp, gpu_uuid, slice_id, pod, mig_profile, allocated_gpu_seconds, used_gpu_seconds,
	memory_mib_seconds, energy_joules, rows, %s
FROM ledger_rollup_device %s
ORDER BY slot, grp, gpu_uuid, slice_id, pod`

// deviceRollupChkCols are the columns a device rollup row's checksum
// covers, in order.
const deviceRollupChkCols = "slot, grp, gpu_uuid, slice_id, pod, mig_profile, allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows"

// deviceRollupWriter recomputes the per-device rollup of slots; nil
// statements (a file migrating through version 2, before the table
// exists) make it a no-op: migration 4 rebuilds every slot.
type deviceRollupWriter struct {
	clear, insert *sql.Stmt
	sum           *sql.Stmt // nil before version 8, see rollupWriter
}

func newDeviceRollupWriter(ctx context.Context, tx *sql.Tx) (*deviceRollupWriter, error) {
	w := &deviceRollupWriter{}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'ledger_rollup_device'").Scan(&n); err != nil {
		return nil, fmt.Errorf("cannot prepare device rollup update: %w", err)
	}
	if n == 0 {
		return w, nil
	}
	var err error
	if w.clear, err = tx.PrepareContext(ctx, "DELETE FROM ledger_rollup_device WHERE slot = ?"); err != nil {
		return nil, fmt.Errorf("cannot prepare device rollup update: %w", err)
	}
	if w.insert, err = tx.PrepareContext(ctx, deviceRollupSQL); err != nil {
		return nil, fmt.Errorf("cannot prepare device rollup update: %w", err)
	}
	if w.sum, err = prepareChecksums(ctx, tx, "ledger_rollup_device"); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *deviceRollupWriter) rebuild(ctx context.Context, s int64) error {
	if w.clear == nil {
		return nil
	}
	if _, err := w.clear.ExecContext(ctx, s); err != nil {
		return fmt.Errorf("cannot clear device rollup of slot %s: %w", slotName(s), err)
	}
	if _, err := w.insert.ExecContext(ctx, slotStart(s), slotEnd(s), s); err != nil {
		return fmt.Errorf("cannot recompute device rollup of slot %s: %w", slotName(s), err)
	}
	if w.sum != nil {
		if _, err := w.sum.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("cannot checksum device rollup of slot %s: %w", slotName(s), err)
		}
	}
	return nil
}

// deviceSums are one device group's totals over some rows.
type deviceSums struct {
	key     deviceKey
	profile string
	sums
}

type deviceKey struct {
	grp             int64
	gpu, slice, pod string
}

func (g deviceSums) rowKey() deviceKey  { return g.key }
func (g deviceSums) rowGrp() int64      { return g.key.grp }
func (g deviceSums) rowProfile() string { return g.profile }

// deviceGrain is Aggregate with ByDevice: the same plan (whole clean slots
// from the rollup, the rest raw, added in slot order), on the per-device
// tables.
var deviceGrain = grain[deviceKey, deviceSums]{
	per:       " per device",
	rawSQL:    deviceAggregateSQL,
	rollupSQL: deviceRollupRowsSQL,
	rollup:    "device rollup",
	cache:     1,
	dest: func(g *deviceSums) []any {
		return []any{&g.key.grp, &g.key.gpu, &g.key.slice, &g.key.pod, &g.profile, &g.alloc, &g.used, &g.mem, &g.energy, &g.rows}
	},
	fill: func(a *ledger.Aggregate, k deviceKey) { a.GPUUUID, a.SliceID, a.Pod = k.gpu, k.slice, k.pod },
	sort: ledger.SortDeviceAggregates,
	checksum: func(slot int64, g *deviceSums) int64 {
		h := newChecksum()
		h.i64(slot)
		h.i64(g.key.grp)
		h.str(g.key.gpu)
		h.str(g.key.slice)
		h.str(g.key.pod)
		h.str(g.profile)
		g.hash(&h)
		return h.sum()
	},
	before: func(slot int64, a *deviceSums, next int64, b *deviceSums) bool {
		// SQLite's BINARY collation orders text as Go compares strings.
		return cmp.Or(cmp.Compare(slot, next), cmp.Compare(a.key.grp, b.key.grp), strings.Compare(a.key.gpu, b.key.gpu),
			strings.Compare(a.key.slice, b.key.slice), strings.Compare(a.key.pod, b.key.pod)) < 0
	},
}

// rebuildDeviceRollup builds the per-device rollup of every slot holding
// rows: migration 5, which recreates the table with the profile. The slot rollup is left as it is (its slots are
// already exact).
func rebuildDeviceRollup(ctx context.Context, tx *sql.Tx) error {
	w, err := newDeviceRollupWriter(ctx, tx)
	if err != nil {
		return err
	}
	return forEachSlotWithRows(ctx, tx, w.rebuild)
}
