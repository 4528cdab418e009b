package chtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// Environment variables the harness reads.
const (
	// EnvDSN names an existing server to test against instead of starting
	// one, e.g. clickhouse://user:pw@host:9000/ (the database part is
	// replaced per test).
	EnvDSN = "GPULEDGER_TEST_CLICKHOUSE_DSN"
	// EnvRequire=1 turns a missing server into a test failure.
	EnvRequire = testenv.EnvRequire
)

// Harness is the one server a test package shares (set up in TestMain).
type Harness struct {
	srv  *Server
	base *url.URL // external server from EnvDSN
	// run tells this process's databases on an external server from an
	// earlier run's, which that server keeps: a second run against the
	// same server found the first run's rows in its databases.
	run     string
	dir     string
	err     error
	counter atomic.Int64
}

// Setup starts a server (or adopts EnvDSN). It never fails: an unavailable
// server is remembered and reported by each test through Require.
func Setup() *Harness {
	h := &Harness{}
	if raw := os.Getenv(EnvDSN); raw != "" {
		u, err := url.Parse(raw)
		if err != nil {
			h.err = fmt.Errorf("%s is not a URL: %w", EnvDSN, err)
		}
		h.base = u
		h.run = fmt.Sprintf("%06x", uint32(time.Now().UnixNano())&0xffffff)
		return h
	}
	dir, err := os.MkdirTemp("", "gpuledger-clickhouse-")
	if err != nil {
		h.err = fmt.Errorf("cannot create server dir: %w", err)
		return h
	}
	h.dir = dir
	h.srv, h.err = Start(context.Background(), dir)
	return h
}

// Close kills the server (its data is thrown away, so there is nothing
// to shut down cleanly for) and removes its data.
func (h *Harness) Close() {
	if h.srv != nil {
		h.srv.Kill()
	}
	if h.dir != "" {
		os.RemoveAll(h.dir)
	}
}

// Require skips t when no server is available, or fails it when
// GPULEDGER_REQUIRE_INTEGRATION=1.
func (h *Harness) Require(t testing.TB) {
	t.Helper()
	if h.err == nil {
		return
	}
	how := "see the error"
	if errors.Is(h.err, ErrNoServer) {
		how = "set " + EnvDSN + " or install clickhouse-server"
	}
	testenv.RequireIntegration(t, "ClickHouse unavailable: "+h.err.Error(), how)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_]`)

// DSN returns a ledger DSN for a fresh database private to t, so tests do
// not see each other's rows. The database does not exist until migrated.
// On an external server its name also carries the run, so a rerun starts
// empty; the server keeps every run's databases (drop the t* ones).
func (h *Harness) DSN(t testing.TB) string {
	t.Helper()
	h.Require(t)
	n, name := h.counter.Add(1), unsafeName.ReplaceAllString(t.Name(), "_")
	db := fmt.Sprintf("t%d_%s", n, name)
	if h.run != "" {
		db = fmt.Sprintf("t%d_%s_%s", n, h.run, name)
	}
	if len(db) > 60 {
		db = db[:60]
	}
	if h.base != nil {
		u := *h.base
		u.Path = "/" + db
		return u.String()
	}
	return h.srv.DSN(db)
}

// WithCredentials replaces the user and password of dsn.
func WithCredentials(dsn, user, password string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// Server returns the server this harness started, skipping t when the
// harness uses an external server it cannot kill or restart.
func (h *Harness) Server(t testing.TB) *Server {
	t.Helper()
	h.Require(t)
	if h.srv == nil {
		t.Skipf("test needs a server it can kill; %s names an external one", EnvDSN)
	}
	return h.srv
}

// Local returns the server this harness started, or nil.
func (h *Harness) Local() *Server { return h.srv }

// External says whether the harness uses EnvDSN.
func (h *Harness) External() bool { return h.base != nil }
