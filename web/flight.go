package web

import (
	"context"
	"net/http"
	"time"
)

// shared runs fn once for every request asking for key at the same time
// (singleflight), at most Config.MaxComputations such computations at once
// across the server. fn runs on a context detached from the requests'
// cancellation, bounded by timeout: a reader that hangs up stops waiting
// for the answer, but never cancels the computation the others wait for.
func (s *Server) shared(ctx context.Context, key string, timeout time.Duration, fn func(context.Context) (any, error)) (any, error) {
	return s.sharedOn(ctx, s.sem, key, timeout, fn)
}

// sharedOn is shared with the computations bounded by sem.
func (s *Server) sharedOn(ctx context.Context, sem chan struct{}, key string, timeout time.Duration, fn func(context.Context) (any, error)) (any, error) {
	ch := s.flight.DoChan(key, func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-cctx.Done():
			return nil, &httpError{http.StatusServiceUnavailable, "the server is busy with other requests: try again shortly"}
		}
		return fn(cctx)
	})
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fresh says whether a cached value built at `at` may still be served at
// now: a month that had ended when it was built is kept endedTTL (rows
// shipped late show within it), the running month running
// (Config.RunningTTL). Ages are
// measured on the wall clock, whatever Config.Now says.
func fresh[T any](c cached[T], ok bool, endedNow bool, running time.Duration) bool {
	if !ok {
		return false
	}
	age := time.Since(c.at)
	if age < 0 {
		return false
	}
	if c.complete {
		return endedNow && age < endedTTL
	}
	// Built while the month ran: never served once it has ended.
	return !endedNow && age < running
}
