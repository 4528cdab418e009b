// Package exposition serves the collector's Prometheus /metrics.
//
// The collector calls Update once per cycle. Update folds the cycle's
// seconds into running totals, builds an immutable snapshot (per family, its
// series as a cached label set and a value) and swaps it in atomically. A
// scrape only reads the latest snapshot, so it does no collection work,
// costs the same whatever the sources are doing, and any number of scrapes
// may run while an Update is under way.
//
// A series' label set is validated, sorted and rendered as
// `{name="value",...}` text once, when the series first appears, and kept
// while it lives. Handler writes the text formats (Prometheus text 0.0.4
// and OpenMetrics 1.0, which Prometheus asks for by default) straight from
// the snapshot: per series the family name, the cached label text and the
// value, so a scrape's cost is little more than writing its bytes. Series
// are kept in client_golang's order (only the series new in a cycle are
// sorted and merged in), so the output is byte for byte what promhttp would
// write. The protobuf formats go through client_golang: the Exporter is
// also a prometheus.Collector over the same snapshot, which is how Registry
// serves it.
//
// Counters are cumulative since the collector started. A series whose label
// set is absent from the latest cycle (a pod that went away, a GPU that fell
// off the bus) is dropped from the next snapshot and its total is forgotten.
// If the same label set comes back, its counter starts again from that
// cycle's value: to Prometheus that is a new series (or a counter reset when
// it returns before the old one went stale), which rate() and increase()
// already handle. Counters carry a created timestamp (the start of the window
// in which the series appeared) in the protobuf format, so a Prometheus that
// ingests created timestamps also counts a new series' first increment; the
// text formats leave it out, as promhttp does by default.
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
