package exposition

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/tenancy"
)

// The hand-built sequence behind the golden file and most tests: three
// 10 s cycles on a node with an exclusive GPU, a time-sliced GPU (4
// replicas) and a MIG GPU with one 3g.40gb instance.
const (
	node   = "node-a"
	gpuA   = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
	gpuB   = "GPU-bbbbbbbb-0000-0000-0000-000000000000"
	gpuC   = "GPU-cccccccc-0000-0000-0000-000000000000"
	migC   = "MIG-dddddddd-0000-0000-0000-000000000000"
	modelA = "A100-SXM4-80GB"
	modelB = "T4"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func window(i int) (time.Time, time.Time) {
	return t0.Add(time.Duration(i) * 10 * time.Second), t0.Add(time.Duration(i+1) * 10 * time.Second)
}

func trainer(used float64) attribution.ContainerCycle {
	return attribution.ContainerCycle{
		SliceID: gpuA, SharingMode: string(tenancy.Exclusive),
		Namespace: "team-a", Pod: "train-0", PodUID: "uid-train-0", Container: "trainer", Team: "alpha",
		Method: attribution.MethodMeasured, Share: 1, Allocated: 10, Used: used,
		MemoryMiB: 1024, Energy: 150 * used, Running: true,
	}
}

func infer(pod, slice string, used, memMiB float64) attribution.ContainerCycle {
	return attribution.ContainerCycle{
		SliceID: slice, SharingMode: string(tenancy.Timeslicing),
		Namespace: "ml", Pod: pod, PodUID: "uid-" + pod, Container: "server", Team: "ml-team",
		Method: attribution.MethodMeasured, Share: 0.25, Allocated: 2.5, Used: used,
		MemoryMiB: memMiB, Energy: 50 * used, Running: true,
	}
}

func notebook(method string, used float64) attribution.ContainerCycle {
	return attribution.ContainerCycle{
		SliceID: migC, SharingMode: string(tenancy.MIG),
		Namespace: "research", Pod: "nb-0", PodUID: "uid-nb-0", Container: "jupyter", Team: "research",
		Method: method, Share: 3.0 / 7, Allocated: 4.25, Used: used,
		MemoryMiB: 2048, Energy: 20 * used, Running: true,
	}
}

// fixtureCycles returns the three cycles. Per cycle and GPU the seconds add
// up: allocated + unallocated = used + unattributed + idle = 10.
func fixtureCycles() []attribution.CycleResult {
	var out []attribution.CycleResult
	// Cycle 1: everyone present, nothing flagged.
	s, e := window(0)
	out = append(out, attribution.CycleResult{Start: s, End: e, GPUs: []attribution.GPUCycle{
		{UUID: gpuA, Model: modelA, Capacity: 10, Unattributed: 0.5, Idle: 2.5,
			Containers: []attribution.ContainerCycle{trainer(7)}},
		{UUID: gpuB, Model: modelB, Capacity: 10, Unallocated: 5, Idle: 5,
			Containers: []attribution.ContainerCycle{infer("infer-1", gpuB+"::0", 4, 512), infer("infer-2", gpuB+"::1", 1, 256)}},
		{UUID: gpuC, Model: modelA, Capacity: 10, Unallocated: 5.75, Idle: 9,
			Containers: []attribution.ContainerCycle{notebook(attribution.MethodEstimated, 1)}},
	}})
	// Cycle 2: infer-1 is noisy and starves infer-2; the notebook idles.
	s, e = window(1)
	out = append(out, attribution.CycleResult{Start: s, End: e, GPUs: []attribution.GPUCycle{
		{UUID: gpuA, Model: modelA, Capacity: 10, Unattributed: 0.5, Idle: 1.5,
			Containers: []attribution.ContainerCycle{trainer(8)}},
		{UUID: gpuB, Model: modelB, Capacity: 10, Unallocated: 5, Unattributed: 0.25, Idle: 3.25,
			Containers: []attribution.ContainerCycle{infer("infer-1", gpuB+"::0", 6, 768), infer("infer-2", gpuB+"::1", 0.5, 256)}},
		{UUID: gpuC, Model: modelA, Capacity: 10, Unallocated: 5.75, Idle: 9.75,
			Containers: []attribution.ContainerCycle{notebook(attribution.MethodEstimated, 0.25)}},
	}, Active: []attribution.Finding{
		{Kind: attribution.FindingNoisyNeighbour, Node: node, GPUUUID: gpuB, Namespace: "ml", Pod: "infer-1", Container: "server", Team: "ml-team"},
		{Kind: attribution.FindingStarved, Node: node, GPUUUID: gpuB, Namespace: "ml", Pod: "infer-2", Container: "server", Team: "ml-team", NoisyPod: "ml/infer-1"},
		{Kind: attribution.FindingIdleAllocation, Node: node, GPUUUID: gpuC, Namespace: "research", Pod: "nb-0", Container: "jupyter", Team: "research"},
	}})
	// Cycle 3: infer-2 is gone and infer-3 took another replica; infer-1
	// now starves infer-3. The notebook's method flips to measured.
	s, e = window(2)
	out = append(out, attribution.CycleResult{Start: s, End: e, GPUs: []attribution.GPUCycle{
		{UUID: gpuA, Model: modelA, Capacity: 10, Unattributed: 0.5, Idle: 0.5,
			Containers: []attribution.ContainerCycle{trainer(9)}},
		{UUID: gpuB, Model: modelB, Capacity: 10, Unallocated: 5, Idle: 3.5,
			Containers: []attribution.ContainerCycle{infer("infer-1", gpuB+"::0", 6, 768), infer("infer-3", gpuB+"::2", 0.5, 128)}},
		{UUID: gpuC, Model: modelA, Capacity: 10, Unallocated: 5.75, Idle: 9.5,
			Containers: []attribution.ContainerCycle{notebook(attribution.MethodMeasured, 0.5)}},
	}, Active: []attribution.Finding{
		{Kind: attribution.FindingNoisyNeighbour, Node: node, GPUUUID: gpuB, Namespace: "ml", Pod: "infer-1", Container: "server", Team: "ml-team"},
		{Kind: attribution.FindingStarved, Node: node, GPUUUID: gpuB, Namespace: "ml", Pod: "infer-3", Container: "server", Team: "ml-team", NoisyPod: "ml/infer-1"},
		{Kind: attribution.FindingIdleAllocation, Node: node, GPUUUID: gpuC, Namespace: "research", Pod: "nb-0", Container: "jupyter", Team: "research"},
	}})
	return out
}

func fixtureGPUs() []attribution.GPU {
	return []attribution.GPU{
		{Index: 0, UUID: gpuA, Model: modelA, MemoryMiB: 81920},
		{Index: 1, UUID: gpuB, Model: modelB, MemoryMiB: 15360},
		{Index: 2, UUID: gpuC, Model: modelA, MemoryMiB: 81920, MIGEnabled: true,
			MIG: []attribution.MIGInstance{{UUID: migC, Profile: "3g.40gb", Slices: 3, GPUInstanceID: 2}}},
	}
}

func fixturePods() []attribution.PodMeta {
	return []attribution.PodMeta{
		{UID: "uid-train-0", Namespace: "team-a", Name: "train-0", Labels: map[string]string{"app.kubernetes.io/name": "trainer", "team": "beta"}},
		{UID: "uid-infer-1", Namespace: "ml", Name: "infer-1", Labels: map[string]string{"app.kubernetes.io/name": "infer", "tier": "gold"}},
		{UID: "uid-infer-2", Namespace: "ml", Name: "infer-2", Labels: map[string]string{"app.kubernetes.io/name": "infer"}},
		{UID: "uid-infer-3", Namespace: "ml", Name: "infer-3", Labels: map[string]string{"app.kubernetes.io/name": "infer"}},
		{UID: "uid-nb-0", Namespace: "research", Name: "nb-0"},
	}
}

// fixtureMeta is the CycleMeta of cycle i (1-based).
func fixtureMeta(i int) CycleMeta {
	return CycleMeta{
		GPUs:              fixtureGPUs(),
		Pods:              fixturePods(),
		CycleDuration:     time.Duration(i) * 25 * time.Millisecond,
		SourceUp:          map[string]bool{"nvml": true, "dcgm": i != 2, "podresources": true, "kubemeta": true, "procfs": true},
		SourceErrors:      map[string]uint64{"dcgm": uint64(i / 2)},
		Anomalies:         map[string]uint64{"bad_device_id": 3},
		LedgerRowsWritten: uint64(7 * i),
		OutboxPending:     uint64(i),
		OutboxOldestAge:   time.Duration(i) * 1500 * time.Millisecond,
	}
}

// runFixture feeds the first n fixture cycles to a new Exporter.
func runFixture(t testing.TB, n int, opts Options) *Exporter {
	t.Helper()
	e := New(node, opts)
	for i, res := range fixtureCycles()[:n] {
		e.Update(res, fixtureMeta(i+1))
	}
	return e
}

// gather collects e through a pedantic registry holding only e, which also
// checks every metric against the descriptors and rejects duplicates.
func gather(t testing.TB, e *Exporter) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatalf("cannot register exporter: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("cannot gather: %v", err)
	}
	return mfs
}

