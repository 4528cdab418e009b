// Package scorecard scores what `gpuledger simulate` wrote (ledger.csv and
// flags.csv) against a scenario's ground truth (truth.json).
//
// It is the project's own scorer: the same checks, tolerances and figure as
// the contract's reference checker, so `make contract` needs nothing beside
// the repository. It is pure: it reads files and returns the problems it
// found as plain sentences; it never runs anything (cmd/scorecard does).
//
// It deliberately shares no code with the pipeline it scores: the ledger is
// read with encoding/csv and the truth with encoding/json, so a bug in the
// product's own CSV or truth code cannot hide itself.
package scorecard
