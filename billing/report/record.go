package report

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// LoadEffective is when a book recorded as it is loaded takes effect: the
// next whole hour, so the hour under way keeps the book it started with.
func LoadEffective(now time.Time) time.Time { return now.Truncate(time.Hour).Add(time.Hour) }

// RecordBook records book in st, effective at effective when it is not
// zero, else at the book's own effectiveFrom, else at LoadEffective(now)
// (docs/report.md, "Price books over time"). A book that is the last
// recorded one is not recorded again (false). A refusal is a
// *ledger.RefusedPriceBook.
func RecordBook(ctx context.Context, st ledger.PriceBookStore, book *pricebook.Book, effective, now time.Time) (ledger.PriceBookRecord, bool, error) {
	switch {
	case book == nil || len(book.Raw) == 0:
		return ledger.PriceBookRecord{}, false, fmt.Errorf("cannot record a price book: none was read")
	case !effective.IsZero() && !book.EffectiveFrom.IsZero() && !effective.Equal(book.EffectiveFrom):
		return ledger.PriceBookRecord{}, false, &ledger.RefusedPriceBook{Err: fmt.Errorf("price book %s: --effective %s disagrees with its effectiveFrom %s: give one",
			book.Source, ledger.FormatTime(effective), ledger.FormatTime(book.EffectiveFrom))}
	case effective.IsZero() && !book.EffectiveFrom.IsZero():
		effective = book.EffectiveFrom
	case effective.IsZero():
		effective = LoadEffective(now)
	}
	rec := ledger.PriceBookRecord{EffectiveFrom: effective.UTC(), RecordedAt: now.UTC(), SHA256: book.SHA256, Source: book.Source, Body: book.Raw}
	ok, err := st.RecordPriceBook(ctx, rec, now)
	return rec, ok, err
}
