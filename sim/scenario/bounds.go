package scenario

import (
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// Bounds on what a scenario may ask for. A scenario is outside input: an
// interval of a nanosecond, a start in the year 9999 or a name of a
// hundred megabytes must be a clear error naming the field, never a
// simulation that runs out of memory, hangs or writes wrong dates.
const (
	// MaxFileBytes is the largest scenario file Load and Parse read: a
	// day of the dense 400-pod node with inline busy lists is about 4 MiB,
	// and decoding takes some forty times the file's size in memory.
	// Longer traces belong in busyTrace files (MaxTraceBytes each).
	MaxFileBytes = 16 << 20
	// MaxTraceBytes is the largest busy or memory trace file.
	MaxTraceBytes = 64 << 20

	// MaxDuration is a leap year: the longest chargeback period.
	MaxDuration = 366 * 24 * time.Hour
	// MinPollInterval is DCGM's shortest field-watch interval (100 ms);
	// NVML's process samples come at the driver's period, slower still.
	MinPollInterval = 100 * time.Millisecond
	MaxPollInterval = time.Hour
	// The ledger interval is at least the poll interval (collect's rule,
	// --poll-interval <= --ledger-interval) and at least a second: row
	// times are written to the second in ledger.csv.
	MinLedgerInterval = time.Second
	MaxLedgerInterval = 24 * time.Hour
	// The driver's sampling period: NVML drivers sample every 1/6 s to
	// 1 s; the simulator allows ten times either way and the demo's
	// minute.
	MinDriverSamplePeriod = 10 * time.Millisecond
	MaxDriverSamplePeriod = time.Hour
	// Detector windows.
	MinWindow = time.Second
	MaxWindow = MaxDuration

	// Counts. A node has at most a few dozen GPUs; kubelet's default
	// limit is 110 pods a node, and the dense scale scenario has 400 pods
	// and 1,000 processes.
	MaxGPUs              = 64
	MaxPods              = 10_000
	MaxContainersPerPod  = 64
	MaxProcesses         = 100_000
	MaxAnnotationChanges = 1_000 // per pod

	// Kubernetes's lengths: object names are DNS subdomains (pods,
	// nodes), namespaces and container names DNS labels; a label value
	// has at most 63 characters and its key a 253-character prefix, a
	// slash and a 63-character name; a pod's annotations together at most
	// 256 KiB.
	MaxNameLen          = 253
	MaxLabelLen         = 63
	MaxLabelKeyLen      = MaxNameLen + 1 + MaxLabelLen
	MaxAnnotationsBytes = 256 << 10
)

// The start must be a time the ledger can write: Unix nanoseconds of the
// start and the end fit int64 (which ends in 2262), and nothing before
// 1970, where Unix times turn negative.
var (
	MinStart = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxStart = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// text checks a string field's length and returns it, cut (with the
// problem recorded) when too long, so that later messages quoting it
// stay short.
func (c *converter) text(path, v string, maxLen int, what string) string {
	if len(v) <= maxLen {
		return v
	}
	c.p.addf(path, "%q is %d bytes long, more than the %d of %s", shortText(v), len(v), maxLen, what)
	return v[:maxLen]
}

// labels checks a label map's keys and values; path names the map.
func (c *converter) labels(path string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		c.text(path, k, MaxLabelKeyLen, "a label key")
		c.text(field(path, k[:min(len(k), MaxLabelKeyLen)]), m[k], MaxLabelLen, "a label value")
	}
}

// annotations checks the total size of an annotation map.
func (c *converter) annotations(path string, m map[string]string) {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	if n > MaxAnnotationsBytes {
		c.p.addf(path, "%d bytes of keys and values, more than Kubernetes's %d", n, MaxAnnotationsBytes)
	}
}

// bounded parses an optional duration that must lie in [lo, hi] when
// given (def when absent).
func (c *converter) bounded(path string, v Value, def, lo, hi time.Duration) time.Duration {
	d, ok := durationField(&c.p, path, v, def)
	switch {
	case !ok:
	case d <= 0:
		c.p.addf(path, "%s must be greater than zero", d)
	case d < lo || d > hi:
		c.p.addf(path, "%s is outside [%s,%s]", d, lo, hi)
	}
	return d
}

// count refuses a list longer than maxN.
func (c *converter) count(path string, n, maxN int, what string) bool {
	if n > maxN {
		c.p.addf(path, "%d %s, more than %d", n, what, maxN)
		return false
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// maxQuoted is the longest string a message quotes whole.
const maxQuoted = 64

func cutText(s string) string {
	cut := min(len(s), 32)
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// sizes refuses lists longer than their bounds before any of them is
// converted; false when one is.
func (c *converter) sizes(r *File) bool {
	ok := c.count("gpus", len(r.GPUs), MaxGPUs, "GPUs")
	ok = c.count("pods", len(r.Pods), MaxPods, "pods") && ok
	procs := len(r.HostProcesses)
	for i, pod := range r.Pods {
		path := index("pods", i)
		ok = c.count(field(path, "containers"), len(pod.Containers), MaxContainersPerPod, "containers") && ok
		ok = c.count(field(path, "initContainers"), len(pod.InitContainers), MaxContainersPerPod, "init containers") && ok
		ok = c.count(field(path, "annotationChanges"), len(pod.AnnotationChanges), MaxAnnotationChanges, "annotation changes") && ok
		for _, ct := range pod.InitContainers {
			procs += len(ct.Processes)
		}
		for _, ct := range pod.Containers {
			procs += len(ct.Processes)
		}
	}
	return c.count("processes", procs, MaxProcesses, "processes in pods and hostProcesses together") && ok
}

// shortText is s, or its first 32 bytes and "..." when longer than
// maxQuoted.
func shortText(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return cutText(s) + "..."
}
