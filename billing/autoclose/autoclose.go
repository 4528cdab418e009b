// Package autoclose is serve's closing of months: a number of days after
// a month ends (in the price book's time zone), it closes the month as
// `gpuledger close` does (report.CloseMonth), at start and every hour. It
// opens the ledger and reads the price book through the functions the
// wiring gives it, so it names no store.
package autoclose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// Bounds and pace.
const (
	// MaxAfterDays bounds the grace: two months is already longer than
	// any outbox keeps rows.
	MaxAfterDays = 60
	// Months is how many ended months back a check looks: the last one,
	// and two more in case serve was down when they were due.
	Months = 3
	// Every is how often Run checks.
	Every = time.Hour
)

// Config is what a closer needs.
type Config struct {
	// Open opens the ledger to close months in; the caller's store is
	// closed after each check.
	Open func(context.Context) (ledger.Store, error)
	// Book reads the price book and its bytes (stored with a closing).
	Book func() (*pricebook.Book, []byte, error)
	// AfterDays is the grace after a month ends, 1 to MaxAfterDays.
	AfterDays int
	Log       *slog.Logger
}

// Run closes, at start and every Every until ctx ends, each month due
// (Once), logging what it closed and what failed.
func Run(ctx context.Context, cfg Config, now func() time.Time) {
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		if _, err := Once(ctx, cfg, now()); err != nil && ctx.Err() == nil {
			cfg.Log.Warn("cannot close the months due; retrying in an hour", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once closes each of the last Months months that ended (in the price
// book's time zone) at least AfterDays before at and has no history: a
// month an operator reopened, or closed and reopened, is left to the
// operator. A month the ledger has no data in is skipped. It returns the
// months it closed.
func Once(ctx context.Context, cfg Config, at time.Time) ([]string, error) {
	book, bookBytes, err := cfg.Book()
	if err != nil {
		return nil, err
	}
	local := at.In(book.Location)
	first := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, book.Location)
	var due []string
	for i := Months; i >= 1; i-- {
		start := first.AddDate(0, -i, 0)
		if !at.Before(start.AddDate(0, 1, cfg.AfterDays)) {
			due = append(due, start.Format("2006-01"))
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	st, err := cfg.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	cs, err := ledger.Closings(st)
	if err != nil {
		return nil, err
	}
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
		cfg.Log.Info("month closed", "period", m, "after_days", cfg.AfterDays, "digest", c.Digest, "prices_sha256", c.PriceBookSHA256)
		closed = append(closed, m)
	}
	return closed, nil
}
