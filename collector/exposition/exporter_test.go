package exposition

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

func containerLabelsOf(gpu, ns, pod, container string) map[string]string {
	return map[string]string{"node": node, "gpu": gpu, "namespace": ns, "pod": pod, "container": container}
}

func TestCountersAccumulateAcrossUpdates(t *testing.T) {
	mfs := gather(t, runFixture(t, 3, Options{}))

	trainer := containerLabelsOf(gpuA, "team-a", "train-0", "trainer")
	trainer["slice"], trainer["sharing_mode"], trainer["team"] = gpuA, "exclusive", "alpha"
	assertClose(t, "trainer allocated", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", trainer), 10+10+10)
	assertClose(t, "trainer energy", mustValue(t, mfs, "gpuledger_container_gpu_energy_joules_total", trainer), 150*7+150*8+150*9)
	assertClose(t, "trainer ratio", mustValue(t, mfs, "gpuledger_container_gpu_allocation_ratio", trainer), 1)
	assertClose(t, "trainer memory", mustValue(t, mfs, "gpuledger_container_gpu_memory_bytes", trainer), 1024*1024*1024)
	trainer["method"] = "measured"
	assertClose(t, "trainer used", mustValue(t, mfs, "gpuledger_container_gpu_used_seconds_total", trainer), 7+8+9)

	infer1 := containerLabelsOf(gpuB, "ml", "infer-1", "server")
	infer1["slice"] = gpuB + "::0"
	assertClose(t, "infer-1 allocated", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", infer1), 2.5*3)
	assertClose(t, "infer-1 used", mustValue(t, mfs, "gpuledger_container_gpu_used_seconds_total", infer1), 4+6+6)
	assertClose(t, "infer-1 ratio", mustValue(t, mfs, "gpuledger_container_gpu_allocation_ratio", infer1), 0.25)
	assertClose(t, "infer-1 memory (last cycle)", mustValue(t, mfs, "gpuledger_container_gpu_memory_bytes", infer1), 768*1048576)

	gpu := func(name, uuid string) float64 {
		return mustValue(t, mfs, name, map[string]string{"node": node, "gpu": uuid})
	}
	for _, c := range []struct {
		uuid                                      string
		capacity, unallocated, unattributed, idle float64
	}{
		{gpuA, 30, 0, 0.5 * 3, 2.5 + 1.5 + 0.5},
		{gpuB, 30, 5 + 5 + 5, 0.25, 5 + 3.25 + 3.5},
		{gpuC, 30, 5.75 * 3, 0, 9 + 9.75 + 9.5},
	} {
		assertClose(t, c.uuid+" capacity", gpu("gpuledger_gpu_capacity_seconds_total", c.uuid), c.capacity)
		assertClose(t, c.uuid+" unallocated", gpu("gpuledger_gpu_unallocated_seconds_total", c.uuid), c.unallocated)
		assertClose(t, c.uuid+" unattributed", gpu("gpuledger_gpu_unattributed_seconds_total", c.uuid), c.unattributed)
		assertClose(t, c.uuid+" idle", gpu("gpuledger_gpu_idle_seconds_total", c.uuid), c.idle)
	}
	if got := mustValue(t, mfs, "gpuledger_collector_cycles_total", nil); got != 3 {
		t.Errorf("cycles_total = %v, want 3", got)
	}
}

// TestPartitionsHoldOverCounters checks the contract's promise that the
// partitions hold over the exported counters: on a GPU whose containers
// all lived since the collector started, container allocated + unallocated
// and container used + unattributed + idle both equal capacity.
func TestPartitionsHoldOverCounters(t *testing.T) {
	mfs := gather(t, runFixture(t, 3, Options{}))
	for _, uuid := range []string{gpuA, gpuC} {
		on := map[string]string{"gpu": uuid}
		capacity := mustValue(t, mfs, "gpuledger_gpu_capacity_seconds_total", on)
		alloc := mustValue(t, mfs, "gpuledger_gpu_unallocated_seconds_total", on)
		used := mustValue(t, mfs, "gpuledger_gpu_unattributed_seconds_total", on) + mustValue(t, mfs, "gpuledger_gpu_idle_seconds_total", on)
		for _, m := range series(mfs, "gpuledger_container_gpu_allocated_seconds_total", on) {
			alloc += metricValue(m)
		}
		for _, m := range series(mfs, "gpuledger_container_gpu_used_seconds_total", on) {
			used += metricValue(m)
		}
		assertClose(t, uuid+" allocation partition", alloc, capacity)
		assertClose(t, uuid+" usage partition", used, capacity)
	}
}

func TestMissingContainerDisappears(t *testing.T) {
	e := runFixture(t, 2, Options{})
	infer2 := containerLabelsOf(gpuB, "ml", "infer-2", "server")
	mfs := gather(t, e)
	assertClose(t, "infer-2 allocated after 2 cycles", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", infer2), 2.5+2.5)

	e.Update(fixtureCycles()[2], fixtureMeta(3))
	mfs = gather(t, e)
	for _, name := range []string{
		"gpuledger_container_gpu_allocated_seconds_total",
		"gpuledger_container_gpu_used_seconds_total",
		"gpuledger_container_gpu_allocation_ratio",
		"gpuledger_container_gpu_memory_bytes",
		"gpuledger_container_gpu_energy_joules_total",
	} {
		assertAbsent(t, mfs, name, infer2)
	}
	if n := len(e.totals.containers); n != 4 {
		t.Errorf("totals keep %d container keys, want 4 (the stale one forgotten)", n)
	}

	// Cycle 4: infer-2 comes back and GPU C is gone. infer-2 restarts at
	// this cycle's value; GPU C's series and its container go away.
	s, end := window(3)
	e.Update(attribution.CycleResult{Start: s, End: end, GPUs: []attribution.GPUCycle{
		{UUID: gpuA, Model: modelA, Capacity: 10, Unattributed: 0.5, Idle: 0.5,
			Containers: []attribution.ContainerCycle{trainer(9)}},
		{UUID: gpuB, Model: modelB, Capacity: 10, Unallocated: 5, Idle: 3,
			Containers: []attribution.ContainerCycle{infer("infer-1", gpuB+"::0", 6, 768), infer("infer-2", gpuB+"::1", 1, 256)}},
	}}, fixtureMeta(4))
	mfs = gather(t, e)
	assertClose(t, "infer-2 allocated after coming back", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", infer2), 2.5)
	assertClose(t, "infer-2 used after coming back", mustValue(t, mfs, "gpuledger_container_gpu_used_seconds_total", infer2), 1)
	assertClose(t, "infer-1 allocated keeps counting", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total",
		containerLabelsOf(gpuB, "ml", "infer-1", "server")), 2.5*4)
	assertAbsent(t, mfs, "gpuledger_gpu_capacity_seconds_total", map[string]string{"gpu": gpuC})
	assertAbsent(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", map[string]string{"gpu": gpuC})
	assertAbsent(t, mfs, "gpuledger_idle_allocation", nil)
	if got := mustValue(t, mfs, "gpuledger_gpu_capacity_seconds_total", map[string]string{"gpu": gpuB}); got != 40 {
		t.Errorf("GPU B capacity = %v, want 40", got)
	}
}

func TestMethodFlipKeepsBothSeries(t *testing.T) {
	mfs := gather(t, runFixture(t, 3, Options{}))
	nb := containerLabelsOf(gpuC, "research", "nb-0", "jupyter")
	if got := len(series(mfs, "gpuledger_container_gpu_used_seconds_total", nb)); got != 2 {
		t.Fatalf("notebook has %d used series, want 2 (estimated and measured)", got)
	}
	nb["method"] = "estimated"
	assertClose(t, "notebook used estimated", mustValue(t, mfs, "gpuledger_container_gpu_used_seconds_total", nb), 1+0.25)
	nb["method"] = "measured"
	assertClose(t, "notebook used measured", mustValue(t, mfs, "gpuledger_container_gpu_used_seconds_total", nb), 0.5)
}

func TestFindingsShowAsGauges(t *testing.T) {
	e := runFixture(t, 2, Options{})
	mfs := gather(t, e)
	noisy := map[string]string{"node": node, "gpu": gpuB, "namespace": "ml", "pod": "infer-1", "container": "server", "team": "ml-team"}
	starved := map[string]string{"node": node, "gpu": gpuB, "namespace": "ml", "pod": "infer-2", "container": "server", "team": "ml-team", "noisy_pod": "ml/infer-1"}
	idle := map[string]string{"node": node, "gpu": gpuC, "namespace": "research", "pod": "nb-0", "container": "jupyter", "team": "research"}
	if got := mustValue(t, mfs, "gpuledger_noisy_neighbour", noisy); got != 1 {
		t.Errorf("noisy_neighbour = %v, want 1", got)
	}
	if got := mustValue(t, mfs, "gpuledger_starved_container", starved); got != 1 {
		t.Errorf("starved_container = %v, want 1", got)
	}
	if got := mustValue(t, mfs, "gpuledger_idle_allocation", idle); got != 1 {
		t.Errorf("idle_allocation = %v, want 1", got)
	}
	if n := len(series(mfs, "gpuledger_noisy_neighbour", nil)); n != 1 {
		t.Errorf("%d noisy_neighbour series, want 1", n)
	}

	// Cycle 3: infer-2 left, infer-1 now starves infer-3.
	e.Update(fixtureCycles()[2], fixtureMeta(3))
	mfs = gather(t, e)
	if got := mustValue(t, mfs, "gpuledger_noisy_neighbour", noisy); got != 1 {
		t.Errorf("noisy_neighbour still flagged = %v, want 1", got)
	}
	assertAbsent(t, mfs, "gpuledger_starved_container", map[string]string{"pod": "infer-2"})
	starved["pod"] = "infer-3"
	if got := mustValue(t, mfs, "gpuledger_starved_container", starved); got != 1 {
		t.Errorf("starved_container for infer-3 = %v, want 1", got)
	}

	// Nothing flagged any more: every finding series goes.
	s, end := window(3)
	e.Update(attribution.CycleResult{Start: s, End: end}, CycleMeta{})
	mfs = gather(t, e)
	for _, name := range []string{"gpuledger_noisy_neighbour", "gpuledger_starved_container", "gpuledger_idle_allocation"} {
		assertAbsent(t, mfs, name, nil)
	}
}

func TestDuplicateFindingsAndContainersMerge(t *testing.T) {
	e := New(node, Options{})
	s, end := window(0)
	c := infer("infer-1", gpuB+"::0", 2, 100)
	f := attribution.Finding{Kind: attribution.FindingNoisyNeighbour, GPUUUID: gpuB, Namespace: "ml", Pod: "infer-1", Container: "server", Team: "ml-team"}
	e.Update(attribution.CycleResult{Start: s, End: end, GPUs: []attribution.GPUCycle{
		{UUID: gpuB, Model: modelB, Capacity: 10, Containers: []attribution.ContainerCycle{c, c}},
	}, Active: []attribution.Finding{f, f, {Kind: "unknown_kind", Pod: "x"}}}, CycleMeta{})
	mfs := gather(t, e) // a pedantic registry fails on duplicate series
	l := containerLabelsOf(gpuB, "ml", "infer-1", "server")
	assertClose(t, "merged allocated", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", l), 5)
	assertClose(t, "merged used", mustValue(t, mfs, "gpuledger_container_gpu_used_seconds_total", l), 4)
	assertClose(t, "merged ratio", mustValue(t, mfs, "gpuledger_container_gpu_allocation_ratio", l), 0.5)
	assertClose(t, "merged memory", mustValue(t, mfs, "gpuledger_container_gpu_memory_bytes", l), 200*1048576)
	if n := len(series(mfs, "gpuledger_noisy_neighbour", nil)); n != 1 {
		t.Errorf("%d noisy_neighbour series, want 1", n)
	}
}

func TestPodLabelAllowlist(t *testing.T) {
	opts := Options{PodLabelAllowlist: []string{"app.kubernetes.io/name", "team", "app_kubernetes_io_name", ""}}
	e := runFixture(t, 1, opts)
	mfs := gather(t, e)

	trainer := mustSeries(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", map[string]string{"pod": "train-0"})
	want := map[string]string{
		"node": node, "gpu": gpuA, "slice": gpuA, "sharing_mode": "exclusive",
		"namespace": "team-a", "pod": "train-0", "container": "trainer",
		"team":                         "alpha", // the pod's label team=beta must not move the bill
		"label_team":                   "beta",
		"label_app_kubernetes_io_name": "trainer",
	}
	assertLabels(t, "trainer allocated", labelMap(trainer), want)

	used := mustSeries(t, mfs, "gpuledger_container_gpu_used_seconds_total", map[string]string{"pod": "train-0"})
	want["method"] = "measured"
	assertLabels(t, "trainer used", labelMap(used), want)

	// tier is not allowlisted; a pod without a listed label gets an empty
	// value, which Prometheus treats as no label.
	infer := labelMap(mustSeries(t, mfs, "gpuledger_container_gpu_memory_bytes", map[string]string{"pod": "infer-1"}))
	if _, ok := infer["label_tier"]; ok {
		t.Errorf("label_tier copied although not allowlisted: %v", infer)
	}
	if v := infer["label_team"]; v != "" {
		t.Errorf("label_team = %q although the pod has no team label", v)
	}
	if infer["label_app_kubernetes_io_name"] != "infer" {
		t.Errorf("infer-1 label_app_kubernetes_io_name = %q, want infer", infer["label_app_kubernetes_io_name"])
	}
	// Findings and GPU series carry no pod labels.
	gpuSeries := labelMap(mustSeries(t, mfs, "gpuledger_gpu_capacity_seconds_total", map[string]string{"gpu": gpuA}))
	if len(gpuSeries) != 3 {
		t.Errorf("gpu capacity labels = %v, want node, gpu, model only", gpuSeries)
	}
}

func TestPodLabelChangeStartsNewSeries(t *testing.T) {
	e := New(node, Options{PodLabelAllowlist: []string{"version"}})
	pods := func(v string) CycleMeta {
		return CycleMeta{Pods: []attribution.PodMeta{{Namespace: "team-a", Name: "train-0", Labels: map[string]string{"version": v}}}}
	}
	for i, v := range []string{"v1", "v1", "v2"} {
		s, end := window(i)
		e.Update(attribution.CycleResult{Start: s, End: end, GPUs: []attribution.GPUCycle{
			{UUID: gpuA, Model: modelA, Capacity: 10, Containers: []attribution.ContainerCycle{trainer(5)}},
		}}, pods(v))
	}
	mfs := gather(t, e)
	assertAbsent(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", map[string]string{"label_version": "v1"})
	assertClose(t, "allocated under the new label", mustValue(t, mfs, "gpuledger_container_gpu_allocated_seconds_total",
		map[string]string{"label_version": "v2"}), 10)
}

func TestSanitiseLabelName(t *testing.T) {
	for in, want := range map[string]string{
		"app.kubernetes.io/name": "app_kubernetes_io_name",
		"team":                   "team",
		"Tier-2":                 "Tier_2",
		"é":                      "__", // two bytes of UTF-8
	} {
		if got := sanitiseLabelName(in); got != want {
			t.Errorf("sanitiseLabelName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCreatedTimestampIsFirstWindowStart(t *testing.T) {
	e := runFixture(t, 3, Options{})
	mfs := gather(t, e)
	check := func(what string, name string, labels map[string]string, want time.Time) {
		t.Helper()
		m := mustSeries(t, mfs, name, labels)
		if got := m.GetCounter().GetCreatedTimestamp().AsTime(); !got.Equal(want) {
			t.Errorf("%s created = %v, want %v", what, got, want)
		}
	}
	check("trainer allocated", "gpuledger_container_gpu_allocated_seconds_total", map[string]string{"pod": "train-0"}, t0)
	check("GPU A capacity", "gpuledger_gpu_capacity_seconds_total", map[string]string{"gpu": gpuA}, t0)
	start3, _ := window(2)
	check("notebook used measured", "gpuledger_container_gpu_used_seconds_total",
		map[string]string{"pod": "nb-0", "method": "measured"}, start3)
}

func TestHealthAndInfo(t *testing.T) {
	mfs := gather(t, runFixture(t, 2, Options{BuildVersion: "1.2.3", BuildRevision: "abc123"}))
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"gpuledger_build_info", map[string]string{"version": "1.2.3", "revision": "abc123"}, 1},
		{"gpuledger_gpu_info", map[string]string{"gpu": gpuC, "index": "2", "model": modelA, "mig_enabled": "true"}, 1},
		{"gpuledger_gpu_info", map[string]string{"gpu": gpuB, "index": "1", "model": modelB, "mig_enabled": "false"}, 1},
		{"gpuledger_mig_instance_info", map[string]string{"gpu": gpuC, "mig_instance": migC, "profile": "3g.40gb", "slices": "3"}, 1},
		{"gpuledger_collector_cycle_duration_seconds", nil, 0.05},
		{"gpuledger_collector_cycles_total", nil, 2},
		{"gpuledger_source_up", map[string]string{"source": "dcgm"}, 0},
		{"gpuledger_source_up", map[string]string{"source": "nvml"}, 1},
		{"gpuledger_source_errors_total", map[string]string{"source": "dcgm"}, 1},
		{"gpuledger_attribution_anomalies_total", map[string]string{"kind": "bad_device_id"}, 3},
		{"gpuledger_ledger_rows_written_total", nil, 14},
		{"gpuledger_outbox_rows_pending", nil, 2},
		{"gpuledger_outbox_oldest_pending_age_seconds", nil, 3},
	} {
		assertClose(t, c.name+labelString(c.labels), mustValue(t, mfs, c.name, c.labels), c.want)
	}
}

func TestBeforeFirstUpdateOnlyBuildInfo(t *testing.T) {
	mfs := gather(t, New(node, Options{}))
	if len(mfs) != 1 || mfs[0].GetName() != "gpuledger_build_info" {
		var names []string
		for _, mf := range mfs {
			names = append(names, mf.GetName())
		}
		t.Errorf("families before the first Update = %v, want only gpuledger_build_info", names)
	}
	m := mfs[0].GetMetric()[0]
	assertLabels(t, "build_info", labelMap(m), map[string]string{"version": "unknown", "revision": "unknown", "node": node})
}

func TestInvalidLabelValuesDropOnlyThatSeries(t *testing.T) {
	e := New(node, Options{})
	s, end := window(0)
	bad := trainer(5)
	bad.Pod = "bad\xffpod"
	e.Update(attribution.CycleResult{Start: s, End: end, GPUs: []attribution.GPUCycle{
		{UUID: gpuA, Model: modelA, Capacity: 10, Containers: []attribution.ContainerCycle{bad, infer("infer-1", gpuA, 1, 1)}},
	}}, CycleMeta{})
	mfs := gather(t, e)
	if n := len(series(mfs, "gpuledger_container_gpu_allocated_seconds_total", nil)); n != 1 {
		t.Errorf("%d allocated series, want 1 (the valid container)", n)
	}
	assertClose(t, "GPU capacity still served", mustValue(t, mfs, "gpuledger_gpu_capacity_seconds_total", nil), 10)
}
