package ledger

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDSN(t *testing.T) {
	ch := func(user, pw, host string, port int, db string, secure bool, opts map[string]string) DSN {
		if opts == nil {
			opts = map[string]string{}
		}
		return DSN{Scheme: SchemeClickHouse, User: user, Password: pw, Host: host, Port: port, Database: db, Secure: secure, Options: opts}
	}
	cases := []struct {
		in   string
		want DSN
	}{
		{"ledger.db", DSN{Scheme: SchemeFile, Path: "ledger.db"}},
		{"/var/lib/gpuledger/ledger.db", DSN{Scheme: SchemeFile, Path: "/var/lib/gpuledger/ledger.db"}},
		{"file:out/ledger.db", DSN{Scheme: SchemeFile, Path: "out/ledger.db"}},
		{"file:///abs/l.db", DSN{Scheme: SchemeFile, Path: "/abs/l.db"}},
		{"dir:with:colons/l.db", DSN{Scheme: SchemeFile, Path: "dir:with:colons/l.db"}},
		{"clickhouse://u:p@ch:9000/billing?secure=false", ch("u", "p", "ch", 9000, "billing", false, map[string]string{"secure": "false"})},
		{"clickhouse://ch", ch("", "", "ch", 9000, "gpuledger", false, nil)},
		{"clickhouse://ch/", ch("", "", "ch", 9000, "gpuledger", false, nil)},
		{"clickhouse://reader@ch:19000", ch("reader", "", "ch", 19000, "gpuledger", false, nil)},
		{"clickhouse://u:p@ch?secure=true", ch("u", "p", "ch", 9440, "gpuledger", true, map[string]string{"secure": "true"})},
		{"clickhouse://u:p@ch:9000?secure=1&dial_timeout=5s", ch("u", "p", "ch", 9000, "gpuledger", true, map[string]string{"secure": "1", "dial_timeout": "5s"})},
		{"CLICKHOUSE://u:p%40ss%2Fw%3Ford@[::1]:9000/db_1", ch("u", "p@ss/w?ord", "::1", 9000, "db_1", false, nil)},
	}
	for _, c := range cases {
		got, err := ParseDSN(c.in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseDSN(%q)\n got %+v\nwant %+v", c.in, got, c.want)
		}
	}
}

func TestParseDSNErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty ledger DSN"},
		{"   ", "empty ledger DSN"},
		{"file:", `ledger DSN "file:": missing path`},
		{"file://host/x", "file:///ABSOLUTE/PATH"},
		{"clickhouse://:x@/db", `ledger DSN "clickhouse://:xxxxx@/db": missing host`},
		{"clickhouse://u:secret@ch:0/db", `invalid port "0"`},
		{"clickhouse://u:secret@ch:99999/db", `invalid port "99999"`},
		{"clickhouse://u:secret@ch:/db", "empty port"},
		{"clickhouse://u:secret@ch/db/extra", `invalid database name "db/extra"`},
		{"clickhouse://u:secret@ch/1db", `invalid database name "1db"`},
		{"clickhouse://u:secret@ch/system", `database "system" is ClickHouse's own`},
		{"clickhouse://u:secret@ch:9000/information_schema", `database "information_schema" is ClickHouse's own`},
		{"clickhouse://u:secret@ch/INFORMATION_SCHEMA?secure=true", `database "INFORMATION_SCHEMA" is ClickHouse's own`},
		{"clickhouse://u:secret@ch/db?secure=maybe", `secure="maybe"`},
		{"clickhouse://u:secret@ch/db?a=1&a=2", `"a" given 2 times`},
		{"clickhouse://u:secret@ch/db#frag", "fragment"},
		{"clickhouse:ch/db", "missing // after clickhouse:"},
		{"postgres://u:secret@h/db", `unsupported scheme "postgres"`},
		// Unencoded specials in the password: refused, never echoed.
		{"clickhouse://u:se/cret@ch/db", "must be percent-encoded"},
		{"clickhouse://u:se?cret@ch/db", "must be percent-encoded"},
		{"clickhouse://u:se#cret@ch/db", "must be percent-encoded"},
		{"clickhouse://u:123/cret@ch/db", "must be percent-encoded"},
		{"clickhouse://u:sec%zzret@ch/db", "not a valid URL"},
		{"clickhouse://u:secret@ch/db?x=%zz", "invalid query options"},
	}
	for _, c := range cases {
		_, err := ParseDSN(c.in)
		if err == nil {
			t.Errorf("ParseDSN(%q) accepted", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDSN(%q) = %q, want it to say %q", c.in, err, c.want)
		}
		for _, secret := range []string{"secret", "cret", "sec%zz"} {
			if strings.Contains(c.in, secret) && strings.Contains(err.Error(), secret) {
				t.Errorf("ParseDSN(%q) error %q leaks the password", c.in, err)
			}
		}
	}
}

