// Package chdbtest runs SQL on a second ClickHouse engine in tests: chDB,
// the ClickHouse 26.7 engine as a shared library (libchdb.so, fetched by
// scripts/deps.sh), loaded with dlopen so that nothing but a test that asks
// for it ever needs the library. A test package loads it once (Setup in
// TestMain): loading the 566 MB library costs seconds, and chDB allows one
// storage path per process.
package chdbtest

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>

// Our own declarations of the few entry points used (chdb.h, chDB's C API).
// A connection is a pointer to an opaque handle; a result is opaque.
typedef void *(*chdb_connect_fn)(int, char **);
typedef void (*chdb_close_conn_fn)(void *);
typedef void *(*chdb_query_fn)(void *, const char *, const char *);
typedef char *(*chdb_result_buffer_fn)(void *);
typedef size_t (*chdb_result_length_fn)(void *);
typedef const char *(*chdb_result_error_fn)(void *);
typedef void (*chdb_destroy_query_result_fn)(void *);
typedef void (*chdb_set_signal_handlers_enabled_fn)(int);

static void *gl_connect(void *f, int argc, char **argv) { return ((chdb_connect_fn)f)(argc, argv); }
static void gl_close(void *f, void *conn) { ((chdb_close_conn_fn)f)(conn); }
// conn is what chdb_connect returned: the query takes the handle it points to.
static void *gl_query(void *f, void *conn, const char *q, const char *format) {
	return ((chdb_query_fn)f)(*(void **)conn, q, format);
}
static char *gl_buffer(void *f, void *r) { return ((chdb_result_buffer_fn)f)(r); }
static size_t gl_length(void *f, void *r) { return ((chdb_result_length_fn)f)(r); }
static const char *gl_error(void *f, void *r) { return ((chdb_result_error_fn)f)(r); }
static void gl_destroy(void *f, void *r) { ((chdb_destroy_query_result_fn)f)(r); }
static void gl_signals(void *f, int on) { ((chdb_set_signal_handlers_enabled_fn)f)(on); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// Version is the chDB release scripts/deps.sh fetches; EngineVersion is the
// ClickHouse version inside it (SELECT version()).
const (
	Version       = "26.7.3-stable.1"
	EngineVersion = "26.7.2.1"
)

// Environment variables the harness reads.
const (
	// EnvLib names libchdb.so directly, instead of the tool cache.
	EnvLib = "GPULEDGER_CHDB_LIB"
	// EnvToolsDir is the tool cache scripts/deps.sh unpacks into.
	EnvToolsDir = "GPULEDGER_TOOLS_DIR"
)

// Limits: a statement runs at most maxSeconds (a setting of the engine,
// so a runaway query ends with an error instead of hanging the test), and
// a result larger than maxResult is refused rather than copied.
const (
	maxSeconds = 300
	maxResult  = 256 << 20
)

// ErrNoEngine means libchdb.so is not where deps.sh puts it.
var ErrNoEngine = errors.New("chDB library not found")

// Engine is the one chDB engine a test package shares. Its statements run
// one at a time: chDB serialises a connection's queries anyway.
type Engine struct {
	mu   sync.Mutex
	err  error
	lib  unsafe.Pointer
	conn unsafe.Pointer
	dir  string
	fn   struct{ connect, close, query, buffer, length, errmsg, destroy unsafe.Pointer }
}

// LibPath is where scripts/deps.sh unpacks the library: $GPULEDGER_CHDB_LIB,
// else chdb-<Version>/libchdb.so under $GPULEDGER_TOOLS_DIR, by default
// gpuledger-tools beside Go's build cache (as scripts/tools.sh keeps helm).
func LibPath() string {
	if p := os.Getenv(EnvLib); p != "" {
		return p
	}
	root := os.Getenv(EnvToolsDir)
	if root == "" {
		root = filepath.Join(filepath.Dir(goCache()), "gpuledger-tools")
	}
	return filepath.Join(root, "chdb-"+Version, "libchdb.so")
}

// goCache is `go env GOCACHE`, or Go's default when go cannot say.
func goCache() string {
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" && dir != "off" {
			return dir
		}
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "go-build")
	}
	return filepath.Join(os.TempDir(), "go-build")
}

// Setup loads the library and opens an engine on a fresh data directory
// (MergeTree tables persist there until Close). It never fails: an
// unavailable engine is remembered and reported by each test through
// Require.
func Setup() *Engine {
	e := &Engine{}
	e.err = e.open()
	return e
}

