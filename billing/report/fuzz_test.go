package report

import (
	"testing"
	"time"
)

// FuzzPeriod: --period, --from and --to text never panics, and what is
// accepted is a proper range in the zone.
func FuzzPeriod(f *testing.F) {
	for _, s := range []string{"2026-03", "2026-13", "0000-01", "9999-12", "2026-03-08", "2026-03-08T12:00:00Z", "2026-03-08T12:00:00+05:30", " 2026-11 ", ""} {
		f.Add(s)
	}
	la, _ := time.LoadLocation("America/Los_Angeles")
	f.Fuzz(func(t *testing.T, s string) {
		if from, to, err := Month(s, la); err == nil {
			if !from.Before(to) || to.Sub(from) < 27*24*time.Hour || to.Sub(from) > 32*24*time.Hour {
				t.Fatalf("Month(%q) = [%s, %s)", s, from, to)
			}
			if from.In(la).Day() != 1 || from.Add(-time.Nanosecond).In(la).Day() == 1 {
				t.Fatalf("Month(%q) starts at %s", s, from.In(la))
			}
		}
		if b, err := ParseBound(s, la); err == nil && b.Location() != la {
			t.Fatalf("ParseBound(%q) in %s", s, b.Location())
		}
	})
}
