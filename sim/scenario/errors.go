package scenario

import (
	"errors"
	"fmt"
)

// maxReported caps how many problems one error lists: a scenario generated
// with a systematic mistake would otherwise produce thousands of lines.
const maxReported = 20

// FieldError is one problem with a scenario, located by its field path
// (e.g. pods[3].containers[0].processes[1].busy[2].fraction).
type FieldError struct {
	Path    string
	Problem string // names the offending value
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

// problems collects FieldErrors so that one run reports every mistake in a
// file rather than one per attempt.
type problems struct {
	errs []error
}

func (p *problems) addf(path, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
}

func (p *problems) add(err error) {
	p.errs = append(p.errs, err)
}

func (p *problems) empty() bool { return len(p.errs) == 0 }

// err joins what was collected, or returns nil.
func (p *problems) err() error {
	switch n := len(p.errs); {
	case n == 0:
		return nil
	case n <= maxReported:
		return errors.Join(p.errs...)
	default:
		shown := append([]error{}, p.errs[:maxReported]...)
		shown = append(shown, fmt.Errorf("... and %d more problems", n-maxReported))
		return errors.Join(shown...)
	}
}

// Path helpers keep the path syntax in one place.

func field(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func index(parent string, i int) string {
	return fmt.Sprintf("%s[%d]", parent, i)
}
