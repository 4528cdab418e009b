package filestore

import (
	"context"

	"github.com/gpuledger/gpuledger/ledger"
)

// Opener opens embedded stores with the given options.
func Opener(opts FileOptions) ledger.Opener {
	return func(ctx context.Context, d ledger.DSN) (ledger.Store, error) {
		return OpenFile(ctx, d.Path, opts)
	}
}

// ReadingOpener opens embedded stores for commands that only read
// (OpenForReading): read-only, never holding a write lock.
func ReadingOpener(opts FileOptions) ledger.Opener {
	return func(ctx context.Context, d ledger.DSN) (ledger.Store, error) {
		return OpenForReading(ctx, d.Path, opts)
	}
}
