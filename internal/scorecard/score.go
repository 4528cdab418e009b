package scorecard

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Tolerances of the reference checker.
const (
	tolUsedMPS     = 0.03 // relative, MPS: overlapping clients are split per sample period
	tolUsedDefault = 0.01 // relative, every other mode
	absUsed        = 0.5  // GPU-seconds: below this a used error is never a failure
)

// Result is the verdict on one scenario's output.
type Result struct {
	Errors []string
	// WorstUsedErr is the largest relative error of a measured container's
	// used GPU-seconds that is above the absolute floor (0.01 = 1%).
	WorstUsedErr float64
}

// OK reports whether the output passed every check.
func (r Result) OK() bool { return len(r.Errors) == 0 }

// Check scores outDir/ledger.csv and outDir/flags.csv against t. Files that
// are missing or unreadable are errors of the result, as is every failed
// check.
func Check(t *Truth, outDir string) Result {
	rows, err := ReadLedger(filepath.Join(outDir, "ledger.csv"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Errors: []string{"no ledger.csv"}}
	case err != nil:
		return Result{Errors: []string{err.Error()}}
	}
	var res Result
	flags, err := ReadFlags(filepath.Join(outDir, "flags.csv"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Errors = append(res.Errors, "no flags.csv")
	case err != nil:
		res.Errors = append(res.Errors, err.Error())
	}
	s := Score(t, rows, flags)
	s.Errors = append(res.Errors, s.Errors...)
	return s
}

// Score runs every check on parsed output, in the reference checker's
// order: partitions, coverage, containers, instance groups, residuals,
// findings.
func Score(t *Truth, rows []Row, flags []Flag) Result {
	var res Result
	covered, errs := checkPartitions(rows)
	res.Errors = append(res.Errors, errs...)
	res.Errors = append(res.Errors, checkCoverage(t, covered)...)
	totals := containerTotals(rows)
	errs, res.WorstUsedErr = checkContainers(t, totals)
	res.Errors = append(res.Errors, errs...)
	res.Errors = append(res.Errors, checkGroups(t, totals)...)
	res.Errors = append(res.Errors, checkResiduals(t, rows)...)
	res.Errors = append(res.Errors, checkFlags(t, flags)...)
	return res
}

// short is a GPU UUID cut to 12 characters for messages.
func short(uuid string) string {
	if len(uuid) > 12 {
		return uuid[:12]
	}
	return uuid
}

func percent(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
