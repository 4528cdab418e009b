package clickhouse

import (
	"fmt"
	"regexp"
	"strings"
)

// SchemaVersion is the newest schema this binary knows. Open refuses a
// database migrated by a newer binary.
const SchemaVersion = 10

// Table names. In cluster mode these are the Distributed tables and the
// replicated storage lives in <name>_local; the store reads and writes the
// same names either way.
const (
	tableMigrations = "schema_migrations"
	tableRows       = "ledger_rows"
	tableFindings   = "ledger_findings"
	tableMarks      = "ledger_rollup_marks"
	tableBuilds     = "ledger_rollup_builds"
	tableCoverage   = "ledger_rollup_coverage"
	tableHourly     = "ledger_rollup_hourly"
	tableDaily      = "ledger_rollup_daily"
	tableCovHourly  = "ledger_coverage_hourly"
	tableCovDaily   = "ledger_coverage_daily"
	tableDevHourly  = "ledger_device_hourly"
	tableDevDaily   = "ledger_device_daily"
)

// table describes one table once for both deployment shapes.
type table struct {
	name      string
	columns   string
	engine    string // MergeTree family member without the Replicated prefix
	args      string // version column of a ReplacingMergeTree, or ""
	partition string // PARTITION BY expression, or ""
	orderBy   string
	shardKey  string // Distributed sharding key: keeps a dedup key on one shard
}

const rowsColumns = `interval_start DateTime('UTC'),
	interval_start_ns UInt32,
	interval_end DateTime('UTC'),
	interval_end_ns UInt32,
	node String,
	gpu_uuid String,
	gpu_model String,
	slice_id String,
	sharing_mode String,
	kind String,
	namespace String,
	pod String,
	pod_uid String,
	container String,
	team String,
	allocated_gpu_seconds Float64,
	used_gpu_seconds Float64,
	memory_mib_seconds Float64,
	energy_joules Float64,
	method String,
	version UInt64`

const findingsColumns = `start_time DateTime('UTC'),
	start_ns UInt32,
	end_time DateTime('UTC'),
	end_ns UInt32,
	kind String,
	node String,
	gpu_uuid String,
	namespace String,
	pod String,
	container String,
	team String,
	detail String,
	noisy_pod String,
	version UInt64`

// rollupColumns follow the period column of the hourly and daily rollups.
const rollupColumns = `version UInt64,
	build UInt64,
	team String,
	namespace String,
	gpu_model String,
	sharing_mode String,
	kind String,
	allocated_gpu_seconds Float64,
	used_gpu_seconds Float64,
	memory_mib_seconds Float64,
	energy_joules Float64,
	rows UInt64`

// tables are created in this order by migration 1, as they were then:
// migration 8 copies the ones with a cluster into clusterTables.
var tables = []table{
	{
		name:    tableRows,
		columns: rowsColumns,
		engine:  "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(interval_start)",
		// The deterministic key of ledger.md, led by the hour so that time
		// ranges (exports, rollup builds, report edges) read only their
		// granules instead of the whole month.
		orderBy:  "toStartOfHour(interval_start), node, gpu_uuid, slice_id, pod_uid, container, kind, interval_start, interval_start_ns",
		shardKey: "cityHash64(node)",
	},
	{
		name:    tableFindings,
		columns: findingsColumns,
		engine:  "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(start_time)",
		orderBy:   "kind, node, gpu_uuid, namespace, pod, container, start_time, start_ns",
		shardKey:  "cityHash64(node)",
	},
	{
		name:    tableMarks,
		columns: "hour DateTime('UTC'),\n\twriter String,\n\tseq UInt64",
		engine:  "ReplacingMergeTree", args: "seq",
		partition: "toYYYYMM(hour)",
		orderBy:   "hour, writer",
		shardKey:  "cityHash64(writer)",
	},
	{
		name:    tableBuilds,
		columns: "grain String,\n\tperiod DateTime('UTC'),\n\tversion UInt64,\n\tbuild UInt64,\n\tgroups UInt64",
		engine:  "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(period)",
		orderBy:   "grain, period",
		shardKey:  "toUnixTimestamp(period)",
	},
	{
		name:    tableCoverage,
		columns: "grain String,\n\tperiod DateTime('UTC'),\n\thour DateTime('UTC'),\n\twriter String,\n\tversion UInt64,\n\tbuild UInt64,\n\tmax_seq UInt64",
		engine:  "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(period)",
		orderBy:   "grain, period, hour, writer",
		shardKey:  "toUnixTimestamp(period)",
	},
	{
		name:    tableHourly,
		columns: "hour DateTime('UTC'),\n\t" + rollupColumns,
		engine:  "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(hour)",
		orderBy:   "hour, team, namespace, gpu_model, sharing_mode, kind",
		shardKey:  "toUnixTimestamp(hour)",
	},
	{
		name:    tableDaily,
		columns: "day DateTime('UTC'),\n\t" + rollupColumns,
		engine:  "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(day)",
		orderBy:   "day, team, namespace, gpu_model, sharing_mode, kind",
		shardKey:  "toUnixTimestamp(day)",
	},
}