func TestDSNRedactedAndString(t *testing.T) {
	d, err := ParseDSN("clickhouse://admin:s3cr%2Ft@ch.example:9440/billing?secure=true&password_file=/x&compress=lz4")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Redacted(), "clickhouse://admin:xxxxx@ch.example:9440/billing?compress=lz4&password_file=xxxxx&secure=true"; got != want {
		t.Errorf("Redacted() = %q, want %q", got, want)
	}
	back, err := ParseDSN(d.String())
	if err != nil || !reflect.DeepEqual(back, d) {
		t.Errorf("ParseDSN(String()) = %+v, %v; want %+v", back, err, d)
	}
	f, _ := ParseDSN("out/ledger.db")
	if f.Redacted() != "file:out/ledger.db" || f.String() != "file:out/ledger.db" {
		t.Errorf("file DSN renders as %q / %q", f.Redacted(), f.String())
	}
}

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"ledger.db", "file:x.db", "file:///a/b", "clickhouse://u:p@h:9000/db?secure=true",
		"clickhouse://:x@/db", "clickhouse://u:p/w@h", "clickhouse://[::1]:1/d", "clickhouse://h?a=1&a=2",
		"clickhouse://u:p%40@h/db#x", "x://y", "clickhouse:", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDSN(s)
		if err != nil {
			// Whatever sits between the userinfo ':' and the last '@' is
			// treated as a password and must not be echoed.
			if i := strings.Index(s, "://"); i >= 0 {
				rest := s[i+3:]
				at, colon := strings.LastIndexByte(rest, '@'), strings.IndexByte(rest, ':')
				if colon >= 0 && at > colon+4 {
					pw := rest[colon+1 : at]
					outside := strings.Replace(s, pw, "", 1)
					if strings.Contains(err.Error(), pw) && !strings.Contains(outside, pw) {
						t.Fatalf("error %q echoes password-like %q", err, pw)
					}
				}
			}
			return
		}
		switch d.Scheme {
		case SchemeFile:
			if d.Path == "" {
				t.Fatalf("file DSN %q with empty path", s)
			}
		case SchemeClickHouse:
			if d.Host == "" || d.Port < 1 || d.Port > 65535 || !databaseName.MatchString(d.Database) {
				t.Fatalf("ParseDSN(%q) = %+v: invalid fields accepted", s, d)
			}
		default:
			t.Fatalf("ParseDSN(%q): scheme %q", s, d.Scheme)
		}
		back, err := ParseDSN(d.String())
		if err != nil || !reflect.DeepEqual(back, d) {
			t.Fatalf("round trip of %q via %q: %+v, %v; want %+v", s, d.String(), back, err, d)
		}
		if d.Password != "" {
			r, err := ParseDSN(d.Redacted())
			if err != nil || r.Password != redactedPassword {
				t.Fatalf("Redacted() of %q = %q does not hide the password (%v)", s, d.Redacted(), err)
			}
		}
	})
}
