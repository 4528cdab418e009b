package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"
)

// FileSchemaVersion is the schema version this build writes, kept in the
// file's PRAGMA user_version.
const FileSchemaVersion = 11

// fileMinReadVersion is the oldest schema a read-only open reads: version
// 6 only adds the quota changes, which a version-5 file has none of
// (QuotaChanges returns nothing), version 7 the node labels (none:
// NodeLabels returns none), and version 8 the row checksums (a file
// without them is read unverified: FileStore.hasChk), so readers need no
// migration for them; version 9 adds the closings (none: ClosingHistory
// returns none).
const fileMinReadVersion = 5

// fileApplicationID marks a SQLite file as a gpuledger ledger ("GPUL").
const fileApplicationID = 0x4750554C

// migration is one schema step: statements, then an optional data step.
type migration struct {
	sql  string
	data func(ctx context.Context, tx *sql.Tx) error
}

// fileMigrations[v-1] brings a file from version v-1 to v. Each runs inside
// the migration transaction together with the version bump, so a crash
// leaves the file at one version or the next, never between.
var fileMigrations = []migration{
	// 1: rows keyed for idempotent replays, findings, the outbox. A row's
	// seq is its rowid: writes append to the end of the table b-tree, and
	// the outbox (NextBatch, Prune) reads and deletes rowid ranges. The
	// unique key index serves replays and the time-ordered Rows scan.
	// Team, namespace, GPU model, sharing mode and kind live once in
	// row_groups (see groupKey); kind stays in the row for the key.
	{sql: `
CREATE TABLE IF NOT EXISTS row_groups (
	id           INTEGER PRIMARY KEY,
	team         TEXT NOT NULL,
	namespace    TEXT NOT NULL,
	gpu_model    TEXT NOT NULL,
	sharing_mode TEXT NOT NULL,
	kind         TEXT NOT NULL,
	UNIQUE (team, namespace, gpu_model, sharing_mode, kind)
);

CREATE TABLE IF NOT EXISTS ledger_rows (
	seq                   INTEGER PRIMARY KEY,
	interval_start_ns     INTEGER NOT NULL,
	node                  TEXT    NOT NULL,
	gpu_uuid              TEXT    NOT NULL,
	slice_id              TEXT    NOT NULL,
	pod_uid               TEXT    NOT NULL,
	container             TEXT    NOT NULL,
	kind                  TEXT    NOT NULL,
	interval_end_ns       INTEGER NOT NULL,
	grp                   INTEGER NOT NULL REFERENCES row_groups (id),
	pod                   TEXT    NOT NULL,
	allocated_gpu_seconds REAL    NOT NULL,
	used_gpu_seconds      REAL    NOT NULL,
	memory_mib_seconds    REAL    NOT NULL,
	energy_joules         REAL    NOT NULL,
	method                TEXT    NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_rows_key ON ledger_rows (interval_start_ns, node, gpu_uuid, slice_id, pod_uid, container, kind);

CREATE TABLE IF NOT EXISTS findings (
	kind      TEXT    NOT NULL,
	node      TEXT    NOT NULL,
	gpu_uuid  TEXT    NOT NULL,
	namespace TEXT    NOT NULL,
	pod       TEXT    NOT NULL,
	container TEXT    NOT NULL,
	start_ns  INTEGER NOT NULL,
	end_ns    INTEGER NOT NULL,
	team      TEXT    NOT NULL,
	detail    TEXT    NOT NULL,
	noisy_pod TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	PRIMARY KEY (kind, node, gpu_uuid, namespace, pod, container, start_ns)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS findings_seq ON findings (seq);
CREATE INDEX IF NOT EXISTS findings_start ON findings (start_ns);

-- next_seq is the outbox sequence the next written row gets. It lives here,
-- not in max(seq), so pruning the newest shipped rows never lets a number
-- be handed out twice.
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('next_seq', 1);

CREATE TABLE IF NOT EXISTS outbox_marks (
	sink        TEXT PRIMARY KEY,
	shipped_seq INTEGER NOT NULL
) WITHOUT ROWID;
`},
	// 2: the 15-minute rollup that monthly reports read (see rollup.go),
	// built from the rows already stored.
	{sql: `
CREATE TABLE IF NOT EXISTS ledger_rollup (
	slot                  INTEGER NOT NULL,
	grp                   INTEGER NOT NULL REFERENCES row_groups (id),
	allocated_gpu_seconds REAL    NOT NULL,
	used_gpu_seconds      REAL    NOT NULL,
	memory_mib_seconds    REAL    NOT NULL,
	energy_joules         REAL    NOT NULL,
	rows                  INTEGER NOT NULL,
	PRIMARY KEY (slot, grp)
) WITHOUT ROWID;

-- Slots whose rollup rows are stale: Aggregate reads them raw.
CREATE TABLE IF NOT EXISTS rollup_dirty (
	slot INTEGER PRIMARY KEY
);
`, data: rebuildRollup},
	// 3: the annotation values in force per container (file_pins.go), so
	// that a restarted collector charges by the values its predecessor
	// first observed.
	{sql: `
CREATE TABLE IF NOT EXISTS annotation_pins (
	pod_uid   TEXT    NOT NULL,
	container TEXT    NOT NULL,
	key       TEXT    NOT NULL,
	value     TEXT    NOT NULL,
	at_ns     INTEGER NOT NULL,
	PRIMARY KEY (pod_uid, container, key)
) WITHOUT ROWID;
`},
	// 4: the per-device rollup the FOCUS export reads (file_device.go).
	// Version 4 files were built here; migration 5 rebuilds it anyway, so
	// a file passing through is not built twice.
	{sql: deviceRollupDDLv4},
	// 5: the MIG profile of container rows (the FOCUS SkuId), and the
	// per-device rollup again, now carrying it. Rows stored before have
	// no profile ('').
	{sql: `
ALTER TABLE ledger_rows ADD COLUMN mig_profile TEXT NOT NULL DEFAULT '';
DROP TABLE IF EXISTS ledger_rollup_device;
` + deviceRollupDDL, data: rebuildDeviceRollup},
	// 6: GPU quota over time (file_quota.go): one row per change of a
	// quota object's resource, keyed to the second so a replay replaces
	// it. The at index serves the period reads and the retention.
	{sql: `
CREATE TABLE IF NOT EXISTS quota_changes (
	source      TEXT    NOT NULL,
	object      TEXT    NOT NULL,
	resource    TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	team        TEXT    NOT NULL,
	milli       INTEGER NOT NULL,
	limit_milli INTEGER NOT NULL,
	deleted     INTEGER NOT NULL,
	PRIMARY KEY (source, object, resource, at)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS quota_changes_at ON quota_changes (at);
`},
	// 7: node labels over time (file_nodelabels.go), such as each node's
	// region for carbon intensities: one row per change of a node's
	// label, keyed to the second so a replay replaces it.
	{sql: `
CREATE TABLE IF NOT EXISTS node_labels (
	node    TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	at      INTEGER NOT NULL,
	value   TEXT    NOT NULL,
	deleted INTEGER NOT NULL,
	PRIMARY KEY (node, key, at)
) WITHOUT ROWID;
`},
	// 8: a checksum in every rollup row, dirty mark and raw row
	// (integrity.go), which readers verify, and in each dirty mark the
	// lowest seq of its slot's rows (see markDirty). The rollups and marks
	// are small and get theirs now; the raw rows already stored keep 0
	// (not verified): computing theirs would rewrite the whole file.
	{data: addChecksums},
	// 9: the append-only history of month closings, reopenings and
	// posts (file_closing.go).
	{sql: closingsDDL},
	// 10: the price books in force over time (file_pricebooks.go).
	{sql: priceBooksDDL},
	// 11: the cluster of every row, finding, quota change and node label
	// (a fleet of clusters on one ledger): a node is (cluster, node).
	// What was stored before is the default cluster's. The cluster joins
	// every key; where it is a table's primary key (findings, quota
	// changes, node labels) or a UNIQUE constraint (row groups), SQLite
	// cannot change the key in place, so the table is copied into a new
	// one and renamed; the raw rows keep their table and get a new key
	// index. Row group ids are kept, so the rollups and checksums that
	// name them stay valid: the rollups split by cluster through the
	// group.
	{data: addCluster},
}