// tableNodeLabels holds node label changes (migration 5): one row per
// change of a node's label, keyed to the second. A replay inserts the same
// key again under a newer version and collapses to one row; reads use
// FINAL, so they never see two.
const tableNodeLabels = "node_labels"

var nodeLabelsTable = table{
	name: tableNodeLabels,
	columns: `node String,
	key String,
	at DateTime('UTC'),
	value String,
	deleted UInt8,
	version UInt64`,
	engine: "ReplacingMergeTree", args: "version",
	// No partitions: a fleet's label changes are a few rows a month.
	orderBy: "key, node, at",
	// Every change of one node on one shard, so a replay collapses there.
	shardKey: "cityHash64(node)",
}

var migrationsTable = table{
	name:     tableMigrations,
	columns:  "version UInt32,\n\tdescription String,\n\tapplied_at DateTime('UTC')",
	engine:   "MergeTree",
	orderBy:  "version",
	shardKey: "version",
}

// clusterName is what we splice into ON CLUSTER and Distributed(): cluster
// names come from XML element names in the server config.
var clusterName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// identifier is a database name safe to splice unquoted.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validateNames(db, cluster string) error {
	if !identifier.MatchString(db) {
		return fmt.Errorf("invalid ClickHouse database name %q (want letters, digits and '_')", db)
	}
	if cluster != "" && !clusterName.MatchString(cluster) {
		return fmt.Errorf("invalid ClickHouse cluster name %q (want letters, digits, '_' and '-')", cluster)
	}
	return nil
}

func onCluster(cluster string) string {
	if cluster == "" {
		return ""
	}
	return " ON CLUSTER `" + cluster + "`"
}

// createDatabaseDDL creates the database, on every host in cluster mode.
func createDatabaseDDL(db, cluster string) string {
	return "CREATE DATABASE IF NOT EXISTS " + db + onCluster(cluster)
}

// tableDDL returns the statements creating t: one MergeTree table, or in
// cluster mode a Replicated table on every host plus a Distributed table of
// the public name over it.
func tableDDL(db, cluster string, t table) []string {
	tail := ""
	if t.partition != "" {
		tail += "\nPARTITION BY " + t.partition
	}
	tail += "\nORDER BY (" + t.orderBy + ")"
	if cluster == "" {
		return []string{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (\n\t%s\n) ENGINE = %s(%s)%s",
			db, t.name, t.columns, t.engine, t.args, tail)}
	}
	local := t.name + "_local"
	// Explicit ZooKeeper path and replica name: 18.16 has no defaults for
	// them. {shard} and {replica} are the usual server macros.
	args := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", db, local)
	if t.args != "" {
		args += ", " + t.args
	}
	return []string{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s (\n\t%s\n) ENGINE = Replicated%s(%s)%s",
			db, local, onCluster(cluster), t.columns, t.engine, args, tail),
		distributedDDL(db, cluster, t),
	}
}

// distributedDDL creates the Distributed table of t's public name over its
// replicated storage, with the columns the storage has.
func distributedDDL(db, cluster string, t table) string {
	local := t.name + "_local"
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s AS %s.%s ENGINE = Distributed('%s', '%s', '%s', %s)",
		db, t.name, onCluster(cluster), db, local, cluster, db, local, t.shardKey)
}

