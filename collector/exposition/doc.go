// Package exposition serves the collector's Prometheus /metrics.
//
// The Exporter is a custom prometheus.Collector backed by an immutable
// snapshot of const metrics. The collector calls Update once per cycle; Update
// folds the cycle's seconds into running totals, builds every metric of the
// next snapshot and swaps it in atomically. A scrape only walks the prebuilt
// slice, so it does no collection work, costs the same whatever the sources
// are doing, and any number of scrapes may run while an Update is under way.
//
// Counters are cumulative since the collector started. A series whose label
// set is absent from the latest cycle (a pod that went away, a GPU that fell
// off the bus) is dropped from the next snapshot and its total is forgotten.
// If the same label set comes back, its counter starts again from that
// cycle's value: to Prometheus that is a new series (or a counter reset when
// it returns before the old one went stale), which rate() and increase()
// already handle. Counters carry a created timestamp (the start of the window
// in which the series appeared), so a Prometheus that ingests created
// timestamps also counts a new series' first increment.
//
// The used counter is keyed by method as well. A container keeps one used
// series per method it has shown for as long as the container itself is
// present, so when its method flips between measured and estimated both
// series stay, each monotonic, and their sum is its used seconds.
//
// Pod labels named in Options.PodLabelAllowlist are copied onto the
// container series as label_<sanitised key>; the prefix keeps a pod label
// from replacing a fixed label such as team.
package exposition
