package web

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// bookRecorder remembers the book versions recorded in the ledger
// (Config.RecordPrices) and the refusals: a version is recorded, or
// refused, once; one the ledger failed to take is tried again after
// recordRetry.
type bookRecorder struct {
	mu   sync.Mutex
	done map[string]recorded
}

type recorded struct {
	err    error // the refusal (a 409), nil once recorded
	failed time.Time
}

const (
	// maxRememberedBooks bounds the versions remembered: past it they are
	// forgotten, and asked of the ledger again (which records none twice).
	maxRememberedBooks = 64
	// recordRetry is how long a ledger that failed to record a book is
	// left alone; reports go on meanwhile, the book unrecorded.
	recordRetry = time.Minute
)

// buildReport builds a month's report from st: with Config.RecordPrices
// it first records the book (recordBook), and either way prices each
// hour at the book the ledger has in force then (report.BuildDated).
//
// A cluster's bill (cluster set) is its rows alone, without the
// adjustments of closed months (a closed month is the fleet's); the
// fleet's is billed cluster by cluster and added (report.BuildFleet).
func (s *Server) buildReport(ctx context.Context, st ledger.Store, book *pricebook.Book, version, month string, from, to, now time.Time, cluster string) (*report.Report, error) {
	if err := s.recordBook(ctx, book, version, now); IsRefusedBook(err) {
		return nil, err
	}
	if cluster != "" {
		return report.BuildFleet(ctx, st, book, from, to, now, cluster)
	}
	cs, err := ledger.Closings(st)
	if err != nil {
		return nil, err
	}
	rep, err := report.BuildFleet(ctx, st, book, from, to, now, "")
	if err != nil {
		return nil, err
	}
	set, err := report.Adjustments(ctx, st, cs, book, month)
	if err != nil {
		return nil, err
	}
	rep.Adjustments, rep.AdjustmentNotes = set.Lines, set.Notes
	return rep, nil
}

// recordBook records book (of version) once, logging it. A book the
// ledger refuses (one that would take effect before the last recorded
// book, or in a closed month) makes every report a 409 naming why, until
// the file is mended. A ledger that fails to record it is logged and
// tried again later: the reports meanwhile price by the recorded books,
// in which an unrecorded book prices no hour already begun.
func (s *Server) recordBook(ctx context.Context, book *pricebook.Book, version string, now time.Time) error {
	if s.cfg.RecordPrices == nil {
		return nil
	}
	s.books.mu.Lock()
	defer s.books.mu.Unlock()
	if r, seen := s.books.done[version]; seen && (r.failed.IsZero() || now.Sub(r.failed) < recordRetry) {
		return r.err
	}
	rec, ok, err := s.cfg.RecordPrices(ctx, book, now)
	var refused *ledger.RefusedPriceBook
	var r recorded
	switch {
	case errors.As(err, &refused):
		s.log.Error("the price book is refused: reports answer 409 until it is mended", "prices", book.Source, "sha256", ledger.ShortSHA(book.SHA256), "err", err)
		r.err = &httpError{http.StatusConflict, "the price book cannot take effect: " + refused.Error()}
	case err != nil:
		s.log.Warn("the price book is not recorded in the ledger: tried again in a minute", "prices", book.Source, "err", RedactURLs(err.Error()))
		r.failed = now
	case ok:
		s.log.Info("price book recorded in the ledger", "prices", book.Source, "sha256", rec.Short(), "effective_from", ledger.FormatTime(rec.EffectiveFrom))
	default:
		s.log.Info("price book already in force in the ledger", "prices", book.Source, "sha256", rec.Short())
	}
	if s.books.done == nil || len(s.books.done) >= maxRememberedBooks {
		s.books.done = map[string]recorded{}
	}
	s.books.done[version] = r
	if err != nil && r.err == nil {
		return err // RecordPrices at start says so; reports go on
	}
	return r.err
}

// RecordPrices records the price book in the ledger now (serve at
// start), as the first report would.
func (s *Server) RecordPrices(ctx context.Context) error {
	book, version, err := s.book()
	if err != nil {
		return err
	}
	return s.recordBook(ctx, book, version, s.cfg.Now())
}

// IsRefusedBook reports whether err is RecordPrices' refusal of the book.
func IsRefusedBook(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.code == http.StatusConflict
}
