// Package chdbcompat holds one test: every statement the ClickHouse ledger
// store, its migrations, the rollups, serve's reads and the ClickHouse
// dashboards send, captured from a real 18.16 server's system.query_log,
// run again on ClickHouse 26.7 (chDB, internal/chdbtest) over the same
// rows, and the answers compared: column names, types and values.
// docs/clickhouse-compat.md lists what it covers and what only parses.
package chdbcompat
