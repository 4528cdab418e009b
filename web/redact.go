package web

import (
	"net/url"
	"regexp"
)

// urlPattern finds URLs in a message: a scheme, "://", and what follows
// up to a space or quote.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// RedactURLs strips every URL in s of its credentials: the userinfo
// (user and password) and the query string (tokens ride in both) and the
// fragment. serve passes every error it logs or shows through it, so a
// --prometheus or ledger URL given with credentials is never echoed.
func RedactURLs(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" && u.Opaque != "" {
			return u2scheme(raw) + "://[redacted]"
		}
		u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
		return u.String()
	})
}

// u2scheme is the scheme of a URL urlPattern matched.
func u2scheme(raw string) string {
	for i := range len(raw) {
		if raw[i] == ':' {
			return raw[:i]
		}
	}
	return raw
}
