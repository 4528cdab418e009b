package ledger

import (
	"fmt"
	"strings"
	"time"
)

// ParseTime reads a range bound given on a command line: RFC 3339
// (2026-03-01T00:00:00Z, offsets allowed) or a date YYYY-MM-DD, meaning
// midnight UTC. Every command that takes --from/--to uses it.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-03-01T00:00:00Z) or a date (2026-03-01, midnight UTC)", s)
}
