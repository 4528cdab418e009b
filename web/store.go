package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// storeRef is the open ledger and the requests reading it. A store that
// failed, or whose file was replaced, is retired: no new request gets it,
// and it is closed when the last request reading it lets go, so closing
// it never fails another request's read in flight.
type storeRef struct {
	st      ledger.Store
	refs    int
	retired bool
}

// errLedgerGone is the answer while the embedded ledger's file is missing:
// a file that was there and is gone is not billed from its old copy.
var errLedgerGone = errors.New("the ledger file is missing (deleted or being replaced)")

// errShutDown answers a read that starts after Close: a computation still
// running in the background never opens the ledger again.
var errShutDown = errors.New("the server is shutting down")

// closeWait bounds how long Close waits for the reads in flight to let go
// of the ledger.
const closeWait = 30 * time.Second

// ledgerGen checks the embedded ledger's file (Config.LedgerFile) by its
// identity (device and inode, os.SameFile), not its modification time:
// a file replaced by another retires the store opened on the old one and
// starts a new generation, so nothing built from the old file (a cached
// report) is served again; a file that is gone is unavailable. The
// generation is part of every cache key. A ClickHouse ledger is always
// generation 0.
func (s *Server) ledgerGen() (uint64, error) {
	if s.cfg.LedgerFile == "" {
		return 0, nil
	}
	fi, err := os.Stat(s.cfg.LedgerFile)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.fileID != nil {
			s.log.Warn("the ledger file is gone: pages answer 503 until it is back", "path", s.cfg.LedgerFile, "err", err)
			s.retireLocked()
			s.fileID = nil
			s.gen++
		}
		return 0, &errUnavailable{errLedgerGone}
	}
	if s.fileID != nil && !os.SameFile(fi, s.fileID) {
		s.log.Info("the ledger file was replaced: reopening it", "path", s.cfg.LedgerFile)
		s.retireLocked()
		s.fileID = nil
		s.gen++
	}
	return s.gen, nil
}

// retireLocked takes the current store out of use; s.mu is held.
func (s *Server) retireLocked() {
	if s.cur == nil {
		return
	}
	s.cur.retired = true
	if s.cur.refs == 0 {
		_ = s.cur.st.Close()
	}
	s.cur = nil
}

// acquire returns the open ledger, opening it first when needed, for the
// caller to release.
func (s *Server) acquire(ctx context.Context) (*storeRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		return nil, &errUnavailable{errShutDown}
	}
	if s.cur == nil {
		// The file's identity is taken before the open: a file replaced
		// between the two is then noticed by the next request.
		var id os.FileInfo
		if s.cfg.LedgerFile != "" {
			fi, err := os.Stat(s.cfg.LedgerFile)
			if err != nil {
				return nil, &errUnavailable{errLedgerGone}
			}
			id = fi
		}
		st, err := s.cfg.Open(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, ctx.Err() // the reader went away: not the ledger's failure
			}
			s.m.ledgerFailures.Inc()
			s.ready.Store(nil) // the next probe asks the ledger
			return nil, &errUnavailable{err}
		}
		if id != nil && s.fileID != nil && !os.SameFile(id, s.fileID) {
			s.gen++
		}
		s.cur, s.fileID = &storeRef{st: st}, id
	}
	s.cur.refs++
	s.inUse++
	return s.cur, nil
}

// release lets go of ref; failed retires it (the next request opens the
// ledger again).
func (s *Server) release(ref *storeRef, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref.refs--
	s.inUse--
	if failed && s.cur == ref {
		s.cur = nil
		ref.retired = true
	}
	if ref.retired && ref.refs == 0 {
		_ = ref.st.Close()
	}
}

// withStore runs fn on the open ledger. A read that fails retires the
// store, so the next request opens a fresh one, and is counted; a read
// cut short because its reader went away (context.Canceled) is neither:
// the store is sound and other requests go on using it.
func (s *Server) withStore(ctx context.Context, fn func(ledger.Store) error) error {
	if _, err := s.ledgerGen(); err != nil {
		return err
	}
	ref, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	err = func() error {
		defer func() {
			if r := recover(); r != nil {
				s.release(ref, false) // then the panic is the caller's
				panic(r)
			}
		}()
		return fn(ref.st)
	}()
	var he *httpError
	switch {
	case err == nil:
		s.release(ref, false)
		s.m.ledgerSuccess.SetToCurrentTime()
		return nil
	case errors.As(err, &he):
		s.release(ref, false)
		return err
	case errors.Is(ctx.Err(), context.Canceled):
		s.release(ref, false)
		return fmt.Errorf("cannot read the ledger: %w", ctx.Err())
	}
	s.m.ledgerFailures.Inc()
	s.ready.Store(nil) // the next probe asks the ledger
	s.release(ref, true)
	return &errUnavailable{err}
}

// Close closes the ledger and waits (at most closeWait) until no read
// holds it: the reads in flight, background computations among them,
// finish on the store they hold, and nothing opens the ledger after
// Close, so its files are closed when Close returns.
func (s *Server) Close() error {
	s.mu.Lock()
	s.shut = true
	s.retireLocked()
	s.mu.Unlock()
	deadline := time.Now().Add(closeWait)
	for {
		s.mu.Lock()
		n := s.inUse
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot close the ledger: %d reads still hold it after %s", n, closeWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
