// Package report computes the monthly GPU chargeback (docs/report.md)
// from ledger aggregates and a price book, and
// writes it as the finance CSV, as JSON and as a self-contained HTML page.
//
// The report never reads raw ledger rows: it asks the store for day
// aggregates (Store.Aggregate, in the price book's time zone), so the same
// code serves the embedded store and ClickHouse. Each (day, group)
// aggregate is fixed to integer micro-units once; from there every sum,
// share and amount is exact (integers and math/big.Rat), each line's amount
// is rounded once, and the file reconciles to the minor unit against
// capacity x rate. See docs/report.md for the rules in force.
package report
