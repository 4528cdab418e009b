package main

import (
	"fmt"
	"strings"
)

// garbageReplicas: a careless operator writes nvidia.com/gpu.replicas=four.
// A replica count that is not a positive integer divides nothing: the
// time-slicing slices stay unallocated (the pipeline raises bad_replicas),
// while each pod's usage is still its own. Before, the label read as
// absent and the replicas were estimated from the two IDs seen, half the
// GPU each.
func garbageReplicas() *builder {
	b := newBuilder("garbage-replicas", 180, map[string]string{
		lProduct: "NVIDIA-H100-80GB-HBM3", lStrategy: "time-slicing", lReplicas: "four"})
	b.namespace("web", map[string]string{"team": "web"})
	g := b.gpu(h100, "timeslicing")
	for i, frac := range []float64{0.4, 0.2} {
		pod := b.pod("web", fmt.Sprintf("server-%d", i), 0, 0)
		c := pod.container("main", "nvidia.com/gpu", fmt.Sprintf("%s::%d", g.UUID, i))
		c.process(74000+i, g.UUID, 6000, 0, 0, []segY{seg(0, 180, frac)})
	}
	b.forbid("kind", "idle_allocation")
	return b
}

// HAMi's resource names, as its chart sets them.
const (
	rGPUCores = "nvidia.com/gpucores"
	rGPUMem   = "nvidia.com/gpumem"
)

// hamiLimits are a HAMi container's limits: one vGPU with cores percent
// and memMiB.
func hamiLimits(cores, memMiB int) map[string]string {
	return map[string]string{"nvidia.com/gpu": "1", rGPUCores: fmt.Sprint(cores), rGPUMem: fmt.Sprint(memMiB)}
}

// hamiZeroShare: tenants whose HAMi annotations give them no cores and no
// memory, busy all the same. One without limits in the metadata pays the
// framebuffer it holds (20480 of 81920 MiB: a quarter of the GPU), one
// whose pod spec asks for 30 cores pays those; both are estimates. Before,
// both were allocated nothing, measured, and their neighbours' teams paid
// their time as idle share.
func hamiZeroShare() *builder {
	b := newBuilder("hami-zero-share", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("sandbox", map[string]string{"team": "growth"})
	b.namespace("payments", map[string]string{"team": "payments"})
	g := b.gpu(h100, "hami")

	free := b.pod("sandbox", "freeloader", 0, 0)
	free.container("main", "nvidia.com/gpu", g.UUID+"-0").
		process(75000, g.UUID, 20480, 0, 0, []segY{seg(0, 300, 0.4)})
	hamiAnnotate(b, free, hamiDevice(g.UUID, 0, 0))

	lim := b.pod("sandbox", "freeloader-limited", 0, 0)
	c := lim.container("main", "nvidia.com/gpu", g.UUID+"-1")
	c.Limits = hamiLimits(30, 10000)
	c.process(75001, g.UUID, 8000, 0, 0, []segY{seg(0, 300, 0.15)})
	hamiAnnotate(b, lim, hamiDevice(g.UUID, 0, 0))

	n := b.pod("payments", "scorer", 0, 0)
	c = n.container("main", "nvidia.com/gpu", g.UUID+"-2")
	c.Limits = hamiLimits(40, 40000)
	c.process(75002, g.UUID, 30000, 0, 0, []segY{seg(0, 300, 0.2)})
	hamiAnnotate(b, n, hamiDevice(g.UUID, 40000, 40))

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// hamiEditBeforeStart: a pod asks for 25 cores and 20000 MiB; while its
// init container runs, its tenant edits the annotation down to 1 core, so
// the first value seen while the GPU container runs (the one pinned) is
// the edited one. The pod spec's limits, which nobody can edit, decide:
// 25% from the container's start, as an estimate. Before, it paid 1%.
func hamiEditBeforeStart() *builder {
	b := newBuilder("hami-edit-before-start", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("research", map[string]string{"team": "research"})
	b.namespace("serving", map[string]string{"team": "serving"})
	g := b.gpu(h100, "hami")

	p := b.pod("research", "trainer", 0, 0)
	p.initContainer("fetch-weights", 60, "")
	c := p.container("model", "nvidia.com/gpu", g.UUID+"-0")
	c.Limits = hamiLimits(25, 20000)
	c.process(76000, g.UUID, 18000, 0, 0, []segY{seg(60, 300, 0.25)})
	hamiAnnotate(b, p, "", hamiDevice(g.UUID, 20000, 25))
	p.annotate(30, map[string]string{aHAMi: ";" + hamiDevice(g.UUID, 20000, 1) + ";", aHAMiNode: b.f.Node.Name})

	n := b.pod("serving", "api", 0, 0)
	c = n.container("main", "nvidia.com/gpu", g.UUID+"-1")
	c.Limits = hamiLimits(50, 40000)
	c.process(76001, g.UUID, 30000, 0, 0, []segY{seg(0, 300, 0.3)})
	hamiAnnotate(b, n, hamiDevice(g.UUID, 40000, 50))

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// hamiDuplicateGPU: an entry naming the same GPU thousands of times (as
// many as fit the API server's 256 KiB of annotations) used to be summed
// and scaled down with its neighbour's share: it took almost the whole GPU
// and squeezed a legitimate neighbour to almost nothing. It is charged
// once per GPU, as an estimate: the annotated 10% without limits in the
// metadata, the limits' 10% with them; the neighbours keep their 50%.
func hamiDuplicateGPU() *builder {
	b := newBuilder("hami-duplicate-gpu", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("sandbox", map[string]string{"team": "growth"})
	b.namespace("payments", map[string]string{"team": "payments"})
	g0, g1 := b.gpu(h100, "hami"), b.gpu(h100, "hami")

	greedy := b.pod("sandbox", "greedy", 0, 0)
	greedy.container("main", "nvidia.com/gpu", g0.UUID+"-0").
		process(77000, g0.UUID, 4000, 0, 0, []segY{seg(0, 300, 0.3)})
	hamiAnnotate(b, greedy, strings.Repeat(hamiDevice(g0.UUID, 1000, 10), 4000))

	limited := b.pod("sandbox", "greedy-limited", 0, 0)
	c := limited.container("main", "nvidia.com/gpu", g1.UUID+"-0")
	c.Limits = hamiLimits(10, 1000)
	c.process(77001, g1.UUID, 900, 0, 0, []segY{seg(0, 300, 0.3)})
	hamiAnnotate(b, limited, strings.Repeat(hamiDevice(g1.UUID, 1000, 10), 500))

	for i, g := range []*gpuY{g0, g1} {
		n := b.pod("payments", fmt.Sprintf("scorer-%d", i), 0, 0)
		c := n.container("main", "nvidia.com/gpu", g.UUID+"-1")
		c.Limits = hamiLimits(50, 40000)
		c.process(77002+i, g.UUID, 30000, 0, 0, []segY{seg(0, 300, 0.4)})
		hamiAnnotate(b, n, hamiDevice(g.UUID, 40000, 50))
	}
	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}
