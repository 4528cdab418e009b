package dcgmsource

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Source wraps a Client for the collector: a nil or failing client means
// the collector runs on NVML alone, which is logged once per outage rather
// than every cycle, and Available says which state it is in.
type Source struct {
	c   Client
	log *slog.Logger

	available atomic.Bool

	mu     sync.Mutex
	warned bool // "unavailable" logged for the current outage
}

// NewSource wraps c, which may be nil (DCGM not configured or not
// startable).
func NewSource(c Client, log *slog.Logger) *Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{c: c, log: log}
}

// Available reports whether the last Watch or Read succeeded.
func (s *Source) Available() bool { return s.available.Load() }

// Watch starts the client's watch; see Client.Watch. Without a client it
// does nothing.
func (s *Source) Watch(ctx context.Context, period time.Duration) error {
	if s.c == nil {
		s.unavailable(nil)
		return nil
	}
	if err := s.c.Watch(ctx, period); err != nil {
		s.unavailable(err)
		return fmt.Errorf("cannot watch DCGM: %w", err)
	}
	return nil
}

// Read returns the latest DCGM values. Without a client it returns
// nothing and no error: running without DCGM is a configuration, not a
// failure. A failing client's error is returned (the cycle is degraded).
func (s *Source) Read(ctx context.Context) ([]Values, error) {
	if s.c == nil {
		s.unavailable(nil)
		return nil, nil
	}
	vals, err := s.c.Read(ctx)
	if err != nil {
		s.unavailable(err)
		return nil, fmt.Errorf("cannot read DCGM: %w", err)
	}
	s.availableAgain()
	return vals, nil
}

// Close closes the client, if any.
func (s *Source) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

func (s *Source) unavailable(err error) {
	s.available.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warned {
		return
	}
	s.warned = true
	if err == nil {
		s.log.Warn("DCGM unavailable, running on NVML alone")
		return
	}
	s.log.Warn("DCGM unavailable, running on NVML alone", "err", err)
}

func (s *Source) availableAgain() {
	s.available.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warned {
		s.warned = false
		s.log.Info("DCGM available again")
	}
}