// series finds the series of family name whose labels include want.
func series(mfs []*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, want) {
				out = append(out, m)
			}
		}
	}
	return out
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := labelMap(m)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return math.NaN()
}

// mustValue returns the value of the one series matching name and labels.
func mustValue(t testing.TB, mfs []*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	got := series(mfs, name, labels)
	if len(got) != 1 {
		t.Fatalf("%s%v: want exactly 1 series, got %d", name, labels, len(got))
	}
	return metricValue(got[0])
}

func assertAbsent(t testing.TB, mfs []*dto.MetricFamily, name string, labels map[string]string) {
	t.Helper()
	if got := series(mfs, name, labels); len(got) != 0 {
		t.Errorf("%s%v: want no series, got %d: %v", name, labels, len(got), fmt.Sprint(got))
	}
}

func assertClose(t testing.TB, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func mustSeries(t testing.TB, mfs []*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	got := series(mfs, name, labels)
	if len(got) != 1 {
		t.Fatalf("%s%v: want exactly 1 series, got %d", name, labels, len(got))
	}
	return got[0]
}

// assertLabels checks got has exactly the labels of want (goversion aside).
func assertLabels(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: label %s = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && k != "goversion" {
			t.Errorf("%s: unexpected label %s=%q", what, k, got[k])
		}
	}
}

func labelString(l map[string]string) string { return fmt.Sprint(l) }