// clusterTables are the tables migration 11 copies into a new one with a
// cluster column in the key: the statements create the copy as
// <table>_v11, fill it from the old table's columns (cols) and rename it;
// after are the indexes to create again.
var clusterTables = []struct{ table, ddl, cols, after string }{
	{"row_groups", `CREATE TABLE row_groups_v11 (
	id           INTEGER PRIMARY KEY,
	cluster      TEXT NOT NULL DEFAULT 'default',
	team         TEXT NOT NULL,
	namespace    TEXT NOT NULL,
	gpu_model    TEXT NOT NULL,
	sharing_mode TEXT NOT NULL,
	kind         TEXT NOT NULL,
	UNIQUE (cluster, team, namespace, gpu_model, sharing_mode, kind)
)`, "id, team, namespace, gpu_model, sharing_mode, kind", ""},
	{"findings", `CREATE TABLE findings_v11 (
	kind      TEXT    NOT NULL,
	cluster   TEXT    NOT NULL DEFAULT 'default',
	node      TEXT    NOT NULL,
	gpu_uuid  TEXT    NOT NULL,
	namespace TEXT    NOT NULL,
	pod       TEXT    NOT NULL,
	container TEXT    NOT NULL,
	start_ns  INTEGER NOT NULL,
	end_ns    INTEGER NOT NULL,
	team      TEXT    NOT NULL,
	detail    TEXT    NOT NULL,
	noisy_pod TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	PRIMARY KEY (kind, cluster, node, gpu_uuid, namespace, pod, container, start_ns)
) WITHOUT ROWID`, "kind, node, gpu_uuid, namespace, pod, container, start_ns, end_ns, team, detail, noisy_pod, seq",
		`CREATE UNIQUE INDEX IF NOT EXISTS findings_seq ON findings (seq);
CREATE INDEX IF NOT EXISTS findings_start ON findings (start_ns);`},
	{"quota_changes", `CREATE TABLE quota_changes_v11 (
	cluster     TEXT    NOT NULL DEFAULT 'default',
	source      TEXT    NOT NULL,
	object      TEXT    NOT NULL,
	resource    TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	team        TEXT    NOT NULL,
	milli       INTEGER NOT NULL,
	limit_milli INTEGER NOT NULL,
	deleted     INTEGER NOT NULL,
	PRIMARY KEY (cluster, source, object, resource, at)
) WITHOUT ROWID`, "source, object, resource, at, team, milli, limit_milli, deleted",
		"CREATE INDEX IF NOT EXISTS quota_changes_at ON quota_changes (at);"},
	{"node_labels", `CREATE TABLE node_labels_v11 (
	cluster TEXT    NOT NULL DEFAULT 'default',
	node    TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	at      INTEGER NOT NULL,
	value   TEXT    NOT NULL,
	deleted INTEGER NOT NULL,
	PRIMARY KEY (cluster, node, key, at)
) WITHOUT ROWID`, "node, key, at, value, deleted", ""},
}

