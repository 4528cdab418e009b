package clickhouse

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is the wait before retry number attempt (0-based): exponential
// from base, capped at max, with "equal jitter" (half fixed, half random) so
// that many collectors reconnecting after an outage spread out.
func backoff(attempt int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}

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
		wait := backoff(attempt, s.opts.RetryBase, s.opts.RetryMax)
		s.log.Warn("ClickHouse request failed, retrying", "op", what, "addr", s.addr,
			"attempt", attempt+1, "wait", wait, "err", err)
		if serr := sleep(ctx, wait); serr != nil {
			return err
		}
	}
}
