// Package e2e runs gpuledger against a real Prometheus server.
//
// TestPrometheusEndToEnd builds the gpuledger binary, runs three simulated
// nodes (time-slicing with a noisy tenant, MIG with a tenant at 100% of its
// instance, exclusive GPUs with an idle notebook) serving live /metrics on
// a virtual clock paced at 10 simulated seconds per wall second, and starts
// Debian's prometheus on loopback scraping them every second with the alert
// rules loaded. Through Prometheus's HTTP API it then checks that every
// dashboard query returns data, that the usage partition (containers' used
// + idle + unattributed = capacity) holds per GPU in PromQL, that every
// rule evaluates without error, and that the noisy-neighbour alert fires
// for the noisy tenant and for no one else.
//
// The rules are loaded with every `for:` shortened to 1s (5s for the
// collector and ledger health alerts, which must not fire, so that one
// failed scrape on a loaded machine leaves them pending): the scenarios last
// five to eight simulated minutes, under a minute of wall time, and the
// detectors already require their own windows (noisy 1m, idle 5m of
// simulated time) before they flag. The rule tests under alerts/tests check
// the real `for:` durations.
//
// Without prometheus on PATH the test is skipped, unless
// GPULEDGER_REQUIRE_INTEGRATION=1 (CI), where it fails.
package e2e