// addCluster is migration 11. Like addChecksums it changes only what
// lacks the cluster, so a file taken back to an older version number by
// hand migrates again. The old tables are dropped before the copies are
// renamed: the tables that reference row_groups keep naming it.
func addCluster(ctx context.Context, tx *sql.Tx) error {
	for _, t := range clusterTables {
		if ok, err := hasTable(ctx, tx, t.table); err != nil || !ok {
			if err != nil {
				return err
			}
			continue // a table a hand-undone test file lacks: a later open creates none, reads none
		}
		has, err := hasColumn(ctx, tx, t.table, "cluster")
		if err != nil {
			return err
		}
		if has {
			continue
		}
		stmts := t.ddl + ";\nINSERT INTO " + t.table + "_v11 (" + t.cols + ") SELECT " + t.cols + " FROM " + t.table +
			";\nDROP TABLE " + t.table + ";\nALTER TABLE " + t.table + "_v11 RENAME TO " + t.table + ";\n" + t.after
		if _, err := tx.ExecContext(ctx, stmts); err != nil {
			return fmt.Errorf("cannot add the cluster to %s: %w", t.table, err)
		}
	}
	has, err := hasColumn(ctx, tx, "ledger_rows", "cluster")
	if err != nil {
		return err
	}
	if !has {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE ledger_rows ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default'"); err != nil {
			return fmt.Errorf("cannot add the cluster to ledger_rows: %w", err)
		}
	}
	// Which cluster each name belongs to (file_cluster.go).
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS cluster_identities (
	cluster    TEXT    PRIMARY KEY,
	id         TEXT    NOT NULL,
	first_seen INTEGER NOT NULL
) WITHOUT ROWID`); err != nil {
		return fmt.Errorf("cannot create cluster_identities: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS ledger_rows_key;
CREATE UNIQUE INDEX ledger_rows_key ON ledger_rows (`+rowKeyCols+`);`); err != nil {
		return fmt.Errorf("cannot key ledger_rows by cluster: %w", err)
	}
	return nil
}

// rowKeyCols are the raw rows' key, led by the interval start so that a
// time range is one index range.
const rowKeyCols = "interval_start_ns, cluster, node, gpu_uuid, slice_id, pod_uid, container, kind"

// chkTables are the tables that carry a checksum since version 8, with
// the SQL computing it from a row's own columns.
var chkTables = []struct{ table, chk string }{
	{"ledger_rollup", chkFunc + "(" + rollupChkCols + ")"},
	{"ledger_rollup_device", chkFunc + "(" + deviceRollupChkCols + ")"},
	{"rollup_dirty", ""}, // markDirty's checksum, set by addChecksums
	{"ledger_rows", ""},
}

