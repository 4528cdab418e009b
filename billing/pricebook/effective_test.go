package pricebook

import (
	"strings"
	"testing"
	"time"
)

func TestEffectiveFrom(t *testing.T) {
	const base = "currency: USD\ntimezone: Europe/Berlin\npolicy: allocation\ndefaultRate: 1\n"
	b, err := Parse("p.yaml", []byte(base+"effectiveFrom: 2026-12-01\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The day's start in the book's zone: 23:00 UTC the day before.
	if want := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC); !b.EffectiveFrom.Equal(want) {
		t.Errorf("effectiveFrom %s, want %s", b.EffectiveFrom, want)
	}
	if b.SHA256 == "" || string(b.Raw) != base+"effectiveFrom: 2026-12-01\n" {
		t.Errorf("the book's bytes and digest are not kept: %q %q", b.SHA256, b.Raw)
	}
	for value, want := range map[string]string{
		"tomorrow":                  `p.yaml:5: effectiveFrom: "tomorrow" is not an instant`,
		"2026-12-01T10:30:00Z":      `p.yaml:5: effectiveFrom: "2026-12-01T10:30:00Z" is not on a whole hour`,
		"1999-12-31T00:00:00Z":      `effectiveFrom: "1999-12-31T00:00:00Z": want an instant from 2000-01-01`,
		"2026-12-01T10:00:00+05:30": `is not on a whole hour`,
		"[2026-12-01]":              `effectiveFrom: want a single value`,
	} {
		_, err := Parse("p.yaml", []byte(base+"effectiveFrom: "+value+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("effectiveFrom %s: %v, want %q", value, err, want)
		}
	}
}
