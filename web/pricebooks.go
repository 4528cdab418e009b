package web

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/billing/ledger"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// bookRecorder remembers the book versions recorded in the ledger
// (Config.RecordPrices), and the refusals: a version is recorded, or
// refused, once; a ledger that fails is asked again by the next request.
type bookRecorder struct {
	mu   sync.Mutex
	done map[string]error
}

// maxRememberedBooks bounds the versions remembered: past it, they are
// forgotten and asked of the ledger again (which records none twice).
const maxRememberedBooks = 64

// buildReport builds a month's report from st: with Config.RecordPrices
// it first records the book (recordBook), and either way prices each
// hour at the book the ledger has in force then (report.BuildDated).
func (s *Server) buildReport(ctx context.Context, st ledger.Store, book *pricebook.Book, version string, from, to, now time.Time) (*report.Report, error) {
	if err := s.recordBook(ctx, st, book, version, now); err != nil {
		return nil, err
	}
	return report.BuildDated(ctx, st, book, from, to, now)
}

// recordBook records book (of version) in st once, logging it; a book the
// ledger refuses (one that would take effect before the last recorded
// book, or in a closed month) makes every report a 409 naming why, until
// the file is mended.
func (s *Server) recordBook(ctx context.Context, st ledger.Store, book *pricebook.Book, version string, now time.Time) error {
	pst, ok := st.(ledger.PriceBookStore)
	if !s.cfg.RecordPrices || !ok {
		return nil
	}
	s.books.mu.Lock()
	defer s.books.mu.Unlock()
	if err, seen := s.books.done[version]; seen {
		return err
	}
	rec, recorded, err := report.RecordBook(ctx, pst, book, time.Time{}, now)
	var refused *ledger.RefusedPriceBook
	switch {
	case errors.As(err, &refused):
		s.log.Error("the price book is refused: reports answer 409 until it is mended", "prices", book.Source, "sha256", ledger.ShortSHA(book.SHA256), "err", err)
		err = &httpError{http.StatusConflict, "the price book cannot take effect: " + refused.Error()}
	case err != nil:
		return err // the ledger's failure: asked again next time
	case recorded:
		s.log.Info("price book recorded in the ledger", "prices", book.Source, "sha256", rec.Short(), "effective_from", ledger.FormatTime(rec.EffectiveFrom))
	default:
		s.log.Info("price book already in force in the ledger", "prices", book.Source, "sha256", rec.Short())
	}
	if s.books.done == nil || len(s.books.done) >= maxRememberedBooks {
		s.books.done = map[string]error{}
	}
	s.books.done[version] = err
	return err
}

// RecordPrices records the price book in the ledger now (serve at
// start, with Config.RecordPrices), as the first report would.
func (s *Server) RecordPrices(ctx context.Context) error {
	book, version, err := s.book()
	if err != nil {
		return err
	}
	return s.withStore(ctx, func(st ledger.Store) error { return s.recordBook(ctx, st, book, version, s.cfg.Now()) })
}

// IsRefusedBook reports whether err is RecordPrices' refusal of the book.
func IsRefusedBook(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.code == http.StatusConflict
}
