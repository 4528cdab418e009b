package scorecard

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// Flag is one flags.csv row by column name.
type Flag map[string]string

// ReadFlags reads a flags.csv file.
func ReadFlags(path string) ([]Flag, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open flags: %w", err)
	}
	defer f.Close()
	return ParseFlags(f)
}

// ParseFlags reads flags.csv text: a header and any number of rows.
func ParseFlags(r io.Reader) ([]Flag, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read flags.csv header: %w", err)
	}
	var flags []Flag
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return flags, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read flags.csv: %w", err)
		}
		f := make(Flag, len(header))
		for i, h := range header {
			f[h] = rec[i]
		}
		flags = append(flags, f)
	}
}

// matches reports whether f has every column of want with the same text;
// a column f lacks matches nothing.
func (f Flag) matches(want map[string]string) bool {
	for k, v := range want {
		if got, ok := f[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// checkFlags: every expected partial row matches some flag, no forbidden
// one matches any.
func checkFlags(t *Truth, flags []Flag) []string {
	var errs []string
	for _, want := range t.ExpectFlags {
		if !anyMatch(flags, want) {
			errs = append(errs, "missing flag "+formatFlag(want))
		}
	}
	for _, want := range t.ForbidFlags {
		var hits []Flag
		for _, f := range flags {
			if f.matches(want) {
				hits = append(hits, f)
			}
		}
		if len(hits) > 0 {
			errs = append(errs, fmt.Sprintf("unexpected flag %s: %d rows, e.g. pod %q", formatFlag(want), len(hits), hits[0]["pod"]))
		}
	}
	return errs
}

func anyMatch(flags []Flag, want map[string]string) bool {
	for _, f := range flags {
		if f.matches(want) {
			return true
		}
	}
	return false
}

// formatFlag writes a partial row in key order, {kind=x pod=y}.
func formatFlag(want map[string]string) string {
	keys := slices.Sorted(maps.Keys(want))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + want[k]
	}
	return "{" + strings.Join(parts, " ") + "}"
}
