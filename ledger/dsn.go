package ledger

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// DSN schemes.
const (
	SchemeFile       = "file"
	SchemeClickHouse = "clickhouse"
)

// Defaults of ClickHouse DSNs.
const (
	DefaultClickHouseDatabase   = "gpuledger"
	DefaultClickHousePort       = 9000
	DefaultClickHouseSecurePort = 9440
)

// redactedPassword replaces passwords (and secret-looking options) wherever a
// DSN is printed.
const redactedPassword = "xxxxx"

// DSN says where a ledger lives: an embedded file or a ClickHouse database.
type DSN struct {
	Scheme string // SchemeFile or SchemeClickHouse

	Path string // file: the database file

	// ClickHouse. An empty User means the server's default user.
	User, Password string
	Host           string
	Port           int
	Database       string
	Secure         bool              // TLS, from the secure option
	Options        map[string]string // every query option as given, secure included
}

// databaseName is what we accept as a ClickHouse database: it is spliced into
// DDL, so nothing that would need quoting.
var databaseName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseDSN parses a ledger DSN: "PATH" or "file:PATH" for the embedded
// store, "clickhouse://user:password@host:port/database?opt=v" for
// ClickHouse. Errors name the problem and never contain the password.
func ParseDSN(s string) (DSN, error) {
	if strings.TrimSpace(s) == "" {
		return DSN{}, errors.New("empty ledger DSN: want a file path, file:PATH or clickhouse://user:password@host:9000/database")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return DSN{}, fmt.Errorf("ledger DSN %q: contains a NUL byte", redactRaw(s))
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, SchemeClickHouse+"://"):
		return parseClickHouseDSN(s)
	case strings.HasPrefix(lower, SchemeClickHouse+":"):
		return DSN{}, fmt.Errorf("ledger DSN %q: missing // after clickhouse:", redactRaw(s))
	case strings.HasPrefix(lower, "file:"):
		return parseFileDSN(s, s[len("file:"):])
	case strings.Contains(s, "://"):
		scheme := s[:strings.Index(s, "://")]
		return DSN{}, fmt.Errorf("ledger DSN %q: unsupported scheme %q (want a file path, file:PATH or clickhouse://...)", redactRaw(s), scheme)
	}
	return parseFileDSN(s, s)
}

func parseFileDSN(raw, path string) (DSN, error) {
	if strings.HasPrefix(path, "//") {
		// file:///abs/path: an empty authority, then an absolute path.
		path = path[2:]
		if !strings.HasPrefix(path, "/") {
			return DSN{}, fmt.Errorf("ledger DSN %q: want file:PATH or file:///ABSOLUTE/PATH", raw)
		}
	}
	if path == "" {
		return DSN{}, fmt.Errorf("ledger DSN %q: missing path", raw)
	}
	return DSN{Scheme: SchemeFile, Path: path}, nil
}

func parseClickHouseDSN(raw string) (DSN, error) {
	shown := redactRaw(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// url's own message may quote the input, password included.
		return DSN{}, fmt.Errorf("ledger DSN %q: not a valid URL (special characters in the user or password must be percent-encoded)", shown)
	}
	if strings.Contains(u.EscapedPath(), "@") || strings.Contains(u.RawQuery, "@") || strings.Contains(u.Fragment, "@") {
		// An unencoded '/', '?' or '#' in the password cut the userinfo short.
		return DSN{}, fmt.Errorf("ledger DSN %q: '@' after the host (special characters in the user or password must be percent-encoded, '@' as %%40)", shown)
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return DSN{}, fmt.Errorf("ledger DSN %q: unexpected '#' fragment", shown)
	}
	d := DSN{Scheme: SchemeClickHouse, Database: DefaultClickHouseDatabase, Options: map[string]string{}}
	if u.User != nil {
		d.User = u.User.Username()
		d.Password, _ = u.User.Password()
	}
	d.Host = u.Hostname()
	if d.Host == "" {
		return DSN{}, fmt.Errorf("ledger DSN %q: missing host", shown)
	}
	if !validHost(d.Host) {
		return DSN{}, fmt.Errorf("ledger DSN %q: invalid host %q (want a host name or an IP address, IPv6 in [brackets])", shown, d.Host)
	}
	if err := parseClickHouseOptions(&d, u.RawQuery); err != nil {
		return DSN{}, fmt.Errorf("ledger DSN %q: %w", shown, err)
	}
	d.Port = DefaultClickHousePort
	if d.Secure {
		d.Port = DefaultClickHouseSecurePort
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return DSN{}, fmt.Errorf("ledger DSN %q: invalid port %q (want 1-65535)", shown, p)
		}
		d.Port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return DSN{}, fmt.Errorf("ledger DSN %q: empty port after ':'", shown)
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if !databaseName.MatchString(db) {
			return DSN{}, fmt.Errorf("ledger DSN %q: invalid database name %q (want letters, digits and '_', not starting with a digit)", shown, db)
		}
		if ReservedClickHouseDatabase(db) {
			return DSN{}, fmt.Errorf("ledger DSN %q: database %q is ClickHouse's own (system tables); name a database for the ledger, such as %s", shown, db, DefaultClickHouseDatabase)
		}
		d.Database = db
	}
	return d, nil
}

