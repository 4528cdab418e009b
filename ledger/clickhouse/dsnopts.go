package clickhouse

import (
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// knownOptions are the DSN query options this store reads. Anything else is
// an error, so a typo (secrue=true) cannot silently turn TLS off.
var knownOptions = map[string]string{
	"secure":       "true|false: TLS (port 9440 by default)",
	"skip_verify":  "true|false: accept any server certificate (testing only)",
	"dial_timeout": "duration, e.g. 5s",
	"compress":     "lz4|none: block compression (default lz4)",
}

type connOptions struct {
	addr        string
	tls         *tls.Config
	dialTimeout time.Duration
	compress    bool
}

func parseConnOptions(dsn ledger.DSN, opts Options) (connOptions, error) {
	co := connOptions{
		addr:        net.JoinHostPort(dsn.Host, strconv.Itoa(dsn.Port)),
		dialTimeout: opts.DialTimeout,
		compress:    true,
	}
	for k := range dsn.Options {
		if _, ok := knownOptions[k]; !ok {
			return co, fmt.Errorf("unknown option %q (known: %s)", k, strings.Join(sortedKeys(knownOptions), ", "))
		}
	}
	skipVerify := false
	if v, ok := dsn.Options["skip_verify"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return co, fmt.Errorf("option skip_verify=%q: want true or false", v)
		}
		skipVerify = b
	}
	if v, ok := dsn.Options["dial_timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return co, fmt.Errorf("option dial_timeout=%q: want a positive duration such as 5s", v)
		}
		co.dialTimeout = d
	}
	if v, ok := dsn.Options["compress"]; ok {
		switch strings.ToLower(v) {
		case "lz4":
		case "none":
			co.compress = false
		default:
			return co, fmt.Errorf("option compress=%q: want lz4 or none", v)
		}
	}
	switch {
	case opts.TLS != nil:
		co.tls = opts.TLS.Clone()
	case dsn.Secure:
		co.tls = &tls.Config{ServerName: dsn.Host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: skipVerify} //nolint:gosec // opt-in via skip_verify
	}
	return co, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
