// Package sim is the simulated GPU node behind `gpuledger simulate`, the
// tests and the benchmarks. From a validated scenario it serves the same
// interfaces the production sources read on a real node: NVML
// (nvml.Interface), DCGM (dcgmsource.Client), a real kubelet pod-resources
// gRPC server on a unix socket, a procfs-like tree and Kubernetes metadata,
// all driven by a virtual clock that only moves forward.
//
// Activity is integrated exactly: every process's busy fraction is
// piecewise constant, and each consumer (driver sample periods, energy,
// DCGM windows) walks the segments with its own monotone cursor, so the
// cost of a simulated second does not grow with the length of the run.
// The conventions where the scenario contract leaves room are those of
// docs/ARCHITECTURE.md, "Simulator conventions".
package sim
