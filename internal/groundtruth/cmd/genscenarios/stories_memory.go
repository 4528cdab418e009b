package main

import (
	"fmt"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// The memory stories run 10 minutes with a 5-minute memory window (ten
// 30-second buckets): the first window is full at 5 min, and a leak is
// judged over at least five windows' ends.
const (
	memDuration = 600
	memWindow   = "5m"
)

// newMemoryBuilder is a builder with the memory window set.
func newMemoryBuilder(name string, labels map[string]string) *builder {
	b := newBuilder(name, memDuration, labels)
	b.f.Detection.MemoryWindow = text(memWindow)
	return b
}

// memSeg is mib MiB over [from, to) seconds.
func memSeg(from, to float64, mib int) memY {
	return memY{From: secs(from), To: secs(to), MiB: scenario.IntValue(mib)}
}

// leakMem: from base MiB, step more every `every` seconds from `from` to
// the end: a leak of step/every MiB per second. extra(i), if given, is
// added to the i-th stretch.
func leakMem(base, step int, from, every float64, extra ...func(i int) int) []memY {
	var out []memY
	n := 1
	for t := from; t < memDuration; t += every {
		mib := base + n*step
		for _, e := range extra {
			mib += e(n - 1)
		}
		out = append(out, memSeg(t, min(t+every, memDuration), mib))
		n++
	}
	return out
}

// sawtoothMem: a training loop that takes up to top MiB over each
// period and frees it all at the period's end, in steps of `every`
// seconds (the process holds its baseline at each period's start).
func sawtoothMem(base, top int, period, every float64) []memY {
	var out []memY
	steps := int(period / every)
	for p := 0.0; p < memDuration; p += period {
		for k := 1; k < steps; k++ {
			t := p + float64(k)*every
			if t >= memDuration {
				break
			}
			out = append(out, memSeg(t, min(t+every, memDuration), base+top*k/(steps-1)))
		}
	}
	return out
}

// memoryLeakTimeslicing: four time-slicing replicas of an A100-80GB. A
// server leaks 20 MiB every 6 s (200 MiB/min) beside a flat 30 GB model,
// a training loop freeing 6 GB every 40 s and a small steady server.
// At 10 min the leaker holds 12,000 MiB; the GPU 8,000 + 30,000 + up to
// 14,000 + 2,000 + 12,000 = 66,000 of 81,920 at most.
func memoryLeakTimeslicing() *builder {
	b := newMemoryBuilder("memory-leak-timeslicing", map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "4"})
	b.namespace("serving", map[string]string{"team": "inference"})
	b.namespace("training", map[string]string{"team": "research"})
	g := b.gpu(a100, "timeslicing")
	leaker := b.pod("serving", "chat-api", 0, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::0")
	leaker.process(97000, g.UUID, 10000, 0, 0, b.pattern(0, memDuration, 30, 0.1, 0.2)).Memory = leakMem(10000, 20, 6, 6)
	flat := b.pod("serving", "big-model", 0, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::1")
	flat.process(97001, g.UUID, 30000, 0, 0, b.pattern(0, memDuration, 30, 0.2, 0.3))
	trainer := b.pod("training", "finetune", 0, 0).container("main", "nvidia.com/gpu.shared", g.UUID+"::2")
	trainer.process(97002, g.UUID, 8000, 0, 0, b.pattern(0, memDuration, 30, 0.2, 0.3)).Memory = sawtoothMem(8000, 6000, 40, 4)
	small := b.pod("serving", "embedder", 0, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::3")
	small.process(97003, g.UUID, 2000, 0, 0, b.pattern(0, memDuration, 30, 0.05, 0.1))

	b.expect("kind", "memory_growth", "namespace", "serving", "pod", "chat-api", "gpu_uuid", g.UUID)
	for _, p := range []struct{ ns, pod string }{{"serving", "big-model"}, {"training", "finetune"}, {"serving", "embedder"}} {
		b.forbid("kind", "memory_growth", "namespace", p.ns, "pod", p.pod)
	}
	return b
}

// memoryLeakMPS: four MPS clients of an H100; one leaks 64 MiB every
// 10 s (384 MiB/min) in a loop that also takes and frees 2 GB every 20 s
// on top; the others hold flat or sawtooth memory.
func memoryLeakMPS() *builder {
	b := newMemoryBuilder("memory-leak-mps", map[string]string{
		lProduct: "NVIDIA-H100-80GB-HBM3", lStrategy: "mps", lReplicas: "4"})
	b.namespace("serving", map[string]string{"team": "inference"})
	g := b.gpu(h100, "mps")
	leaky := b.pod("serving", "rag-worker", 0, 0).container("worker", "nvidia.com/gpu", g.UUID+"::0")
	// Take 2 GB for the first half of every 20 s on top of the leak.
	mem := leakMem(6000, 64, 10, 10, func(i int) int {
		if i%2 == 0 {
			return 2048
		}
		return 0
	})
	leaky.process(98000, g.UUID, 6000, 0, 0, b.pattern(0, memDuration, 30, 0.2, 0.3)).Memory = mem
	for i, m := range []struct {
		pod string
		mib int
	}{{"llm-a", 24000}, {"llm-b", 16000}, {"ocr", 4000}} {
		c := b.pod("serving", m.pod, 0, 0).container("server", "nvidia.com/gpu", fmt.Sprintf("%s::%d", g.UUID, i+1))
		p := c.process(98001+i, g.UUID, m.mib, 0, 0, b.pattern(0, memDuration, 30, 0.1, 0.3))
		if m.pod == "ocr" {
			p.Memory = sawtoothMem(m.mib, 3000, 25, 5)
		}
		b.forbid("kind", "memory_growth", "namespace", "serving", "pod", m.pod)
	}
	b.expect("kind", "memory_growth", "namespace", "serving", "pod", "rag-worker", "gpu_uuid", g.UUID)
	return b
}

// memoryFlatLarge: a 70 GB model loaded in three stages over its first
// 40 s, then flat, beside a small server that allocates once, late (at
// 4 min), and stays flat: neither is a leak.
func memoryFlatLarge() *builder {
	b := newMemoryBuilder("memory-flat-large", map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "2"})
	b.namespace("serving", map[string]string{"team": "inference"})
	g := b.gpu(a100, "timeslicing")
	big := b.pod("serving", "llm-70b", 0, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::0")
	big.process(99000, g.UUID, 70000, 0, 0, b.pattern(0, memDuration, 30, 0.4, 0.6)).Memory = []memY{
		memSeg(0, 15, 20000), memSeg(15, 30, 45000), memSeg(30, 40, 65000)}
	late := b.pod("serving", "reranker", 0, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::1")
	late.process(99001, g.UUID, 9000, 0, 0, b.pattern(0, memDuration, 30, 0.1, 0.2)).Memory = []memY{
		memSeg(0, 240, 500)}
	b.forbid("kind", "memory_growth")
	return b
}

// memorySawtooth: two training loops that free what they take: one
// every 20 s (shorter than a bucket), one every 75 s (longer than two
// buckets), each in steps, on one time-sliced GPU.
func memorySawtooth() *builder {
	b := newMemoryBuilder("memory-sawtooth", map[string]string{
		lProduct: "NVIDIA-H100-80GB-HBM3", lStrategy: "time-slicing", lReplicas: "2"})
	b.namespace("training", map[string]string{"team": "research"})
	g := b.gpu(h100, "timeslicing")
	fast := b.pod("training", "resnet", 0, 0).container("main", "nvidia.com/gpu.shared", g.UUID+"::0")
	fast.process(99100, g.UUID, 10000, 0, 0, b.pattern(0, memDuration, 30, 0.3, 0.4)).Memory = sawtoothMem(10000, 12000, 20, 2)
	slow := b.pod("training", "bert", 0, 0).container("main", "nvidia.com/gpu.shared", g.UUID+"::1")
	slow.process(99101, g.UUID, 20000, 0, 0, b.pattern(0, memDuration, 30, 0.3, 0.4)).Memory = sawtoothMem(20000, 25000, 75, 5)
	b.forbid("kind", "memory_growth")
	return b
}

// memoryLeakMIG: an A100 cut into a 3g.40gb and two 1g.10gb instances;
// the server on one 1g instance leaks 16 MiB every 5 s (192 MiB/min)
// from 2 GB: only its own instance can fill up, so the finding is of
// lower severity (checked in cmd/gpuledger's memory test). Its
// neighbours hold flat memory.
func memoryLeakMIG() *builder {
	b := newMemoryBuilder("memory-leak-mig", map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "none", lMIG: "mixed"})
	b.namespace("serving", map[string]string{"team": "inference"})
	g := b.gpu(a100, "mig")
	i3, i1a, i1b := b.mig(g, "3g.40gb"), b.mig(g, "1g.10gb"), b.mig(g, "1g.10gb")
	leaky := b.pod("serving", "tts", 0, 0).container("server", "nvidia.com/mig-1g.10gb", i1a)
	leaky.process(99200, i1a, 2000, 0, 0, b.pattern(0, memDuration, 30, 0.3, 0.5)).Memory = leakMem(2000, 16, 5, 5)
	big := b.pod("serving", "llm", 0, 0).container("server", "nvidia.com/mig-3g.40gb", i3)
	big.process(99201, i3, 30000, 0, 0, b.pattern(0, memDuration, 30, 0.4, 0.6))
	asr := b.pod("serving", "asr", 0, 0).container("server", "nvidia.com/mig-1g.10gb", i1b)
	asr.process(99202, i1b, 6000, 0, 0, b.pattern(0, memDuration, 30, 0.3, 0.5))
	b.expect("kind", "memory_growth", "namespace", "serving", "pod", "tts", "gpu_uuid", g.UUID)
	b.forbid("kind", "memory_growth", "namespace", "serving", "pod", "llm")
	b.forbid("kind", "memory_growth", "namespace", "serving", "pod", "asr")
	return b
}

// memoryLeakLatePod: a server whose pod starts 3 minutes in leaks
// 200 MiB/min beside a flat neighbour that runs from the start (5-minute
// window, 30-second buckets). The leaker first holds the GPU for a whole
// window over (3:00, 8:00], so its finding starts at 3:00; one starting
// at 2:30 names a time its pod did not exist (the sample taken at its
// first instant belongs to the bucket ending then).
func memoryLeakLatePod() *builder {
	const podStart = 180
	b := newMemoryBuilder("memory-leak-late-pod", map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "2"})
	b.namespace("serving", map[string]string{"team": "inference"})
	g := b.gpu(a100, "timeslicing")
	leaker := b.pod("serving", "late-leaker", podStart, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::0")
	leaker.process(98000, g.UUID, 10000, podStart, 0, b.pattern(podStart, memDuration, 30, 0.1, 0.2)).Memory = leakMem(10000, 20, podStart+6, 6)
	flat := b.pod("serving", "steady", 0, 0).container("server", "nvidia.com/gpu.shared", g.UUID+"::1")
	flat.process(98001, g.UUID, 20000, 0, 0, b.pattern(0, memDuration, 30, 0.2, 0.3))

	b.expect("kind", "memory_growth", "namespace", "serving", "pod", "late-leaker", "gpu_uuid", g.UUID, "start", "2026-11-03T00:03:00Z")
	b.forbid("kind", "memory_growth", "namespace", "serving", "pod", "late-leaker", "start", "2026-11-03T00:02:30Z")
	b.forbid("kind", "memory_growth", "namespace", "serving", "pod", "steady")
	return b
}
