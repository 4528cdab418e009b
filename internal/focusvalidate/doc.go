// Package focusvalidate, a test harness, checks a cost and usage file
// against the FinOps Open Cost and Usage Specification (FOCUS) 1.3 or 1.4,
// as CSV: the columns the specification makes mandatory, each column's
// data type and format, allowed values and nullability, and the rules
// between columns that docs/focus.md lists. It is written from the
// specification's column definitions, not from the code that writes
// gpuledger's FOCUS export (billing/report/focus*.go), so that the
// export's tests can fail. Only tests import it, never a program.
//
// CSV has no null: an empty cell is null, as FOCUS exports commonly write it.
package focusvalidate
