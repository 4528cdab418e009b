// Package chcheck runs the ClickHouse dashboards' SQL the way Grafana and
// the ClickHouse data source plugin would: it interpolates the template
// variables as Grafana does (the :percentencode format and the custom All
// value) and expands the plugin's macros as its backend does, so tests and
// benchmarks can run every panel's query on a real server.
package chcheck

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Value is a variable's selection: All, or a list of values (as Grafana
// holds them: for these dashboards the labels' hex).
type Value struct {
	All    bool
	Values []string
}

// AllValue is the dashboards' custom All value. Grafana inserts a custom
// All value unformatted, except (recent versions) under the text and
// percentencode formats, where it is formatted: "__all" reads the same
// both ways, which Interpolate relies on.
const AllValue = "__all"

// Range is the dashboard's time range.
type Range struct{ From, To time.Time }

var (
	varRef   = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::([A-Za-z0-9_]+))?\}`)
	bareVar  = regexp.MustCompile(`\$([A-Za-z][A-Za-z0-9_]*)`)
	macroArg = regexp.MustCompile(`\$__(timeFilter|timeFilter_ms|dateFilter|timeInterval|timeInterval_ms)\(([^()]*)\)`)
)

// Interpolate replaces ${name:format} references with the variables'
// values. Only the percentencode format is supported, the one the
// dashboards use; any other reference is an error so that a query that
// would be formatted differently fails here instead of in Grafana.
func Interpolate(sql string, vars map[string]Value) (string, error) {
	var errs []string
	out := varRef.ReplaceAllStringFunc(sql, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name, format := sub[1], sub[2]
		v, ok := vars[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("variable %s has no value", name))
			return m
		}
		if v.All {
			return AllValue // == PercentEncode([]string{AllValue})
		}
		if format != "percentencode" {
			errs = append(errs, fmt.Sprintf("variable %s: format %q (only percentencode is safe in ClickHouse strings)", name, format))
			return m
		}
		return PercentEncode(v.Values)
	})
	// A bare $name would be formatted by the data source's default (not
	// escaping backslashes): refuse it. Macros start with $__.
	for _, m := range bareVar.FindAllStringSubmatch(out, -1) {
		if !strings.HasPrefix(m[1], "_") {
			errs = append(errs, fmt.Sprintf("bare variable reference $%s", m[1]))
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("cannot interpolate: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// PercentEncode is Grafana's percentencode format: one value is encoded,
// several are joined as {a,b} and that is encoded, with JavaScript's
// encodeURIComponent plus !'()* (encodeURIComponentStrict): every byte of
// the UTF-8 text except A-Z a-z 0-9 - _ . ~ becomes %XX.
func PercentEncode(values []string) string {
	s := ""
	if len(values) == 1 {
		s = values[0]
	} else {
		s = "{" + strings.Join(values, ",") + "}"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// ExpandMacros expands the plugin's macros as its backend does
// (pkg/macros): times are toDateTime(<unix seconds>), $__timeFilter is
// inclusive at both ends, $__timeInterval rounds to the query's interval
// in seconds (at least 1). Unknown $__ macros are errors.
func ExpandMacros(sql string, r Range, interval time.Duration) (string, error) {
	from, to := fmt.Sprintf("toDateTime(%d)", r.From.Unix()), fmt.Sprintf("toDateTime(%d)", r.To.Unix())
	var errs []string
	out := macroArg.ReplaceAllStringFunc(sql, func(m string) string {
		sub := macroArg.FindStringSubmatch(m)
		col := strings.TrimSpace(sub[2])
		switch sub[1] {
		case "timeFilter":
			if col == "" || strings.Contains(col, ",") {
				errs = append(errs, fmt.Sprintf("%s: want one argument", m))
				return m
			}
			return fmt.Sprintf("%s >= %s AND %s <= %s", col, from, col, to)
		case "timeInterval":
			secs := max(int64(interval/time.Second), 1)
			return fmt.Sprintf("toStartOfInterval(toDateTime(%s), INTERVAL %d second)", col, secs)
		}
		errs = append(errs, fmt.Sprintf("%s: macro not supported here", m))
		return m
	})
	out = strings.ReplaceAll(out, "$__fromTime", from)
	out = strings.ReplaceAll(out, "$__toTime", to)
	if i := strings.Index(out, "$__"); i >= 0 {
		errs = append(errs, fmt.Sprintf("unexpanded macro at %q", out[i:min(len(out), i+30)]))
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("cannot expand macros: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// Expand interpolates the variables, then expands the macros: Grafana's
// frontend interpolates before the plugin's backend sees the query.
func Expand(sql string, r Range, vars map[string]Value) (string, error) {
	s, err := Interpolate(sql, vars)
	if err != nil {
		return "", err
	}
	return ExpandMacros(s, r, time.Minute)
}
