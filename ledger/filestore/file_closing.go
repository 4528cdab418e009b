package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.ClosingStore = (*FileStore)(nil)

// closingsDDL is migration 9: the append-only history of month closings,
// reopenings and posts. A closing is one row holding the month's files,
// the price book and the digest, so it is written whole or not at all.
const closingsDDL = `
CREATE TABLE IF NOT EXISTS month_closings (
	seq           INTEGER PRIMARY KEY,
	period        TEXT    NOT NULL,
	action        TEXT    NOT NULL,
	at_ns         INTEGER NOT NULL,
	reason        TEXT    NOT NULL,
	prices        BLOB    NOT NULL,
	prices_sha256 TEXT    NOT NULL,
	digest        TEXT    NOT NULL,
	csv           BLOB    NOT NULL,
	json          BLOB    NOT NULL,
	html          BLOB    NOT NULL,
	focus         BLOB    NOT NULL,
	focus_jsonl   BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS month_closings_period ON month_closings (period, seq);
`

// closingFileColumns are the columns of ledger.ClosedFiles, in its order.
var closingFileColumns = []string{"csv", "json", "html", "focus", "focus_jsonl"}

// AppendClosing records c (ledger.ClosingStore): the check of the month's
// history and the insert run in one write transaction, so two closers
// of one file cannot both close a month, and a crash leaves the month as
// it was or with the whole record.
func (s *FileStore) AppendClosing(ctx context.Context, c ledger.Closing) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("cannot record the %s of %s in ledger %s: it is opened read-only", c.Action, c.Period, s.path)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("cannot record in ledger %s: %w", s.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil) // _txlock=immediate: the write lock is taken here
	if err != nil {
		return fmt.Errorf("cannot record the %s of %s in ledger %s: %w", c.Action, c.Period, s.path, s.busyWriter(err))
	}
	defer tx.Rollback()
	history, err := s.closings(ctx, tx, c.Period, false)
	if err != nil {
		return err
	}
	if err := ledger.CheckClosing(history, c); err != nil {
		return err
	}
	args := []any{c.Period, c.Action, c.At.UnixNano(), c.Reason, nonNil(c.PriceBook), c.PriceBookSHA256, c.Digest}
	for _, name := range ledger.ClosedFiles {
		args = append(args, nonNil(c.Files[name]))
	}
	q := "INSERT INTO month_closings (period, action, at_ns, reason, prices, prices_sha256, digest, " +
		strings.Join(closingFileColumns, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(args)-1) + ")"
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("cannot record the %s of %s in ledger %s: %w", c.Action, c.Period, s.path, s.describe(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit the %s of %s to ledger %s: %w", c.Action, c.Period, s.path, s.describe(err))
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ClosingHistory reads period's history (ledger.ClosingStore). A file older than
// version 9 opened read-only has none: no month was ever closed in it.
func (s *FileStore) ClosingHistory(ctx context.Context, period string, withFiles bool) ([]ledger.Closing, error) {
	if period != "" && !ledger.ValidPeriod(period) {
		return nil, fmt.Errorf("cannot read the closings of %q in ledger %s: not a month YYYY-MM", period, s.path)
	}
	var out []ledger.Closing
	err := retryBusy(ctx, func() error {
		var err error
		out, err = s.closings(ctx, s.r, period, withFiles)
		return err
	})
	return out, err
}

// closings reads the history through q (the writer's transaction, or the
// readers).
func (s *FileStore) closings(ctx context.Context, q querier, period string, withFiles bool) ([]ledger.Closing, error) {
	where := fmt.Sprintf("cannot read the closings of ledger %s", s.path)
	ok, err := hasTable(ctx, q, "month_closings")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, s.describe(err))
	}
	if !ok {
		return nil, nil
	}
	cols := "seq, period, action, at_ns, reason, prices, prices_sha256, digest"
	if withFiles {
		cols += ", " + strings.Join(closingFileColumns, ", ")
	}
	query := "SELECT " + cols + " FROM month_closings"
	var args []any
	if period != "" {
		query += " WHERE period = ?"
		args = append(args, period)
	}
	rs, err := q.QueryContext(ctx, query+" ORDER BY seq", args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, s.describe(err))
	}
	defer rs.Close()
	var out []ledger.Closing
	for rs.Next() {
		var (
			c  ledger.Closing
			at int64
		)
		dest := []any{&c.Seq, &c.Period, &c.Action, &at, &c.Reason, &c.PriceBook, &c.PriceBookSHA256, &c.Digest}
		files := make([][]byte, len(ledger.ClosedFiles))
		if withFiles {
			for i := range files {
				dest = append(dest, &files[i])
			}
		}
		if err := rs.Scan(dest...); err != nil {
			return nil, fmt.Errorf("%s: %w", where, s.describe(err))
		}
		c.At = time.Unix(0, at).UTC()
		if withFiles && c.Action == ledger.ActionClose {
			c.Files = make(map[string][]byte, len(ledger.ClosedFiles))
			for i, name := range ledger.ClosedFiles {
				c.Files[name] = files[i]
			}
		}
		if err := c.Verify("ledger " + s.path); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, s.describe(err))
	}
	return out, nil
}

var _ querier = (*sql.Tx)(nil)
