package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.ClosingStore = (*Store)(nil)

// tableClosings is the append-only history of month closings, reopenings
// and posts (migration 6). One row is one record, written by one INSERT,
// which ClickHouse applies whole: a month is closed with all its files or
// not at all. seq is the record's time in nanoseconds, set before the
// insert, so a retried insert collapses to one row under FINAL.
const tableClosings = "month_closings"

var closingsTable = table{
	name: tableClosings,
	columns: `period String,
	seq Int64,
	action String,
	reason String,
	prices String,
	prices_sha256 String,
	digest String,
	csv String,
	json String,
	html String,
	focus String,
	focus_jsonl String`,
	engine: "ReplacingMergeTree", args: "",
	// A few rows a month: no partitions.
	orderBy:  "period, seq",
	shardKey: "cityHash64(period)",
}

var closingColumns = []string{"period", "seq", "action", "reason", "prices", "prices_sha256", "digest",
	"csv", "json", "html", "focus", "focus_jsonl"}

// AppendClosing records c (ledger.ClosingStore) after checking it against
// the month's history. ClickHouse has no transaction: two closers racing
// on one month could both pass the check; the history then holds two
// closings and the later one is in force. gpuledger serve closes from one
// replica and the close command is run by hand, so the window is the
// time between a read and an insert.
func (s *Store) AppendClosing(ctx context.Context, c ledger.Closing) error {
	if err := c.Validate(); err != nil {
		return permanentError{fmt.Errorf("cannot record in %s: %w", s.table(tableClosings), err)}
	}
	history, err := s.ClosingHistory(ctx, c.Period, false)
	if err != nil {
		return err
	}
	if err := ledger.CheckClosing(history, c); err != nil {
		return err
	}
	seq := c.At.UnixNano()
	if n := len(history); n > 0 && seq <= history[n-1].Seq {
		seq = history[n-1].Seq + 1 // the history's order survives a clock step back
	}
	cols := []any{[]string{c.Period}, []int64{seq}, []string{c.Action}, []string{c.Reason}, []string{string(c.PriceBook)},
		[]string{c.PriceBookSHA256}, []string{c.Digest}}
	for _, name := range ledger.ClosedFiles {
		cols = append(cols, []string{string(c.Files[name])})
	}
	return s.insert(ctx, tableClosings, closingColumns, cols, 1)
}

// ClosingHistory reads period's history (ledger.ClosingStore), "" for
// every month's. The record's time is its seq.
func (s *Store) ClosingHistory(ctx context.Context, period string, withFiles bool) ([]ledger.Closing, error) {
	what := "read the month closings"
	if period != "" {
		if !ledger.ValidPeriod(period) {
			return nil, fmt.Errorf("cannot read the closings of %q in %s: not a month YYYY-MM", period, s.table(tableClosings))
		}
		what += " of " + period
	}
	cols := "seq, period, action, reason, prices, prices_sha256, digest"
	if withFiles {
		cols += ", csv, json, html, focus, focus_jsonl"
	}
	q := "SELECT " + cols + " FROM " + s.table(tableClosings) + " FINAL"
	if period != "" {
		// Checked above: digits and '-' only.
		q += " WHERE period = '" + period + "'"
	}
	q += " ORDER BY seq"
	var out []ledger.Closing
	err := s.query(ctx, what, q, func(rs driver.Rows) error {
		var (
			c      ledger.Closing
			prices string
			files  = make([]string, len(ledger.ClosedFiles))
			dest   = []any{&c.Seq, &c.Period, &c.Action, &c.Reason, &prices, &c.PriceBookSHA256, &c.Digest}
		)
		if withFiles {
			for i := range files {
				dest = append(dest, &files[i])
			}
		}
		if err := rs.Scan(dest...); err != nil {
			return scanError{err}
		}
		c.At = time.Unix(0, c.Seq).UTC()
		c.PriceBook = []byte(prices)
		if withFiles && c.Action == ledger.ActionClose {
			c.Files = make(map[string][]byte, len(files))
			for i, name := range ledger.ClosedFiles {
				c.Files[name] = []byte(files[i])
			}
		}
		if err := c.Verify(s.table(tableClosings)); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}
