package clickhouse

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// Errors callers can test with errors.Is.
var (
	// ErrAuth: the server rejected the user name or password.
	ErrAuth = errors.New("ClickHouse authentication failed")
	// ErrSchemaMissing: the database or its tables do not exist yet.
	ErrSchemaMissing = errors.New("ledger schema missing")
	// ErrSchemaOutdated: the database needs migrating to this binary's schema.
	ErrSchemaOutdated = errors.New("ledger schema outdated")
	// ErrSchemaTooNew: a newer gpuledger migrated the database.
	ErrSchemaTooNew = errors.New("ledger schema newer than this binary")
)

// ClickHouse server error codes we act on.
const (
	codeUnknownTable         = 60
	codeUnknownDatabase      = 81
	codeUnknownUser          = 192
	codeWrongPassword        = 193
	codeRequiredPassword     = 194
	codeIPNotAllowed         = 195
	codeAuthenticationFailed = 516
)

// retryableCodes are server errors that a later attempt can succeed on:
// overload, timeouts, network trouble between replicas, ZooKeeper.
var retryableCodes = map[int32]bool{
	3:   true, // UNEXPECTED_END_OF_FILE
	32:  true, // ATTEMPT_TO_READ_AFTER_EOF
	159: true, // TIMEOUT_EXCEEDED
	202: true, // TOO_MANY_SIMULTANEOUS_QUERIES
	203: true, // NO_FREE_CONNECTION
	209: true, // SOCKET_TIMEOUT
	210: true, // NETWORK_ERROR
	236: true, // ABORTED
	241: true, // MEMORY_LIMIT_EXCEEDED
	242: true, // TABLE_IS_READ_ONLY
	252: true, // TOO_MANY_PARTS
	285: true, // TOO_FEW_LIVE_REPLICAS
	319: true, // UNKNOWN_STATUS_OF_INSERT
	425: true, // SYSTEM_ERROR
	999: true, // KEEPER_EXCEPTION
}

// permanentError marks an error of ours (bad input) that no retry fixes.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(format string, args ...any) error {
	return permanentError{fmt.Errorf(format, args...)}
}

// serverCode returns the ClickHouse exception code in err, or 0.
func serverCode(err error) int32 {
	var ex *ch.Exception
	if errors.As(err, &ex) {
		return ex.Code
	}
	return 0
}

// Retryable says whether another attempt of the same request may succeed:
// transport failures (server down, restarting, connection reset) and the
// server's transient errors. Exported for the shipper's own retry loop.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var p permanentError
	if errors.As(err, &p) {
		return false
	}
	if errors.Is(err, ErrAuth) || errors.Is(err, ErrSchemaMissing) || errors.Is(err, ErrSchemaTooNew) || errors.Is(err, ErrSchemaOutdated) {
		return false
	}
	if code := serverCode(err); code != 0 {
		return retryableCodes[code]
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, ch.ErrAcquireConnTimeout):
		return true
	}
	// Anything else from the driver without a server code is a transport or
	// protocol hiccup far more often than a bug; retries stay bounded.
	return true
}

// describe turns the server's answer into an error naming the problem, with
// the original error kept for errors.Is/As.
// what must name the server address.
func (s *Store) describe(what string, err error) error {
	return describeErr(what, s.db, s.user, err)
}

func describeErr(what, db, user string, err error) error {
	switch serverCode(err) {
	case codeUnknownUser, codeWrongPassword, codeRequiredPassword, codeAuthenticationFailed:
		return fmt.Errorf("%s: %w: the server rejected user %q: wrong user name or password (%w)", what, ErrAuth, displayUser(user), err)
	case codeIPNotAllowed:
		return fmt.Errorf("%s: %w: the server does not allow user %q from this address (%w)", what, ErrAuth, displayUser(user), err)
	case codeUnknownDatabase:
		return fmt.Errorf("%s: %w: database %q does not exist: run `gpuledger ledger migrate` (%w)", what, ErrSchemaMissing, db, err)
	case codeUnknownTable:
		return fmt.Errorf("%s: %w: a ledger table is missing in database %q: run `gpuledger ledger migrate` (%w)", what, ErrSchemaMissing, db, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func displayUser(u string) string {
	if u == "" {
		return "default"
	}
	return u
}
