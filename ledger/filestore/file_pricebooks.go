package filestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.PriceBookStore = (*FileStore)(nil)

// priceBooksDDL is migration 10: one row per recorded price book, in
// recording order (seq).
const priceBooksDDL = `
CREATE TABLE IF NOT EXISTS price_books (
	seq          INTEGER PRIMARY KEY,
	effective_ns INTEGER NOT NULL,
	recorded_ns  INTEGER NOT NULL,
	sha256       TEXT    NOT NULL,
	source       TEXT    NOT NULL,
	body         BLOB    NOT NULL
);
`

const selectPriceBooks = `SELECT effective_ns, recorded_ns, sha256, source, body FROM price_books ORDER BY effective_ns, seq LIMIT ?`

// RecordPriceBook records rec (ledger.PriceBookStore): the check against the
// last recorded book and the insert are one transaction, so two
// recorders cannot both pass the check on the same last book.
func (s *FileStore) RecordPriceBook(ctx context.Context, rec ledger.PriceBookRecord, now time.Time) (bool, error) {
	if s.opts.ReadOnly {
		return false, fmt.Errorf("cannot record price book %s in ledger %s: it is opened read-only", rec.Source, s.path)
	}
	closed, err := ledger.ClosedThroughOf(ctx, s)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("cannot record price book %s in ledger %s: %w", rec.Source, s.path, s.busyWriter(err))
	}
	defer tx.Rollback()
	books, err := scanPriceBooks(ctx, tx, s.path)
	if err != nil {
		return false, err
	}
	last := ledger.LastInForce(books)
	if last != nil && last.SHA256 == rec.SHA256 {
		return false, nil
	}
	if err := ledger.CheckPriceBook(rec, last, closed, now); err != nil {
		return false, fmt.Errorf("cannot record price book in ledger %s: %w", s.path, err)
	}
	if err := ledger.CheckPriceBookRoom(rec, books); err != nil {
		return false, fmt.Errorf("cannot record price book in ledger %s: %w", s.path, err)
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO price_books (effective_ns, recorded_ns, sha256, source, body) VALUES (?, ?, ?, ?, ?)",
		rec.EffectiveFrom.UnixNano(), rec.RecordedAt.UnixNano(), rec.SHA256, rec.Source, rec.Body)
	if err != nil {
		return false, fmt.Errorf("cannot record price book %s in ledger %s: %w", rec.Source, s.path, s.describe(err))
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("cannot commit price book %s to ledger %s: %w", rec.Source, s.path, s.describe(err))
	}
	return true, nil
}

// PriceBooks is every recorded price book in force order
// (ledger.PriceBookStore). A file older than version 10 has none.
func (s *FileStore) PriceBooks(ctx context.Context) ([]ledger.PriceBookRecord, error) {
	var n int
	err := retryBusy(ctx, func() error {
		return s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'price_books'").Scan(&n)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read the price books of ledger %s: %w", s.path, s.describe(err))
	}
	if n == 0 {
		return nil, nil
	}
	return scanPriceBooks(ctx, s.r, s.path)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func scanPriceBooks(ctx context.Context, q queryer, path string) ([]ledger.PriceBookRecord, error) {
	rs, err := q.QueryContext(ctx, selectPriceBooks, ledger.MaxPriceBooks+1)
	if err != nil {
		return nil, fmt.Errorf("cannot read the price books of ledger %s: %w", path, err)
	}
	defer rs.Close()
	var out []ledger.PriceBookRecord
	size := 0
	for rs.Next() {
		if len(out) == ledger.MaxPriceBooks {
			return nil, fmt.Errorf("cannot read the price books of ledger %s: more than %d", path, ledger.MaxPriceBooks)
		}
		var (
			eff, rec int64
			r        ledger.PriceBookRecord
		)
		if err := rs.Scan(&eff, &rec, &r.SHA256, &r.Source, &r.Body); err != nil {
			return nil, fmt.Errorf("cannot read the price books of ledger %s: %w", path, err)
		}
		r.EffectiveFrom, r.RecordedAt = time.Unix(0, eff).UTC(), time.Unix(0, rec).UTC()
		if size += len(r.Body); size > ledger.MaxPriceBooksBytes {
			return nil, fmt.Errorf("cannot read the price books of ledger %s: more than %d MiB", path, ledger.MaxPriceBooksBytes>>20)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the price books of ledger %s: %w", path, err)
	}
	return out, nil
}
