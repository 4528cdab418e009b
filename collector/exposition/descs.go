package exposition

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "gpuledger"

// Label names of the contract (ledger.md, "Prometheus series the rest of the
// system relies on"). The node label is a const label of every
// descriptor (health series too, so several collectors can share one
// registry, as the demo does), so it is not listed here.
var (
	containerLabels = []string{"gpu", "slice", "sharing_mode", "namespace", "pod", "container", "team"}
	gpuLabels       = []string{"gpu", "model"}
	findingLabels   = []string{"gpu", "namespace", "pod", "container", "team"}
	// memoryLabels add to a finding the device that fills up (the GPU, or
	// the MIG instance), the scope at risk and the severity.
	memoryLabels = concat(findingLabels, []string{"device", "scope", "severity"})
)

// metricType is the type of a family; the Exporter emits only these two.
type metricType int

const (
	gaugeType metricType = iota
	counterType
)

// family is one metric family the Exporter can emit: its descriptor, and
// its HELP and TYPE lines rendered once in each text format so that a
// scrape only copies them.
type family struct {
	desc     *prometheus.Desc
	name     string
	typ      metricType
	rank     int    // position in name order: a snapshot lists families by rank
	textHead string // HELP and TYPE lines in the text format 0.0.4
	omHead   string // the same in OpenMetrics 1.0, where a counter family drops _total
}

func newFamily(name string, typ metricType, help string, labels []string, constLabels prometheus.Labels) *family {
	return &family{
		desc:     prometheus.NewDesc(name, help, labels, constLabels),
		name:     name,
		typ:      typ,
		textHead: textHeader(name, typ, help),
		omHead:   openMetricsHeader(name, typ, help),
	}
}

// textHeader renders the comment lines of a family as expfmt writes them in
// the text format 0.0.4: HELP escapes backslash and newline only.
func textHeader(name string, typ metricType, help string) string {
	t := "gauge"
	if typ == counterType {
		t = "counter"
	}
	return "# HELP " + name + " " + textHelpEscaper.Replace(help) + "\n# TYPE " + name + " " + t + "\n"
}

// openMetricsHeader renders the comment lines of a family in OpenMetrics
// 1.0 as expfmt does: a counter family is named without its _total suffix
// (its samples keep it), a counter without the suffix is typed unknown, and
// HELP escapes double quotes as well.
func openMetricsHeader(name string, typ metricType, help string) string {
	t := "gauge"
	if typ == counterType {
		t = "unknown"
		if base, ok := strings.CutSuffix(name, "_total"); ok {
			name, t = base, "counter"
		}
	}
	return "# HELP " + name + " " + labelValueEscaper.Replace(help) + "\n# TYPE " + name + " " + t + "\n"
}

// descs are the families of every series the Exporter can emit. They are
// fixed when the Exporter is built (the pod label allowlist is part of the
// container label set), so Describe is exact and a registry can check every
// scraped metric against them.
type descs struct {
	allocated, used, ratio, memory, energy         *family
	capacity, idle, unallocated, unattributed      *family
	idleAllocation, noisyNeighbour, starved        *family
	memoryGrowth, memoryGrowthRate, memoryExhaust  *family
	buildInfo, gpuInfo, migInfo                    *family
	cycleDuration, cycles                          *family
	sourceUp, sourceErrors, anomalies, rowsWritten *family
	outboxPending, outboxAge                       *family
	batchesShipped, batchesFailed, writeErrors     *family
	rowsDropped, price                             *family

	byName []*family // every family, sorted by name; family.rank indexes it
}

