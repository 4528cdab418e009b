package main

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

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
	name    string
	labels  map[string]string
	gpus    []*scenario.FileGPU
	tenants []demoTenant
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
		{name: "demo-mig", labels: map[string]string{"nvidia.com/mig.strategy": "mixed"},
			gpus: []*scenario.FileGPU{demoGPU(0, gpuMIG, "A100-SXM4-80GB", "mig",
				&scenario.FileMIG{UUID: migA, Profile: "3g.40gb"}, &scenario.FileMIG{UUID: migB, Profile: "2g.20gb"},
				&scenario.FileMIG{UUID: migC, Profile: "1g.10gb"}, &scenario.FileMIG{UUID: migD, Profile: "1g.10gb"})},
			tenants: []demoTenant{
				{ns: "search", pod: "ranker-0", ctr: "server", ids: []string{migA}, device: migA, day: 0.7, night: 0.25, memMiB: 30000},
				{ns: "ads", pod: "ctr-model", ctr: "server", ids: []string{migB}, device: migB, day: 0.45, night: 0.3, memMiB: 12000},
				{ns: "research", pod: "sweep-7", ctr: "trainer", ids: []string{migC}, device: migC, day: 1, night: 1, memMiB: 9000},
				{ns: "fraud", pod: "scorer", ctr: "server", ids: []string{migD}, device: migD, day: 0.25, night: 0.1, memMiB: 4000},
			}},
		{name: "demo-timeslicing", labels: map[string]string{"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"},
			gpus: []*scenario.FileGPU{demoGPU(0, gpuTS0, "A100-SXM4-80GB", "timeslicing"), demoGPU(1, gpuTS1, "A100-SXM4-80GB", "timeslicing")},
			tenants: []demoTenant{
				{ns: "research", pod: "llm-finetune", ctr: "trainer", ids: []string{gpuTS0 + "::0"}, device: gpuTS0, day: 0.85, night: 0.85, memMiB: 40000},
				{ns: "search", pod: "embed-0", ctr: "server", ids: []string{gpuTS0 + "::1"}, device: gpuTS0, day: 0.07, night: 0.03, memMiB: 8000},
				{ns: "search", pod: "embed-1", ctr: "server", ids: []string{gpuTS0 + "::2"}, device: gpuTS0, day: 0.07, night: 0.03, memMiB: 8000},
				{ns: "notebooks", pod: "jupyter-ana", ctr: "notebook", ids: []string{gpuTS1 + "::0"}, device: gpuTS1, day: 0.3, activeHours: 1, memMiB: 2000},
				{ns: "notebooks", pod: "jupyter-bob", ctr: "notebook", ids: []string{gpuTS1 + "::1"}, device: gpuTS1, memMiB: 1500},
			}},
		{name: "demo-mps", labels: map[string]string{"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4"},
			gpus: []*scenario.FileGPU{demoGPU(0, gpuMPS, "H100-SXM5-80GB", "mps")},
			tenants: []demoTenant{
				{ns: "ads", pod: "bidder-0", ctr: "server", ids: []string{gpuMPS + "::0"}, device: gpuMPS, day: 0.45, night: 0.2, memMiB: 10000},
				{ns: "ads", pod: "bidder-1", ctr: "server", ids: []string{gpuMPS + "::1"}, device: gpuMPS, day: 0.35, night: 0.2, memMiB: 10000},
				{ns: "vision", pod: "detector", ctr: "server", ids: []string{gpuMPS + "::2"}, device: gpuMPS, day: 0.3, night: 0.1, memMiB: 16000},
			}},
		{name: "demo-hami", labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			gpus: []*scenario.FileGPU{demoGPU(0, gpuHAMi, "H100-SXM5-80GB", "hami")},
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

func demoGPU(index int, uuid, model, mode string, mig ...*scenario.FileMIG) *scenario.FileGPU {
	return &scenario.FileGPU{Index: scenario.IntValue(index), UUID: uuid, Model: model, Mode: mode, MIGInstances: mig}
}

// backfillScenarios builds the fleet's scenarios for [start, start+days):
// each node's scenario file is built as values, written as YAML and read
// back through the parser, which checks it as it checks any file.
func backfillScenarios(start time.Time, days int) ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	for _, n := range demoFleet() {
		data, err := yaml.Marshal(backfillFile(n, start, days))
		if err != nil {
			return nil, fmt.Errorf("cannot write demo node %s: %w", n.name, err)
		}
		sc, err := scenario.Parse(data, ".")
		if err != nil {
			return nil, fmt.Errorf("demo node %s: %w", n.name, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// backfillFile is node n's scenario file for [start, start+days): polls
// and driver samples a minute apart, hourly ledger rows.
func backfillFile(n demoNode, start time.Time, days int) *scenario.File {
	text := scenario.TextValue
	idleThreshold := 0.05
	f := &scenario.File{
		APIVersion: scenario.APIVersion, Kind: scenario.KindScenario, Name: n.name + "-backfill",
		Start: text(start.UTC().Format(time.RFC3339)), Duration: text(fmt.Sprintf("%dh", 24*days)),
		PollInterval: text("60s"), LedgerInterval: text("3600s"), DriverSamplePeriod: text("60s"),
		Detection: scenario.FileDetection{IdleWindow: text("2h"), IdleThreshold: &idleThreshold, NoisyWindow: text("10m")},
		Node:      scenario.FileNode{Name: n.name, Labels: n.labels},
		GPUs:      n.gpus,
	}
	seen := map[string]bool{}
	for _, t := range n.tenants {
		if !seen[t.ns] {
			seen[t.ns] = true
			f.Namespaces = append(f.Namespaces, scenario.FileNamespace{Name: t.ns, Labels: map[string]string{"team": demoTeams[t.ns]}})
		}
	}
	for i, t := range n.tenants {
		p := &scenario.FilePod{UID: demoUID(n.name, i), Namespace: t.ns, Name: t.pod}
		if t.annotation != "" {
			p.Annotations = map[string]string{"hami.io/vgpu-devices-allocated": t.annotation}
		}
		p.Containers = []*scenario.FileContainer{{Name: t.ctr, FileContainerSpec: scenario.FileContainerSpec{
			Devices: []scenario.FileDevice{{Resource: "nvidia.com/gpu", IDs: t.ids}},
			Processes: []*scenario.FileProcess{{PID: scenario.IntValue(1000 + i), Device: t.device,
				MemoryMiB: scenario.IntValue(t.memMiB), Busy: dailyBusy(t, days)}},
		}}}
		f.Pods = append(f.Pods, p)
	}
	return f
}

// dailyBusy is one segment per hour: office hours at t.day, the rest at
// t.night; a notebook is busy only its first active hours each morning.
func dailyBusy(t demoTenant, days int) []scenario.FileSegment {
	var segs []scenario.FileSegment
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
			segs = append(segs, scenario.FileSegment{From: scenario.TextValue(fmt.Sprintf("%dh", h)), To: scenario.TextValue(fmt.Sprintf("%dh", h+1)), Fraction: &f})
		}
	}
	return segs
}

func demoUID(node string, i int) string {
	var h uint32 = 2166136261
	for _, c := range node {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%08x-0000-4000-8000-%012d", h, i+1)
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