// addChecksums is migration 8. It adds the columns only where missing, so
// a file taken back to an older version number by hand migrates again.
func addChecksums(ctx context.Context, tx *sql.Tx) error {
	for _, t := range chkTables {
		has, err := hasColumn(ctx, tx, t.table, "chk")
		if err != nil {
			return err
		}
		if !has {
			if _, err := tx.ExecContext(ctx, "ALTER TABLE "+t.table+" ADD COLUMN chk INTEGER NOT NULL DEFAULT 0"); err != nil {
				return fmt.Errorf("cannot add checksums to %s: %w", t.table, err)
			}
		}
		if t.chk == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, "UPDATE "+t.table+" SET chk = "+t.chk); err != nil {
			return fmt.Errorf("cannot compute the checksums of %s: %w", t.table, err)
		}
	}
	has, err := hasColumn(ctx, tx, "rollup_dirty", "seq")
	if err != nil {
		return err
	}
	if !has {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE rollup_dirty ADD COLUMN seq INTEGER NOT NULL DEFAULT 0"); err != nil {
			return fmt.Errorf("cannot add sequence numbers to rollup_dirty: %w", err)
		}
	}
	dirty, err := dirtySlots(ctx, tx, math.MinInt64, math.MaxInt64, false)
	if err != nil {
		return err
	}
	for _, slot := range dirty {
		if _, err := tx.ExecContext(ctx, "DELETE FROM rollup_dirty WHERE slot = ?", slot); err != nil {
			return fmt.Errorf("cannot renew the dirty mark of slot %s: %w", slotName(slot), err)
		}
		if err := markDirty(ctx, tx, slot); err != nil {
			return err
		}
	}
	return nil
}

// hasTable says whether the file has table.
func hasTable(ctx context.Context, q querier, table string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", table).Scan(&n); err != nil {
		return false, fmt.Errorf("cannot read the tables of the file: %w", err)
	}
	return n > 0, nil
}

// hasColumn says whether table has column.
func hasColumn(ctx context.Context, q querier, table, column string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("cannot read the columns of %s: %w", table, err)
	}
	return n > 0, nil
}

// migrate checks the file is ours and not from a newer gpuledger, then
// applies the missing migrations in one transaction. Running it again on an
// up-to-date file changes nothing.
func (s *FileStore) migrate(ctx context.Context) error {
	// An up-to-date file needs no write lock: readers and a second writer
	// open beside a busy collector without queueing for its lock.
	var appID, version int
	err := s.w.QueryRowContext(ctx, "SELECT a.application_id, v.user_version FROM pragma_application_id() a, pragma_user_version() v").Scan(&appID, &version)
	if err == nil && appID == fileApplicationID && version == FileSchemaVersion {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot open ledger file %s: %w", s.path, s.busyWriter(err))
	}
	defer tx.Rollback()
	version, err = s.checkFile(ctx, tx)
	if err != nil {
		return err
	}
	if version == FileSchemaVersion {
		return nil
	}
	began := time.Now()
	if version > 0 {
		// Building the rollup of a large file reads every row once.
		s.log.Info("migrating ledger schema", "from", version, "to", FileSchemaVersion)
	}
	for v := version; v < FileSchemaVersion; v++ {
		if err := runMigration(ctx, tx, fileMigrations[v]); err != nil {
			return fmt.Errorf("cannot migrate ledger file %s to schema version %d: %w", s.path, v+1, err)
		}
	}
	// PRAGMA writes go to the file header inside this transaction.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", fileApplicationID, FileSchemaVersion)); err != nil {
		return fmt.Errorf("cannot set schema version of ledger file %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot migrate ledger file %s: %w", s.path, err)
	}
	if version > 0 {
		s.log.Info("ledger schema migrated", "from", version, "to", FileSchemaVersion, "took", time.Since(began).Round(time.Millisecond))
	}
	return nil
}

func runMigration(ctx context.Context, tx *sql.Tx, m migration) error {
	if m.sql != "" {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return err
		}
	}
	if m.data == nil {
		return nil
	}
	return m.data(ctx, tx)
}

// checkFile returns the file's schema version, refusing files that are not
// ledgers or come from a newer gpuledger.
func (s *FileStore) checkFile(ctx context.Context, tx *sql.Tx) (int, error) {
	var appID, version, tables int
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, fmt.Errorf("cannot read ledger file %s: %w", s.path, err)
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, fmt.Errorf("cannot read schema version of ledger file %s: %w", s.path, err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return 0, fmt.Errorf("cannot read ledger file %s: %w", s.path, err)
	}
	switch {
	case appID != fileApplicationID && (appID != 0 || tables > 0):
		return 0, fmt.Errorf("%s is a SQLite file but not a gpuledger ledger (application_id %#x)", s.path, appID)
	case version > FileSchemaVersion:
		return 0, fmt.Errorf("ledger file %s has schema version %d, newer than the %d this gpuledger supports: upgrade gpuledger", s.path, version, FileSchemaVersion)
	case version < 0:
		return 0, fmt.Errorf("ledger file %s has an invalid schema version %d", s.path, version)
	}
	return version, nil
}
