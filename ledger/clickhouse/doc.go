// Package clickhouse is the cluster-wide ledger store: ledger rows and
// findings in ClickHouse, written in batches over the native protocol
// (clickhouse-go/v2, LZ4 block compression) and read back for exports and
// reports (format: docs/ledger-format.md).
//
// # Exactly-once effect
//
// Shipping is at least once, so every table that a replay can reach is a
// ReplacingMergeTree keyed by the row's deterministic key: a re-sent batch
// adds physical duplicates that merges remove and that FINAL never shows.
//
// Rollups are NOT materialized views. A view fires on every insert, so a
// re-sent batch lands twice in an MV-fed SummingMergeTree even though the raw
// table collapses it (seen on 18.16). Instead hourly and daily rollups are
// rebuilt from deduplicated raw rows by RebuildRollups (read without FINAL
// when the same query shows that no two rows share a key, FINAL
// otherwise), and every rollup build says which writes it covers:
//
//   - Append, after the raw insert succeeded, writes a "mark" per UTC hour it
//     touched: (hour, writer, seq), seq strictly increasing per Store.
//   - A build of an hour first reads the marks, then aggregates the raw rows,
//     then writes its rows, the marks it covered and, last, its header
//     (period, version, build id, number of groups).
//   - Aggregate uses a period's newest build only when every mark of the
//     period is covered by that build and the build's rows are all visible;
//     otherwise it falls back (day to hours, hour to raw rows with FINAL).
//
// So a rollup is never trusted for data it has not seen, whatever the order
// of replays, rebuilds and crashes: the monthly report is exact, and fast
// once the closed hours have been rebuilt.
//
// # Writes
//
// Append sends one INSERT per table with an explicit column list, in blocks
// of 16384 rows whose client buffers are reused, LZ4-compressed; a failed
// request is retried with jittered exponential backoff when the error is
// transient (Retryable), and the whole batch is re-sent, which the keys
// absorb.
//
// # Cluster mode
//
// Migrate with a cluster name creates every table ON CLUSTER as
// Replicated* storage (<name>_local, ZooKeeper path
// /clickhouse/tables/{shard}/<db>/<name>_local) behind a Distributed table
// of the public name, sharded so that a dedup key always lands on one shard
// (FINAL per shard is then exact). The store writes with
// insert_distributed_sync=1. Rollup exactness assumes a read sees writes
// that completed before it: true with one replica per shard; with several,
// use insert_quorum / select_sequential_consistency or in_order load
// balancing. Only the generated DDL is tested here, not a live cluster.
//
// # Versions
//
// Tested against ClickHouse 18.16.1 (Debian 12's package; native protocol
// revision 54412). Written for current LTS releases too, but not run
// against one here. Choices made for 18.16:
//
//   - The new MergeTree syntax (ENGINE = X(args) PARTITION BY ... ORDER BY
//     ...) is accepted by 18.16, so the old positional form is not used.
//   - No LowCardinality (experimental in 18.16), no DateTime64 (absent), no
//     column CODECs (absent), no TTL (absent), no mutations on the read or
//     write path (asynchronous in 18.16): strings are String, times are
//     DateTime('UTC') with a separate UInt32 nanoseconds column.
//   - Time bounds are written as toDateTime(<unix seconds>, 'UTC') literals rather
//     than driver-bound parameters, whose formatting differs across versions.
//   - Query settings are only sent in cluster mode and only as integers (old
//     servers take settings as varints).
//   - The HTTP interface of clickhouse-go v2.50 does not work with 18.16
//     (it sends the client_protocol_version setting 18.16 does not know), so
//     only the native protocol is supported.
package clickhouse
