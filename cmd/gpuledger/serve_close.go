package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpuledger/gpuledger/billing/autoclose"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// maxCloseAfterDays bounds serve --close-after-days.
const maxCloseAfterDays = autoclose.MaxAfterDays

// autoCloseConfig wires serve --close-after-days (billing/autoclose) to
// the ledger at dsn and the price book at prices.
func autoCloseConfig(dsn, prices string, days int) autoclose.Config {
	return autoclose.Config{
		Open: func(ctx context.Context) (ledger.Store, error) {
			st, _, err := openClosingStore(ctx, dsn)
			return st, err
		},
		Book:      func() (*pricebook.Book, []byte, error) { return loadBook(prices) },
		AfterDays: days,
		Log:       slog.Default(),
	}
}

// runAutoClose closes the months due until ctx ends (autoclose.Run).
func runAutoClose(ctx context.Context, dsn, prices string, days int) {
	autoclose.Run(ctx, autoCloseConfig(dsn, prices, days), now)
}

// autoCloseOnce closes the months due at at (autoclose.Once).
func autoCloseOnce(ctx context.Context, dsn, prices string, days int, at time.Time) ([]string, error) {
	return autoclose.Once(ctx, autoCloseConfig(dsn, prices, days), at)
}