// migration is one schema step. Statements must be idempotent (IF NOT
// EXISTS): a migrate interrupted between a statement and its record in
// schema_migrations runs the step again.
type migration struct {
	version     int
	description string
	statements  func(db, cluster string) []string
	// columns are added after the statements, each only where the table
	// lacks it: 18.16 has no ADD COLUMN IF NOT EXISTS.
	columns []addedColumn
	// rekeys are tables copied into new ones with these definitions,
	// each only where the table lacks the definition's last column
	// (rekeyDDL).
	rekeys []table
}

// addedColumn is one column a migration adds to an existing table.
type addedColumn struct {
	table            *table
	name, typ, after string
}

// targets are the tables the column goes to: the table, or in cluster
// mode the replicated storage first, then the Distributed table over it.
func (c addedColumn) targets(cluster string) []string {
	if cluster == "" {
		return []string{c.table.name}
	}
	return []string{c.table.name + "_local", c.table.name}
}

// ddl adds the column to one of its targets. 18.16 refuses ALTER ON
// CLUSTER of a Distributed table whose shards replicate internally, so in
// cluster mode the Distributed table is created again over the altered
// storage: it holds no rows of its own, since every insert through it is
// synchronous (insert_distributed_sync, store.go).
func (c addedColumn) ddl(db, cluster, target string) []string {
	if cluster != "" && target == c.table.name {
		return []string{"DROP TABLE IF EXISTS " + db + "." + target + onCluster(cluster), distributedDDL(db, cluster, *c.table)}
	}
	return []string{fmt.Sprintf("ALTER TABLE %s.%s%s ADD COLUMN %s %s AFTER %s", db, target, onCluster(cluster), c.name, c.typ, c.after)}
}

var migrations = []migration{
	{
		version:     1,
		description: "ledger rows, findings and exact rollups",
		statements: func(db, cluster string) []string {
			var out []string
			for _, t := range tables {
				out = append(out, tableDDL(db, cluster, t)...)
			}
			return out
		},
	},
	{
		version:     2,
		description: "price books for the ClickHouse dashboards",
		statements: func(db, cluster string) []string {
			return tableDDL(db, cluster, pricesTable)
		},
	},
	{
		version: 3,
		// A slice lies on one MIG instance for its life, so the profile
		// is not part of the dedup key; rows shipped before are ''.
		description: "the MIG profile of ledger rows (the FOCUS SkuId)",
		statements:  func(db, cluster string) []string { return nil },
		columns:     []addedColumn{{table: &tables[0], name: "mig_profile", typ: "String DEFAULT ''", after: "slice_id"}},
	},
	{
		version:     4,
		description: "GPU quota changes",
		statements: func(db, cluster string) []string {
			return tableDDL(db, cluster, quotaTable)
		},
	},
	{
		version:     5,
		description: "node label changes",
		statements: func(db, cluster string) []string {
			return tableDDL(db, cluster, nodeLabelsTable)
		},
	},
	{
		version:     6,
		description: "month closings, reopenings and posts",
		statements: func(db, cluster string) []string {
			return tableDDL(db, cluster, closingsTable)
		},
	},
	{
		version:     7,
		description: "price books in force over time",
		statements: func(db, cluster string) []string {
			return tableDDL(db, cluster, priceBooksTable)
		},
	},
	{
		version: 8,
		// The cluster joins the key of every table with a node or a
		// report group. 18.16 can add to a sorting key only a column
		// added in the same ALTER without a default, and rows stored
		// before must read as the default cluster: so each table is
		// copied into a new one with the new key (rekey).
		description: "the cluster of rows, findings, quota changes, node labels and rollups; cluster identities",
		statements: func(db, cluster string) []string {
			return tableDDL(db, cluster, identitiesTable)
		},
		rekeys: clusterTables,
	},
	{
		version: 9,
		// Coverage reads a GPU's hours from this rollup instead of every
		// raw row. A build's header counts the coverage rows it wrote, so
		// a read can tell them all visible; builds before this migration
		// wrote none and read -1 (their hours are rebuilt as stale).
		description: "hourly and daily coverage rollups",
		statements: func(db, cluster string) []string {
			return append(tableDDL(db, cluster, coverageTable(tableCovHourly, "hour")), tableDDL(db, cluster, coverageTable(tableCovDaily, "day"))...)
		},
		columns: []addedColumn{{table: &tables[3], name: "coverage_devices", typ: "Int64 DEFAULT -1", after: "groups"}},
	},
	{
		version: 10,
		// The groupings finer than a team's (pod, workload, container,
		// node, GPU) read these instead of every raw row. A build's header
		// counts the rows it wrote here, so a read can tell them all
		// visible; builds before this migration wrote none and read -1
		// (their hours are rebuilt as stale).
		description: "hourly and daily per-device rollups",
		statements: func(db, cluster string) []string {
			return append(tableDDL(db, cluster, deviceTable(tableDevHourly, "hour")), tableDDL(db, cluster, deviceTable(tableDevDaily, "day"))...)
		},
		columns: []addedColumn{{table: &tables[3], name: "device_groups", typ: "Int64 DEFAULT -1", after: "coverage_devices"}},
	},
}

