package web

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gpuledger/gpuledger/billing/tokencost"
)

// redactedQuerier is a Prometheus whose String, which the token section
// prints as its source, carries no credentials.
type redactedQuerier struct{ tokencost.Querier }

func (q redactedQuerier) String() string { return RedactURLs(q.Querier.String()) }

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
	ch := s.flight.DoChan(key, func() (v any, err error) {
		// A panic here would not be the request's (net/http recovers
		// those) but the process's: it is this computation's error.
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("a computation panicked", "key", key, "panic", r, "stack", string(debug.Stack()))
				v, err = nil, fmt.Errorf("cannot compute the answer: internal error: %v", r)
			}
		}()
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
