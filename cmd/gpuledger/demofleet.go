package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// The demo's backfill fleet: a month of four nodes, one per sharing
// mechanism, with office-hours load, a noisy trainer on a time-sliced GPU,
// notebooks that sit idle, and a tenant at 100% behind a MIG wall (which
// must not be flagged). Polls are a minute apart and the driver's sample
// period is a minute too, so a month simulates in seconds while every
// sample is still read.

// demoTenant is one container of the fleet.
type demoTenant struct {
	ns, pod, ctr string
	ids          []string // kubelet device IDs
	device       string   // GPU or MIG UUID the process runs on
	annotation   string   // HAMi annotation, if any
	day, night   float64  // busy fraction in office hours (08-20 UTC) and outside
	activeHours  int      // >0: busy only this many hours a day (notebooks)
	memMiB       int
}

type demoNode struct {
	name, labels string // labels: YAML flow mapping body
	gpus         string // YAML list items
	tenants      []demoTenant
}

const (
	gpuMIG  = "GPU-d0000000-0000-4000-8000-000000000001"
	gpuTS0  = "GPU-d0000000-0000-4000-8000-000000000002"
	gpuTS1  = "GPU-d0000000-0000-4000-8000-000000000003"
	gpuMPS  = "GPU-d0000000-0000-4000-8000-000000000004"
	gpuHAMi = "GPU-d0000000-0000-4000-8000-000000000005"
	migA    = "MIG-d0000000-0000-4000-8000-0000000000a1"
	migB    = "MIG-d0000000-0000-4000-8000-0000000000a2"
	migC    = "MIG-d0000000-0000-4000-8000-0000000000a3"
	migD    = "MIG-d0000000-0000-4000-8000-0000000000a4"
)

func demoFleet() []demoNode {
	return []demoNode{
		{name: "demo-mig", labels: `nvidia.com/mig.strategy: mixed`,
			gpus: fmt.Sprintf(`  - {index: 0, uuid: %s, model: A100-SXM4-80GB, mode: mig, migInstances: [{uuid: %s, profile: 3g.40gb}, {uuid: %s, profile: 2g.20gb}, {uuid: %s, profile: 1g.10gb}, {uuid: %s, profile: 1g.10gb}]}`, gpuMIG, migA, migB, migC, migD),
			tenants: []demoTenant{
				{ns: "search", pod: "ranker-0", ctr: "server", ids: []string{migA}, device: migA, day: 0.7, night: 0.25, memMiB: 30000},
				{ns: "ads", pod: "ctr-model", ctr: "server", ids: []string{migB}, device: migB, day: 0.45, night: 0.3, memMiB: 12000},
				{ns: "research", pod: "sweep-7", ctr: "trainer", ids: []string{migC}, device: migC, day: 1, night: 1, memMiB: 9000},
				{ns: "fraud", pod: "scorer", ctr: "server", ids: []string{migD}, device: migD, day: 0.25, night: 0.1, memMiB: 4000},
			}},
		{name: "demo-timeslicing", labels: `nvidia.com/gpu.sharing-strategy: time-slicing, nvidia.com/gpu.replicas: "4"`,
			gpus: fmt.Sprintf("  - {index: 0, uuid: %s, model: A100-SXM4-80GB, mode: timeslicing}\n  - {index: 1, uuid: %s, model: A100-SXM4-80GB, mode: timeslicing}", gpuTS0, gpuTS1),
			tenants: []demoTenant{
				{ns: "research", pod: "llm-finetune", ctr: "trainer", ids: []string{gpuTS0 + "::0"}, device: gpuTS0, day: 0.85, night: 0.85, memMiB: 40000},
				{ns: "search", pod: "embed-0", ctr: "server", ids: []string{gpuTS0 + "::1"}, device: gpuTS0, day: 0.07, night: 0.03, memMiB: 8000},
				{ns: "search", pod: "embed-1", ctr: "server", ids: []string{gpuTS0 + "::2"}, device: gpuTS0, day: 0.07, night: 0.03, memMiB: 8000},
				{ns: "notebooks", pod: "jupyter-ana", ctr: "notebook", ids: []string{gpuTS1 + "::0"}, device: gpuTS1, day: 0.3, activeHours: 1, memMiB: 2000},
				{ns: "notebooks", pod: "jupyter-bob", ctr: "notebook", ids: []string{gpuTS1 + "::1"}, device: gpuTS1, memMiB: 1500},
			}},
		{name: "demo-mps", labels: `nvidia.com/gpu.sharing-strategy: mps, nvidia.com/gpu.replicas: "4"`,
			gpus: fmt.Sprintf("  - {index: 0, uuid: %s, model: H100-SXM5-80GB, mode: mps}", gpuMPS),
			tenants: []demoTenant{
				{ns: "ads", pod: "bidder-0", ctr: "server", ids: []string{gpuMPS + "::0"}, device: gpuMPS, day: 0.45, night: 0.2, memMiB: 10000},
				{ns: "ads", pod: "bidder-1", ctr: "server", ids: []string{gpuMPS + "::1"}, device: gpuMPS, day: 0.35, night: 0.2, memMiB: 10000},
				{ns: "vision", pod: "detector", ctr: "server", ids: []string{gpuMPS + "::2"}, device: gpuMPS, day: 0.3, night: 0.1, memMiB: 16000},
			}},
		{name: "demo-hami", labels: `nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3`,
			gpus: fmt.Sprintf("  - {index: 0, uuid: %s, model: H100-SXM5-80GB, mode: hami}", gpuHAMi),
			tenants: []demoTenant{
				{ns: "genai", pod: "vllm-0", ctr: "model", ids: []string{gpuHAMi + "-0"}, device: gpuHAMi, annotation: gpuHAMi + ",NVIDIA,40000,50:;", day: 0.45, night: 0.15, memMiB: 38000},
				{ns: "vision", pod: "ocr", ctr: "server", ids: []string{gpuHAMi + "-1"}, device: gpuHAMi, annotation: gpuHAMi + ",NVIDIA,20000,30:;", day: 0.25, night: 0.05, memMiB: 18000},
			}},
	}
}

