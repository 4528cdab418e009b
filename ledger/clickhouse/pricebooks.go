package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.PriceBookStore = (*Store)(nil)

// tablePriceBooks holds the price books in force over time (migration 7):
// one row per recorded book. Not the dashboards' gpuledger_prices, which
// holds rates only and is replaced by each load.
const tablePriceBooks = "price_books"

var priceBooksTable = table{
	name: tablePriceBooks,
	columns: `effective_from DateTime('UTC'),
	recorded_ns UInt64,
	sha256 String,
	source String,
	body String`,
	engine: "MergeTree",
	// A few rows a year: no partitions.
	orderBy:  "effective_from, recorded_ns",
	shardKey: "recorded_ns",
}

// RecordPriceBook records rec (ledger.PriceBookStore). ClickHouse has no
// transactions: two recorders racing may both pass the check on the same
// last book; the one recorded later is then in force (force order).
func (s *Store) RecordPriceBook(ctx context.Context, rec ledger.PriceBookRecord, now time.Time) (bool, error) {
	closed, err := ledger.ClosedThroughOf(ctx, s)
	if err != nil {
		return false, err
	}
	books, err := s.PriceBooks(ctx)
	if err != nil {
		return false, err
	}
	var last *ledger.PriceBookRecord
	if len(books) > 0 {
		last = &books[len(books)-1]
		if last.SHA256 == rec.SHA256 {
			return false, nil
		}
	}
	if err := ledger.CheckPriceBook(rec, last, closed, now); err != nil {
		return false, fmt.Errorf("cannot record price book in %s: %w", s.table(tablePriceBooks), err)
	}
	if err := ledger.CheckPriceBookRoom(rec, books); err != nil {
		return false, fmt.Errorf("cannot record price book in %s: %w", s.table(tablePriceBooks), err)
	}
	cols := []string{"effective_from", "recorded_ns", "sha256", "source", "body"}
	vals := []any{[]time.Time{rec.EffectiveFrom.UTC()}, []uint64{uint64(rec.RecordedAt.UnixNano())},
		[]string{rec.SHA256}, []string{rec.Source}, []string{string(rec.Body)}}
	if err := s.insert(ctx, tablePriceBooks, cols, vals, 1); err != nil {
		return false, fmt.Errorf("cannot record price book %s: %w", rec.Source, err)
	}
	return true, nil
}

// PriceBooks is every recorded price book in force order
// (ledger.PriceBookStore).
func (s *Store) PriceBooks(ctx context.Context) ([]ledger.PriceBookRecord, error) {
	q := fmt.Sprintf(`SELECT toUnixTimestamp(effective_from), recorded_ns, sha256, source, body FROM %s
ORDER BY effective_from, recorded_ns LIMIT %d`, s.table(tablePriceBooks), ledger.MaxPriceBooks+1)
	var out []ledger.PriceBookRecord
	size := 0
	err := s.query(ctx, "read the price books", q, func(rs driver.Rows) error {
		if len(out) == ledger.MaxPriceBooks {
			return fmt.Errorf("cannot read the price books of %s: more than %d", s.table(tablePriceBooks), ledger.MaxPriceBooks)
		}
		var (
			eff               uint32
			rec               uint64
			sum, source, body string
		)
		if err := rs.Scan(&eff, &rec, &sum, &source, &body); err != nil {
			return scanError{err}
		}
		if size += len(body); size > ledger.MaxPriceBooksBytes {
			return fmt.Errorf("cannot read the price books of %s: more than %d MiB", s.table(tablePriceBooks), ledger.MaxPriceBooksBytes>>20)
		}
		out = append(out, ledger.PriceBookRecord{EffectiveFrom: time.Unix(int64(eff), 0).UTC(), RecordedAt: time.Unix(0, int64(rec)).UTC(),
			SHA256: sum, Source: source, Body: []byte(body)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
