// Package collector runs one collection cycle per poll: it reads every
// source once (NVML, DCGM, kubelet pod-resources, Kubernetes metadata,
// procfs), builds an attribution.Observation, hands it to the attribution
// engine and passes the result to the metrics exposition and the ledger
// sinks. A failing source degrades what it feeds and never stops the cycle.
//
// The sources live in sub-packages, one per source. The simulated node
// (package sim, beside this one) implements the same interfaces, so
// `gpuledger simulate` runs this exact code on a virtual clock.
package collector