// ReservedClickHouseDatabase says whether db is one of ClickHouse's own
// databases, which hold its system tables: the ledger's tables never go
// there. ClickHouse's database names are case-sensitive; these three are
// the ones it creates.
func ReservedClickHouseDatabase(db string) bool {
	switch db {
	case "system", "INFORMATION_SCHEMA", "information_schema":
		return true
	}
	return false
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

func validHost(h string) bool {
	if strings.Contains(h, ":") {
		return net.ParseIP(h) != nil
	}
	return hostName.MatchString(h)
}

func parseClickHouseOptions(d *DSN, rawQuery string) error {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fmt.Errorf("invalid query options: %w", err)
	}
	for k, vs := range q {
		if k == "" {
			return errors.New("query option with an empty name")
		}
		if len(vs) > 1 {
			return fmt.Errorf("query option %q given %d times", k, len(vs))
		}
		d.Options[k] = vs[0]
	}
	if v, ok := d.Options["secure"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("option secure=%q: want true or false", v)
		}
		d.Secure = b
	}
	return nil
}

// String renders the DSN in a form ParseDSN reads back to the same value,
// password included: for handing to a driver, never for logs (see Redacted).
func (d DSN) String() string { return d.render(false) }

// Redacted renders the DSN for logs and errors: the password and options
// that look like secrets are replaced by "xxxxx".
func (d DSN) Redacted() string { return d.render(true) }

func (d DSN) render(redact bool) string {
	if d.Scheme != SchemeClickHouse {
		if strings.HasPrefix(d.Path, "//") {
			return "file://" + d.Path // else read back as file://AUTHORITY
		}
		return "file:" + d.Path
	}
	u := url.URL{Scheme: SchemeClickHouse, Host: net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), Path: "/" + d.Database}
	switch {
	case d.Password != "" && redact:
		u.User = url.UserPassword(d.User, redactedPassword)
	case d.Password != "":
		u.User = url.UserPassword(d.User, d.Password)
	case d.User != "":
		u.User = url.User(d.User)
	}
	keys := make([]string, 0, len(d.Options))
	for k := range d.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := url.Values{}
	for _, k := range keys {
		v := d.Options[k]
		if redact && secretOption(k) {
			v = redactedPassword
		}
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func secretOption(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.Contains(k, "token")
}

// redactRaw hides the password of a DSN we could not parse. Everything
// between the first ':' of the userinfo and the last '@' goes, so a password
// holding unencoded '/', '?', '#' or '@' is hidden whole; at worst a little
// more than the password is hidden.
func redactRaw(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	start := i + 3
	at := strings.LastIndexByte(s, '@')
	if at < start {
		return s
	}
	colon := strings.IndexByte(s[start:at], ':')
	if colon < 0 {
		return s
	}
	return s[:start+colon+1] + redactedPassword + s[at:]
}

// Opener opens a Store for a parsed DSN of one scheme.
type Opener func(ctx context.Context, d DSN) (Store, error)

// Open parses dsn and opens it with the opener registered for its scheme, so
// commands can plug in ClickHouse without this package importing it.
func Open(ctx context.Context, dsn string, openers map[string]Opener) (Store, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	open, ok := openers[d.Scheme]
	if !ok || open == nil {
		return nil, fmt.Errorf("ledger DSN %q: %s ledgers are not supported by this command", d.Redacted(), d.Scheme)
	}
	st, err := open(ctx, d)
	if err != nil {
		return nil, scrub(fmt.Errorf("cannot open ledger %s: %w", d.Redacted(), err), d.Password)
	}
	return st, nil
}

// scrubbedError hides a password that an opener's error may quote, while
// errors.Is/As still see the cause.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

func scrub(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &scrubbedError{msg: strings.ReplaceAll(err.Error(), password, redactedPassword), err: err}
}
