// Package groundtruth computes, from a scenario alone, what the attribution
// pipeline should report: each container's allocated and used GPU-seconds,
// each GPU's unallocated and unattributed seconds, and the groups of
// containers whose individual usage the tools cannot observe.
//
// It is an independent checker for the end-to-end tests, so it deliberately
// shares no code with the attribution engine or the collector sources: it
// reads the simulator's physics (each GPU's mode, every process's busy
// segments) straight from the parsed scenario and integrates it exactly over
// piecewise-constant segments. Definitions: docs/scenario-format.md,
// "Ground truth", and the allocation shares of docs/ledger-format.md.
package groundtruth