func (e *Engine) open() error {
	path := LibPath()
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %s", ErrNoEngine, path)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	e.lib = C.dlopen(cpath, C.RTLD_NOW|C.RTLD_LOCAL)
	if e.lib == nil {
		return fmt.Errorf("cannot load %s: %s", path, C.GoString(C.dlerror()))
	}
	syms := []struct {
		name string
		to   *unsafe.Pointer
	}{
		{"chdb_connect", &e.fn.connect}, {"chdb_close_conn", &e.fn.close}, {"chdb_query", &e.fn.query},
		{"chdb_result_buffer", &e.fn.buffer}, {"chdb_result_length", &e.fn.length},
		{"chdb_result_error", &e.fn.errmsg}, {"chdb_destroy_query_result", &e.fn.destroy},
	}
	for _, s := range syms {
		if *s.to = e.sym(s.name); *s.to == nil {
			return fmt.Errorf("cannot load %s: no symbol %s", path, s.name)
		}
	}
	// The Go runtime owns SIGSEGV, SIGURG and the rest: the engine's own
	// handlers would take signals the runtime needs.
	if f := e.sym("chdb_set_signal_handlers_enabled"); f != nil {
		C.gl_signals(f, 0)
	}
	dir, err := os.MkdirTemp("", "gpuledger-chdb-")
	if err != nil {
		return fmt.Errorf("cannot create chDB dir: %w", err)
	}
	e.dir = dir
	args := []string{"clickhouse", "--path=" + dir, fmt.Sprintf("--max_execution_time=%d", maxSeconds)}
	argv := make([]*C.char, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(argv[i]))
	}
	e.conn = C.gl_connect(e.fn.connect, C.int(len(args)), &argv[0])
	if e.conn == nil {
		return fmt.Errorf("cannot connect chDB on %s", dir)
	}
	return nil
}

func (e *Engine) sym(name string) unsafe.Pointer {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	return C.dlsym(e.lib, c)
}

// Err is why the engine is unavailable, or nil.
func (e *Engine) Err() error { return e.err }

// Require skips t when the engine is unavailable, or fails it when
// GPULEDGER_REQUIRE_INTEGRATION=1.
func (e *Engine) Require(t testing.TB) {
	t.Helper()
	if e.err == nil {
		return
	}
	how := "see the error"
	if errors.Is(e.err, ErrNoEngine) {
		how = "run make chdb (scripts/deps.sh --chdb), or set " + EnvLib
	}
	testenv.RequireIntegration(t, "chDB (ClickHouse "+EngineVersion+") unavailable: "+e.err.Error(), how)
}

// Query runs one statement and returns its output in format (any
// ClickHouse output format; TabSeparated when empty). The statement
// cannot be interrupted once sent: ctx is checked before it, and the
// engine's max_execution_time bounds it.
func (e *Engine) Query(ctx context.Context, sql, format string) (string, error) {
	if e.err != nil {
		return "", e.err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if format == "" {
		format = "TabSeparated"
	}
	cq, cf := C.CString(sql), C.CString(format)
	defer C.free(unsafe.Pointer(cq))
	defer C.free(unsafe.Pointer(cf))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		return "", errors.New("chDB engine closed")
	}
	r := C.gl_query(e.fn.query, e.conn, cq, cf)
	if r == nil {
		return "", fmt.Errorf("chDB returned no result for %s", head(sql))
	}
	defer C.gl_destroy(e.fn.destroy, r)
	if msg := C.gl_error(e.fn.errmsg, r); msg != nil {
		return "", fmt.Errorf("chDB: %s", strings.TrimSpace(C.GoString(msg)))
	}
	n := C.gl_length(e.fn.length, r)
	if n > maxResult {
		return "", fmt.Errorf("chDB result of %d bytes is over the %d limit for %s", n, maxResult, head(sql))
	}
	if n == 0 {
		return "", nil
	}
	return C.GoStringN(C.gl_buffer(e.fn.buffer, r), C.int(n)), nil
}

// Exec runs a statement whose output is not wanted.
func (e *Engine) Exec(ctx context.Context, sql string) error {
	_, err := e.Query(ctx, sql, "")
	return err
}

// head is the start of a statement, for errors.
func head(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// Close closes the connection and removes the data. The library stays
// loaded: chDB cannot be started again in the same process on another
// path, and unloading it under running engine threads is unsafe.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil {
		C.gl_close(e.fn.close, e.conn)
		e.conn = nil
	}
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}