// deviceKeyColumns are the key of a per-device rollup row after its
// period: the report group, then where it ran (node, GPU, slice) and what
// ran (pod, container).
const deviceKeyColumns = "cluster, team, namespace, gpu_model, sharing_mode, kind, node, gpu_uuid, slice_id, pod, container"

// deviceTable holds, per rollup build of a UTC hour or day (column
// period), the sums of the deduplicated rows per report group, node, GPU,
// slice, pod name and container: the grain of every grouping finer than
// a team's. A slice lies on one MIG instance for its life, so its profile
// is a function of the key (max() over rows shipped before profiles were
// recorded). A rebuild replaces a key's row (newer version); reads take
// only the rows of each period's current build.
func deviceTable(name, period string) table {
	return table{
		name: name,
		columns: period + ` DateTime('UTC'),
	version UInt64,
	build UInt64,
	cluster String,
	team String,
	namespace String,
	gpu_model String,
	sharing_mode String,
	kind String,
	node String,
	gpu_uuid String,
	slice_id String,
	pod String,
	container String,
	mig_profile String,
	allocated_gpu_seconds Float64,
	used_gpu_seconds Float64,
	memory_mib_seconds Float64,
	energy_joules Float64,
	rows UInt64`,
		engine: "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(" + period + ")",
		orderBy:   period + ", " + deviceKeyColumns,
		// One period's rows on one shard, beside its build header.
		shardKey: "toUnixTimestamp(" + period + ")",
	}
}

// coverageTable holds, per rollup build of a UTC hour or day (column
// period) and per GPU with rows starting in that period, what Coverage
// needs of the period: the first start, the last end, the end of the last
// interval by start (tail, to join the next period) and the holes inside
// the period, all in unix nanoseconds, as coverageSQL computes them. A
// rebuild replaces a GPU's row (newer version); reads take only the rows
// of each period's current build.
func coverageTable(name, period string) table {
	return table{
		name: name,
		columns: period + ` DateTime('UTC'),
	version UInt64,
	build UInt64,
	cluster String,
	node String,
	gpu_uuid String,
	first_ns UInt64,
	last_ns UInt64,
	tail_ns UInt64,
	hole_from Array(UInt64),
	hole_to Array(UInt64)`,
		engine: "ReplacingMergeTree", args: "version",
		partition: "toYYYYMM(" + period + ")",
		orderBy:   period + ", cluster, node, gpu_uuid",
		// One period's rows on one shard, beside its build header.
		shardKey: "toUnixTimestamp(" + period + ")",
	}
}

// clusterDefault is the cluster column of the tables that carry one: rows
// stored before it read as attribution.DefaultCluster.
const clusterDefault = "cluster String DEFAULT 'default'"

// withCluster is t as migration 8 leaves it: the cluster column (and,
// for the rows, the MIG profile of migration 3) among its columns, the
// cluster in its key after lead (the sorting key's first expressions,
// so that time ranges still read only their granules), and the shard
// key.
func withCluster(t table, columns, lead, rest, shardKey string) table {
	t.columns = columns
	t.orderBy = lead + "cluster, " + rest
	t.shardKey = shardKey
	return t
}

