package clickhouse

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/ledger"
)

var _ ledger.Store = (*Store)(nil)

// Options tune a Store. Credentials and TLS on/off come from the DSN; the
// command line wires flags, environment and secret files into the DSN.
type Options struct {
	// Cluster is the ClickHouse cluster name of a multi-node deployment
	// (--clickhouse-cluster). The store then writes synchronously through
	// the Distributed tables that Migrate created.
	Cluster string
	// TLS overrides the default TLS config of a secure=true DSN.
	TLS *tls.Config
	// Writer identifies this process in rollup marks (default: host name).
	// A random suffix is always added, so two processes never share one.
	Writer string
	// MaxRetries bounds the extra attempts of a request that failed with a
	// retryable error (default 4; negative disables retries).
	MaxRetries int
	// RetryBase and RetryMax bound the exponential backoff between attempts
	// (defaults 100ms and 5s); each wait is jittered.
	RetryBase, RetryMax time.Duration
	// DialTimeout bounds connecting (default 5s, or the DSN's dial_timeout).
	DialTimeout time.Duration
	// RowsChunk bounds the rows one Rows query sorts server-side (default
	// 200000): a long range is read as consecutive hour-aligned chunks.
	RowsChunk int
	// CoverageChunk bounds the rows one coverage query holds server-side
	// (default 4000000, about 200 MB of intervals): a long range is
	// searched in hour-aligned chunks and their holes joined here.
	CoverageChunk int
	// Logger receives retry and rollup logs (default slog.Default()).
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxRetries == 0 {
		o.MaxRetries = 4
	}
	if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 100 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 5 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.RowsChunk <= 0 {
		o.RowsChunk = 200000
	}
	if o.CoverageChunk <= 0 {
		o.CoverageChunk = 4000000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Store is a ledger.Store in a ClickHouse database.
type Store struct {
	conn   driver.Conn
	opts   Options
	log    *slog.Logger
	addr   string // host:port, for messages
	db     string
	user   string
	writer string
	seq    atomic.Uint64
}

// Open connects to the database of dsn and checks its schema: a missing or
// older schema asks for `gpuledger ledger migrate`, a newer one for a newer
// binary.
func Open(ctx context.Context, dsn ledger.DSN, opts Options) (*Store, error) {
	opts.defaults()
	s := &Store{opts: opts, log: opts.Logger, db: dsn.Database, user: dsn.User}
	conn, addr, err := connect(ctx, dsn, opts, dsn.Database)
	if err != nil {
		return nil, err
	}
	s.conn, s.addr = conn, addr
	if err := s.retry(ctx, "ping", func(ctx context.Context) error { return conn.Ping(ctx) }); err != nil {
		conn.Close()
		return nil, s.describe(fmt.Sprintf("cannot connect to ClickHouse at %s", addr), err)
	}
	if err := s.checkSchema(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	s.writer = writerID(opts.Writer)
	return s, nil
}

// writerID is the mark writer of this Store: a name for humans and a random
// part so that a restarted process never reuses the sequence of another.
func writerID(name string) string {
	if name == "" {
		name, _ = os.Hostname()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return name + "/" + hex.EncodeToString(b[:])
}

// connect opens a connection pool to dsn's server with database db ("" for
// the user's default database).
func connect(ctx context.Context, dsn ledger.DSN, opts Options, db string) (driver.Conn, string, error) {
	if dsn.Scheme != ledger.SchemeClickHouse {
		return nil, "", fmt.Errorf("ledger DSN %s is not a ClickHouse DSN", dsn.Redacted())
	}
	if err := validateNames(dsn.Database, opts.Cluster); err != nil {
		return nil, "", fmt.Errorf("ledger DSN %s: %w", dsn.Redacted(), err)
	}
	co, err := parseConnOptions(dsn, opts)
	if err != nil {
		return nil, "", fmt.Errorf("ledger DSN %s: %w", dsn.Redacted(), err)
	}
	addr := co.addr
	user := dsn.User
	if user == "" {
		user = "default"
	}
	chOpts := &ch.Options{
		Protocol: ch.Native,
		Addr:     []string{addr},
		Auth:     ch.Auth{Database: db, Username: user, Password: dsn.Password},
		TLS:      co.tls,
		ClientInfo: ch.ClientInfo{Products: []struct{ Name, Version string }{
			{Name: "gpuledger", Version: "1"},
		}},
		DialTimeout:     co.dialTimeout,
		MaxOpenConns:    8,
		MaxIdleConns:    4,
		ConnMaxLifetime: time.Hour,
		ReadTimeout:     5 * time.Minute,
	}
	if co.compress {
		chOpts.Compression = &ch.Compression{Method: ch.CompressionLZ4}
	}
	conn, err := ch.Open(chOpts)
	if err != nil {
		return nil, "", fmt.Errorf("cannot configure ClickHouse client for %s: %w", dsn.Redacted(), err)
	}
	return conn, addr, nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	if err := s.conn.Close(); err != nil {
		return fmt.Errorf("cannot close ClickHouse connection to %s: %w", s.addr, err)
	}
	return nil
}

// writeCtx adds the settings every write needs in cluster mode: Distributed
// inserts are asynchronous by default, and a rollup build must see the raw
// rows a completed Append wrote.
func (s *Store) writeCtx(ctx context.Context) context.Context {
	if s.opts.Cluster == "" {
		return ctx
	}
	return ch.Context(ctx, ch.WithSettings(ch.Settings{"insert_distributed_sync": 1}))
}

func (s *Store) table(name string) string { return qualified(s.db, name) }

// Opener opens ClickHouse stores with opts, for ledger.Open: the contract
// parses the DSN and each store opens its own scheme.
func Opener(opts Options) ledger.Opener {
	return func(ctx context.Context, d ledger.DSN) (ledger.Store, error) {
		s, err := Open(ctx, d, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
