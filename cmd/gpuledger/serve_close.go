package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// serve --close-after-days: bounds and pace.
const (
	// maxCloseAfterDays bounds the flag: two months of grace is already
	// longer than any outbox keeps rows.
	maxCloseAfterDays = 60
	// autoCloseMonths is how many ended months back serve looks: the
	// last one, and two more in case serve was down when they were due.
	autoCloseMonths = 3
	// autoCloseEvery is how often serve checks.
	autoCloseEvery = time.Hour
)

// runAutoClose closes, at start and every autoCloseEvery until ctx ends,
// each month due (autoCloseOnce).
func runAutoClose(ctx context.Context, dsn, prices string, days int) {
	t := time.NewTicker(autoCloseEvery)
	defer t.Stop()
	for {
		if _, err := autoCloseOnce(ctx, dsn, prices, days, now()); err != nil && ctx.Err() == nil {
			slog.Warn("cannot close the months due; retrying in an hour", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// autoCloseOnce closes each of the last autoCloseMonths months that
// ended (in the price book's time zone) at least days before at and has
// no history: a month an operator reopened, or closed and reopened, is
// left to the operator. A month the ledger has no data in is skipped. It
// returns the months it closed.
func autoCloseOnce(ctx context.Context, dsn, prices string, days int, at time.Time) ([]string, error) {
	book, bookBytes, err := loadBook(prices)
	if err != nil {
		return nil, err
	}
	local := at.In(book.Location)
	first := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, book.Location)
	var due []string
	for i := autoCloseMonths; i >= 1; i-- {
		start := first.AddDate(0, -i, 0)
		if !at.Before(start.AddDate(0, 1, days)) {
			due = append(due, start.Format("2006-01"))
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	st, cs, err := openClosingStore(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var closed []string
	for _, m := range due {
		h, err := cs.ClosingHistory(ctx, m, false)
		if err != nil {
			return closed, err
		}
		if len(h) > 0 {
			continue
		}
		c, err := report.CloseMonth(ctx, st, cs, book, bookBytes, m, at)
		switch {
		case errors.Is(err, report.ErrNoDataToClose) || errors.Is(err, ledger.ErrAlreadyClosed):
			continue
		case err != nil:
			return closed, fmt.Errorf("cannot close %s: %w", m, err)
		}
		slog.Info("month closed", "period", m, "after_days", days, "digest", c.Digest, "prices_sha256", c.PriceBookSHA256)
		closed = append(closed, m)
	}
	return closed, nil
}
