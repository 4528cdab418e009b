package clickhouse

import (
	"context"
	"time"

	"github.com/gpuledger/gpuledger/support/backoff"
)

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry runs fn until it succeeds, fails with a non-retryable error, or has
// used its MaxRetries extra attempts.
func (s *Store) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil || !Retryable(err) || attempt >= s.opts.MaxRetries {
			return err
		}
		wait := backoff.Jittered(attempt, s.opts.RetryBase, s.opts.RetryMax)
		s.log.Warn("ClickHouse request failed, retrying", "op", what, "addr", s.addr,
			"attempt", attempt+1, "wait", wait, "err", err)
		if serr := sleep(ctx, wait); serr != nil {
			return err
		}
	}
}
