package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// report over a range the ledger cannot hold says which bound is wrong and
// why, instead of a bucket error about a range that was given in full.
func TestReportRangeOutsideTheLedgerYearsNamesTheBound(t *testing.T) {
	prices := pricesFile(t, "allocation")
	db := filepath.Join(t.TempDir(), "none.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "0001-01-01", "--to", "9999-12-31"}, "report --from: time 0001-01-01T00:00:00Z is outside the years a ledger can hold (1678 to 2261)"},
		{[]string{"--from", "2026-01-01", "--to", "9999-12-31"}, "report --to: time 9999-12-31T00:00:00Z is outside"},
		{[]string{"--period", "9999-12"}, `period "9999-12"`},
	} {
		code, _, stderr := runCLI(append([]string{"report", "--prices", prices, "--ledger", db}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "need both ends") {
			t.Errorf("report %v: exit %d, stderr %q; want an error saying %q", c.args, code, stderr, c.want)
		}
	}
}
