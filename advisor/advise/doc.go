// Package advise turns a period of the ledger into sharing
// recommendations per workload: reclaim idle allocations, right-size to a
// smaller MIG profile or fraction, consolidate one team's workloads under
// MPS (never across teams: across teams only MIG's hardware walls), each
// with the GPUs before and after, the saving at the price book's rate, the
// contention predicted by replaying the observed per-minute usage on the
// proposed layout, and, where pods declare their request service time
// (annotation gpuledger.io/service-time), the latency whatif predicts.
//
// The package is pure: the caller streams ledger rows and findings in
// (Advisor.AddRow, Advisor.AddFinding, in any order), supplies pod
// metadata when it has any, and gets a Plan. The rules and thresholds are in docs/advisor.md.
package advise
