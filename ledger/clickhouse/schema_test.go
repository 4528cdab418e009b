package clickhouse

import (
	"strings"
	"testing"
)

// The expected statements are written out by hand: they are what an
// operator reviews before running migrate on a production cluster.
func TestClusterDDL(t *testing.T) {
	stmts, err := MigrationDDL("gpuledger", "prod-1")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(stmts, "\n;\n")
	for _, want := range []string{
		"CREATE DATABASE IF NOT EXISTS gpuledger ON CLUSTER `prod-1`",
		"CREATE TABLE IF NOT EXISTS gpuledger.schema_migrations_local ON CLUSTER `prod-1`",
		"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/gpuledger/schema_migrations_local', '{replica}')\nORDER BY (version)",
		"CREATE TABLE IF NOT EXISTS gpuledger.ledger_rows_local ON CLUSTER `prod-1` (",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuledger/ledger_rows_local', '{replica}', version)\n" +
			"PARTITION BY toYYYYMM(interval_start)\n" +
			"ORDER BY (toStartOfHour(interval_start), node, gpu_uuid, slice_id, pod_uid, container, kind, interval_start, interval_start_ns)",
		"CREATE TABLE IF NOT EXISTS gpuledger.ledger_rows ON CLUSTER `prod-1` AS gpuledger.ledger_rows_local " +
			"ENGINE = Distributed('prod-1', 'gpuledger', 'ledger_rows_local', cityHash64(node))",
		"CREATE TABLE IF NOT EXISTS gpuledger.ledger_findings ON CLUSTER `prod-1` AS gpuledger.ledger_findings_local " +
			"ENGINE = Distributed('prod-1', 'gpuledger', 'ledger_findings_local', cityHash64(node))",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuledger/ledger_rollup_hourly_local', '{replica}', version)\n" +
			"PARTITION BY toYYYYMM(hour)\nORDER BY (hour, team, namespace, gpu_model, sharing_mode, kind)",
		"ENGINE = Distributed('prod-1', 'gpuledger', 'ledger_rollup_daily_local', toUnixTimestamp(day))",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuledger/ledger_rollup_marks_local', '{replica}', seq)",
		"ALTER TABLE gpuledger.ledger_rows_local ON CLUSTER `prod-1` ADD COLUMN mig_profile String DEFAULT '' AFTER slice_id",
		"DROP TABLE IF EXISTS gpuledger.ledger_rows ON CLUSTER `prod-1`\n;\nCREATE TABLE IF NOT EXISTS gpuledger.ledger_rows ON CLUSTER `prod-1` AS gpuledger.ledger_rows_local",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuledger/quota_changes_local', '{replica}', version)\n" +
			"ORDER BY (source, object, resource, at)",
		"CREATE TABLE IF NOT EXISTS gpuledger.quota_changes ON CLUSTER `prod-1` AS gpuledger.quota_changes_local " +
			"ENGINE = Distributed('prod-1', 'gpuledger', 'quota_changes_local', cityHash64(object))",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuledger/node_labels_local', '{replica}', version)\n" +
			"ORDER BY (key, node, at)",
		"CREATE TABLE IF NOT EXISTS gpuledger.node_labels ON CLUSTER `prod-1` AS gpuledger.node_labels_local " +
			"ENGINE = Distributed('prod-1', 'gpuledger', 'node_labels_local', cityHash64(node))",
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuledger/month_closings_local', '{replica}')\n" +
			"ORDER BY (period, seq)",
		"CREATE TABLE IF NOT EXISTS gpuledger.month_closings ON CLUSTER `prod-1` AS gpuledger.month_closings_local " +
			"ENGINE = Distributed('prod-1', 'gpuledger', 'month_closings_local', cityHash64(period))",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("cluster DDL lacks:\n%s", want)
		}
	}
	// Every table (the migrations table, migration 1's tables and the
	// prices table of migration 2, the quota table of migration 4, the
	// node labels table of migration 5, the month closings of migration
	// 6, the price books of migration 7): one replicated local table and
	// one distributed table; migration 3 alters the first and creates the
	// second again; migration 8 copies six tables, each in eight
	// statements: the copy's two tables, the insert, two drops of the
	// Distributed tables, the rename of the replicated ones, the
	// Distributed table again and the drop of the old storage; migration
	// 9 creates the hourly and daily coverage rollups (two each) and adds
	// a column to the builds (the ALTER, and the Distributed table dropped
	// and created again); migration 10 likewise the per-device rollups
	// and a column.
	if n, want := len(stmts), 1+2*(7+len(tables))+3+6*8+4+3+4+3; n != want {
		t.Errorf("cluster DDL has %d statements, want %d", n, want)
	}
	for _, s := range stmts {
		// The copy's insert goes through the Distributed tables, which
		// reach every shard.
		if !strings.Contains(s, "ON CLUSTER `prod-1`") && !strings.HasPrefix(s, "INSERT INTO gpuledger.") {
			t.Errorf("statement without ON CLUSTER: %s", oneLine(s))
		}
		if strings.Contains(s, "MergeTree") && !strings.Contains(s, "Replicated") {
			t.Errorf("non-replicated table in cluster mode: %s", oneLine(s))
		}
	}
}

func TestSingleNodeDDL(t *testing.T) {
	stmts, err := MigrationDDL("gpuledger", "")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(stmts, "\n")
	for _, bad := range []string{"ON CLUSTER", "Replicated", "Distributed", "_local", "LowCardinality", "CODEC", "DateTime64", "TTL"} {
		if strings.Contains(all, bad) {
			t.Errorf("single-node DDL contains %q", bad)
		}
	}
	if !strings.Contains(all, "CREATE TABLE IF NOT EXISTS gpuledger.ledger_rows (") ||
		!strings.Contains(all, ") ENGINE = ReplacingMergeTree(version)\nPARTITION BY toYYYYMM(interval_start)") {
		t.Errorf("single-node DDL lacks the raw ReplacingMergeTree table:\n%s", all)
	}
	if strings.Contains(all, "MATERIALIZED VIEW") {
		t.Error("rollups must not be materialized views: they double count replays")
	}
}

func TestDDLRejectsUnsafeNames(t *testing.T) {
	for _, c := range [][2]string{{"db;drop", ""}, {"1db", ""}, {"db", "c`x"}, {"db", "c x"}, {"", ""}} {
		if _, err := MigrationDDL(c[0], c[1]); err == nil {
			t.Errorf("MigrationDDL(%q, %q) accepted an unsafe name", c[0], c[1])
		}
	}
}