func newDescs(node string, podLabelNames []string) descs {
	onNode := prometheus.Labels{"node": node}
	cont := concat(containerLabels, podLabelNames)
	used := concat(concat(containerLabels, []string{"method"}), podLabelNames)
	d := func(name string, typ metricType, help string, labels []string, constLabels prometheus.Labels) *family {
		return newFamily(namespace+"_"+name, typ, help, labels, constLabels)
	}
	ds := descs{
		allocated: d("container_gpu_allocated_seconds_total", counterType,
			"GPU-seconds of allocation the container held on this slice since the collector started: its allocation share of one physical GPU times the seconds it held the slice.",
			cont, onNode),
		used: d("container_gpu_used_seconds_total", counterType,
			"GPU-seconds the container's processes kept the GPU busy on this slice since the collector started; method=estimated where busy time was split by allocation share instead of measured per process.",
			used, onNode),
		ratio: d("container_gpu_allocation_ratio", gaugeType,
			"Allocation share of one physical GPU that this slice reserves for the container (1 exclusive, 1/replicas shared, compute slices/7 on MIG).",
			cont, onNode),
		memory: d("container_gpu_memory_bytes", gaugeType,
			"Framebuffer memory used by the container's processes on this device at the end of the last cycle, in bytes.",
			cont, onNode),
		energy: d("container_gpu_energy_joules_total", counterType,
			"GPU energy attributed to the container in proportion to its used seconds since the collector started, in joules.",
			cont, onNode),
		capacity: d("gpu_capacity_seconds_total", counterType,
			"Seconds the GPU was observed since the collector started; container allocated plus unallocated seconds, and container used plus unattributed plus idle seconds, each add up to it.",
			gpuLabels, onNode),
		idle: d("gpu_idle_seconds_total", counterType,
			"Seconds of GPU capacity that were not busy since the collector started.",
			gpuLabels, onNode),
		unallocated: d("gpu_unallocated_seconds_total", counterType,
			"GPU-seconds of capacity that no container held an allocation for since the collector started.",
			gpuLabels, onNode),
		unattributed: d("gpu_unattributed_seconds_total", counterType,
			"Busy GPU-seconds that could not be attributed to a container (host processes, unresolved PIDs, missing per-process data) since the collector started.",
			gpuLabels, onNode),
		idleAllocation: d("idle_allocation", gaugeType,
			"1 while the container is flagged for holding a GPU allocation it leaves mostly idle over the idle window.",
			findingLabels, onNode),
		noisyNeighbour: d("noisy_neighbour", gaugeType,
			"1 while the container is flagged for using at least twice its allocation share of a GPU shared without hardware isolation while another container gets less than its share.",
			findingLabels, onNode),
		starved: d("starved_container", gaugeType,
			"1 while the container gets less than its allocation share of a busy shared GPU because of the noisy neighbour named in noisy_pod.",
			concat(findingLabels, []string{"noisy_pod"}), onNode),
		memoryGrowth: d("memory_growth", gaugeType,
			"1 while the container is flagged because its GPU memory keeps growing on a device it shares without memory isolation (scope gpu: time-slicing or MPS, every tenant at risk; scope mig_instance: only its MIG instance, severity info when it holds the instance alone).",
			memoryLabels, onNode),
		memoryGrowthRate: d("memory_growth_bytes_per_second", gaugeType,
			"While memory_growth is flagged: how fast the container's lowest GPU memory over the memory window grows, in bytes per second.",
			memoryLabels, onNode),
		memoryExhaust: d("memory_exhaustion_seconds", gaugeType,
			"While memory_growth is flagged: seconds until the device (GPU or MIG instance) is full if the growth goes on and nothing else changes; absent when the device's size is unknown.",
			memoryLabels, onNode),
		buildInfo: d("build_info", gaugeType,
			"Version of the gpuledger collector; always 1.",
			[]string{"version", "revision", "goversion"}, onNode),
		gpuInfo: d("gpu_info", gaugeType,
			"GPU on this node with its index, model and MIG mode; always 1.",
			[]string{"gpu", "index", "model", "mig_enabled"}, onNode),
		migInfo: d("mig_instance_info", gaugeType,
			"MIG GPU instance with its profile and number of compute slices; always 1.",
			[]string{"gpu", "mig_instance", "profile", "slices"}, onNode),
		cycleDuration: d("collector_cycle_duration_seconds", gaugeType,
			"Time the last collection cycle took, in seconds.",
			nil, onNode),
		cycles: d("collector_cycles_total", counterType,
			"Collection cycles completed since the collector started.",
			nil, onNode),
		sourceUp: d("source_up", gaugeType,
			"1 if the source (nvml, dcgm, podresources, kubemeta, procfs) was read successfully in the last cycle, 0 if it failed.",
			[]string{"source"}, onNode),
		sourceErrors: d("source_errors_total", counterType,
			"Errors reading the source since the collector started.",
			[]string{"source"}, onNode),
		anomalies: d("attribution_anomalies_total", counterType,
			"Input problems attribution met since the collector started (unknown or malformed device IDs, HAMi mismatches...), by kind.",
			[]string{"kind"}, onNode),
		rowsWritten: d("ledger_rows_written_total", counterType,
			"Ledger rows written to the store since the collector started.",
			nil, onNode),
		outboxPending: d("outbox_rows_pending", gaugeType,
			"Ledger rows waiting in the durable outbox to be shipped.",
			nil, onNode),
		outboxAge: d("outbox_oldest_pending_age_seconds", gaugeType,
			"Age of the oldest row waiting in the outbox, in seconds; 0 when the outbox is empty.",
			nil, onNode),
		batchesShipped: d("outbox_batches_shipped_total", counterType,
			"Outbox batches stored in the cluster ledger (ClickHouse) since the collector started.",
			nil, onNode),
		batchesFailed: d("outbox_batches_failed_total", counterType,
			"Outbox batches the cluster ledger refused or could not be reached for since the collector started; they are retried.",
			nil, onNode),
		writeErrors: d("ledger_write_errors_total", counterType,
			"Failed commits to the node's embedded ledger (disk full, read-only); the rows are held in memory and retried.",
			nil, onNode),
		price: d("price_per_gpu_hour", gaugeType,
			"Price book rate per physical GPU-hour by GPU model (model=\"default\" for models the book does not list), in the book's currency; the chargeback report uses the same rates.",
			[]string{"model", "currency"}, onNode),
		rowsDropped: d("ledger_rows_dropped_total", counterType,
			"Ledger rows lost because the embedded ledger stayed unwritable longer than the in-memory retry buffer could hold.",
			nil, onNode),
	}
	ds.byName = ds.all()
	slices.SortFunc(ds.byName, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	for i, f := range ds.byName {
		f.rank = i
	}
	return ds
}

// all lists every family, for Describe.
func (d *descs) all() []*family {
	return []*family{
		d.allocated, d.used, d.ratio, d.memory, d.energy,
		d.capacity, d.idle, d.unallocated, d.unattributed,
		d.idleAllocation, d.noisyNeighbour, d.starved,
		d.memoryGrowth, d.memoryGrowthRate, d.memoryExhaust,
		d.buildInfo, d.gpuInfo, d.migInfo,
		d.cycleDuration, d.cycles,
		d.sourceUp, d.sourceErrors, d.anomalies, d.rowsWritten,
		d.outboxPending, d.outboxAge,
		d.batchesShipped, d.batchesFailed, d.writeErrors, d.rowsDropped,
		d.price,
	}
}

func concat(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}