var demoTeams = map[string]string{
	"search": "search", "ads": "ads", "research": "research", "fraud": "fraud",
	"notebooks": "analytics", "vision": "vision", "genai": "genai",
}

// backfillScenarios builds the fleet's scenarios for [start, start+days).
func backfillScenarios(start time.Time, days int) ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	for _, n := range demoFleet() {
		sc, err := scenario.Parse([]byte(backfillYAML(n, start, days)), ".")
		if err != nil {
			return nil, fmt.Errorf("demo node %s: %w", n.name, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

func backfillYAML(n demoNode, start time.Time, days int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: gpuledger/v1
kind: Scenario
name: %s-backfill
start: %s
duration: %dh
pollInterval: 60s
ledgerInterval: 3600s
driverSamplePeriod: 60s
detection: {idleWindow: 2h, idleThreshold: 0.05, noisyWindow: 10m}
node: {name: %s, labels: {%s}}
namespaces:
`, n.name, start.UTC().Format(time.RFC3339), 24*days, n.name, n.labels)
	seen := map[string]bool{}
	for _, t := range n.tenants {
		if !seen[t.ns] {
			seen[t.ns] = true
			fmt.Fprintf(&b, "  - {name: %s, labels: {team: %s}}\n", t.ns, demoTeams[t.ns])
		}
	}
	fmt.Fprintf(&b, "gpus:\n%s\npods:\n", n.gpus)
	for i, t := range n.tenants {
		fmt.Fprintf(&b, "  - uid: %s\n    namespace: %s\n    name: %s\n", demoUID(n.name, i), t.ns, t.pod)
		if t.annotation != "" {
			fmt.Fprintf(&b, "    annotations: {hami.io/vgpu-devices-allocated: %q}\n", t.annotation)
		}
		fmt.Fprintf(&b, "    containers:\n      - name: %s\n        devices: [{resource: nvidia.com/gpu, ids: [%s]}]\n", t.ctr, strings.Join(quoteAll(t.ids), ", "))
		fmt.Fprintf(&b, "        processes:\n          - pid: %d\n            device: %s\n            memoryMiB: %d\n            busy: [%s]\n",
			1000+i, t.device, t.memMiB, dailyBusy(t, days))
	}
	return b.String()
}

// dailyBusy is one segment per hour: office hours at t.day, the rest at
// t.night; a notebook is busy only its first active hours each morning.
func dailyBusy(t demoTenant, days int) string {
	var segs []string
	for h := 0; h < 24*days; h++ {
		hod := h % 24
		f := t.night
		if hod >= 8 && hod < 20 {
			f = t.day
		}
		if t.activeHours > 0 {
			f = 0
			if hod >= 9 && hod < 9+t.activeHours {
				f = t.day
			}
		}
		if f > 0 {
			segs = append(segs, fmt.Sprintf("{from: %dh, to: %dh, fraction: %g}", h, h+1, f))
		}
	}
	return strings.Join(segs, ", ")
}

func demoUID(node string, i int) string {
	var h uint32 = 2166136261
	for _, c := range node {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%08x-0000-4000-8000-%012d", h, i+1)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// demoQuota is the quota the demo's teams are promised, recorded as
// `gpuledger serve --quota` records a cluster's (there is no cluster
// here): Kueue ClusterQueues for search and research (research's raised
// half-way through the month), a ResourceQuota on MIG instances and whole
// GPUs for ads, a Volcano queue for the notebooks' analytics team (which
// leaves most of it idle) and a KAI queue of half a GPU for genai.
func demoQuota(from time.Time, days int) []quota.Change {
	mid := from.Add(time.Duration(days) * 12 * time.Hour)
	set := func(at time.Time, src, obj, res, team string, milli int64) quota.Change {
		return quota.Change{At: at, Entry: quota.Entry{Key: quota.Key{Source: src, Object: obj, Resource: res}, Team: team, Milli: milli}}
	}
	return []quota.Change{
		set(from, quota.SourceKueue, "search", quota.ResourceAnyGPU, "search", 1000),
		set(from, quota.SourceKueue, "research", quota.ResourceAnyGPU, "research", 1000),
		set(mid, quota.SourceKueue, "research", quota.ResourceAnyGPU, "research", 2000),
		set(from, quota.SourceResourceQuota, "ads", "mig-2g.20gb", "ads", 1000),
		set(from, quota.SourceResourceQuota, "ads", quota.ResourceAnyGPU, "ads", 1000),
		set(from, quota.SourceVolcano, "analytics", quota.ResourceAnyGPU, "analytics", 1000),
		set(from, quota.SourceKAI, "genai", quota.ResourceAnyGPU, "genai", 500),
	}
}
