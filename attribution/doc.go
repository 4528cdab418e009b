// Package attribution is gpuledger's pure arithmetic: it turns one
// Observation per collection cycle into the two exact partitions of every
// physical GPU's time (allocation and usage), sums them into ledger rows
// over aligned intervals, and runs the idle-allocation and noisy-neighbour
// detectors.
//
// It imports the standard library and package gpu (the MIG profile
// catalogue, itself standard library only) and does no I/O: no clocks, no
// logging, no device access. Everything it knows arrives in an Observation
// (observation.go) and everything it says leaves in a CycleResult (row.go),
// so the same code runs in the DaemonSet, in the simulator and in tests.
//
// The rules it implements are in docs/ledger-format.md; where those are
// silent the choices are in docs/ARCHITECTURE.md ("Attribution, per cycle and per GPU"
// and "Detectors") and in the comments of this package.
package attribution
