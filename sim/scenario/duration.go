package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ParseDuration reads a scenario duration: a Go duration ("90s", "10m",
// "166ms") or a plain number of seconds ("1.5", "600"). Negative, infinite
// and out-of-range values are errors.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		return secondsToDuration(secs)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a Go duration (90s, 10m) nor a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// secondsToDuration converts float seconds, rounding to the nanosecond so
// that trace times such as 46.5 land exactly on the duration they name.
func secondsToDuration(secs float64) (time.Duration, error) {
	switch {
	case math.IsNaN(secs) || math.IsInf(secs, 0):
		return 0, fmt.Errorf("%v is not a finite number of seconds", secs)
	case secs < 0:
		return 0, fmt.Errorf("%v is negative", secs)
	case secs*1e9 >= math.MaxInt64:
		return 0, fmt.Errorf("%v seconds is out of range", secs)
	}
	return time.Duration(math.Round(secs * 1e9)), nil
}

// durationField parses an optional duration field, returning def when the
// field is absent. ok is false when the field was given but is invalid (the
// problem is recorded), so callers skip checks that would only repeat it.
func durationField(p *problems, path string, v Value, def time.Duration) (d time.Duration, ok bool) {
	if !v.set() {
		return def, true
	}
	s, ok := scalarText(p, path, v.node)
	if !ok {
		return def, false
	}
	d, err := ParseDuration(s)
	if err != nil {
		p.addf(path, "%v", err)
		return def, false
	}
	return d, true
}

// timeField parses an RFC 3339 time. The field is required; ok is false
// when it is missing or invalid (the problem is recorded).
func timeField(p *problems, path string, v Value) (t time.Time, ok bool) {
	if !v.set() {
		p.addf(path, "is required (an RFC 3339 time such as 2026-11-01T00:00:00Z)")
		return time.Time{}, false
	}
	s, ok := scalarText(p, path, v.node)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		p.addf(path, "%q is not an RFC 3339 time", s)
		return time.Time{}, false
	}
	return t.UTC(), true
}

// intField parses an optional integer field within [lo,hi].
func intField(p *problems, path string, v Value, def, lo, hi int64) (int64, bool) {
	if !v.set() {
		return def, true
	}
	s, ok := scalarText(p, path, v.node)
	if !ok {
		return def, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		p.addf(path, "%q is not an integer", s)
		return def, false
	}
	if n < lo || n > hi {
		p.addf(path, "%d is outside [%d,%d]", n, lo, hi)
		return def, false
	}
	return n, true
}

// scalarText returns the text of a scalar node; unquoted YAML timestamps and
// numbers keep their source text, which is what the parsers above want.
func scalarText(p *problems, path string, n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.addf(path, "expected a scalar, got a %s (line %d)", kindName(n.Kind), n.Line)
		return "", false
	}
	if len(n.Value) > maxQuoted {
		p.addf(path, "%q is %d bytes long: too long for a number, a duration or a time", shortText(n.Value), len(n.Value))
		return "", false
	}
	return n.Value, true
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	default:
		return "scalar"
	}
}