// clusterTables are the tables migration 8 copies with the cluster in
// their key, in tables' order: rows, findings, the hourly and daily
// rollups, then the quota changes and node labels.
var clusterTables = []table{
	withCluster(tables[0], strings.Replace(rowsColumns, "slice_id String,", "slice_id String,\n\tmig_profile String DEFAULT '',", 1)+",\n\t"+clusterDefault,
		"toStartOfHour(interval_start), ", "node, gpu_uuid, slice_id, pod_uid, container, kind, interval_start, interval_start_ns", "cityHash64(cluster, node)"),
	withCluster(tables[1], findingsColumns+",\n\t"+clusterDefault,
		"kind, ", "node, gpu_uuid, namespace, pod, container, start_time, start_ns", "cityHash64(cluster, node)"),
	withCluster(tables[5], tables[5].columns+",\n\t"+clusterDefault,
		"hour, ", "team, namespace, gpu_model, sharing_mode, kind", tables[5].shardKey),
	withCluster(tables[6], tables[6].columns+",\n\t"+clusterDefault,
		"day, ", "team, namespace, gpu_model, sharing_mode, kind", tables[6].shardKey),
	withCluster(quotaTable, quotaTable.columns+",\n\t"+clusterDefault,
		"", "source, object, resource, at", quotaTable.shardKey),
	withCluster(nodeLabelsTable, nodeLabelsTable.columns+",\n\t"+clusterDefault,
		"key, ", "node, at", "cityHash64(cluster, node)"),
}

// rekeyName is the name a table is copied to before it takes the old
// one's name.
func rekeyName(name string) string { return name + "_v8" }

// rekeyDDL are the statements that copy t's old table into one keyed as
// t says and swap the two: create the copy, insert every row (through the
// Distributed tables in cluster mode, so each row lands on the shard its
// new key chooses), rename the old table away and the copy into its
// place, drop the old one. The old columns are named in the copy, so a
// column the copy adds takes its default. In cluster mode the Distributed
// table names its storage, so it is created again over the renamed one.
func rekeyDDL(db, cluster string, t table, oldColumns []string) []string {
	cp := t
	cp.name = rekeyName(t.name)
	cols := strings.Join(oldColumns, ", ")
	out := tableDDL(db, cluster, cp)
	out = append(out, fmt.Sprintf("INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s", db, cp.name, cols, cols, db, t.name))
	old := t.name + "_v7"
	if cluster == "" {
		return append(out,
			fmt.Sprintf("RENAME TABLE %[1]s.%[2]s TO %[1]s.%[3]s, %[1]s.%[4]s TO %[1]s.%[2]s", db, t.name, old, cp.name),
			"DROP TABLE IF EXISTS "+db+"."+old)
	}
	return append(out,
		"DROP TABLE IF EXISTS "+db+"."+t.name+onCluster(cluster),
		"DROP TABLE IF EXISTS "+db+"."+cp.name+onCluster(cluster),
		fmt.Sprintf("RENAME TABLE %[1]s.%[2]s_local TO %[1]s.%[3]s_local, %[1]s.%[4]s_local TO %[1]s.%[2]s_local%[5]s", db, t.name, old, cp.name, onCluster(cluster)),
		distributedDDL(db, cluster, t),
		"DROP TABLE IF EXISTS "+db+"."+old+"_local"+onCluster(cluster))
}

// MigrationDDL returns every statement Migrate would run on an empty
// database, for review (`gpuledger ledger migrate --print`) and tests.
func MigrationDDL(db, cluster string) ([]string, error) {
	if err := validateNames(db, cluster); err != nil {
		return nil, err
	}
	out := []string{createDatabaseDDL(db, cluster)}
	out = append(out, tableDDL(db, cluster, migrationsTable)...)
	for _, m := range migrations {
		out = append(out, m.statements(db, cluster)...)
		for _, c := range m.columns {
			for _, t := range c.targets(cluster) {
				out = append(out, c.ddl(db, cluster, t)...)
			}
		}
		for _, t := range m.rekeys {
			// On an empty database every earlier column is there.
			out = append(out, rekeyDDL(db, cluster, t, columnNames(t.columns[:strings.LastIndex(t.columns, ",")]))...)
		}
	}
	return out, nil
}

// qualified names a table of db.
func qualified(db, name string) string { return db + "." + name }

// oneLine squeezes a statement for log lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// columnNames are the names of a column list as a table's columns give
// them ("name Type,\n\tname Type").
func columnNames(columns string) []string {
	var out []string
	for _, c := range strings.Split(columns, ",\n") {
		if f := strings.Fields(c); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}
