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

// ghostGPU is a GPU UUID on no node of the corpus.
const ghostGPU = "GPU-0badc0de-0000-4000-8000-000000000000"

// hamiGhostGPU: while its init container runs, a tenant patches its own
// annotation to name a GPU the node does not have; its pod spec asks for
// 50 cores and its process runs on the node's GPU, 48% busy, from the
// container's start at 60 s. It used to hold nothing (the annotation's GPU
// is not here, its use an unlisted GPU's) and, under idle: shared, its
// neighbour paid for its time. The device is charged on the GPU its
// kubelet ID names, by the limits' 50%, as an estimate: 120 s, as in the
// honest run (honest: no patch), and the neighbour's 30% is 90 s in both.
func hamiGhostGPU(name string, honest bool) func() *builder {
	return func() *builder {
		b := newBuilder(name, 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
		b.namespace("sandbox", map[string]string{"team": "growth"})
		b.namespace("payments", map[string]string{"team": "payments"})
		g := b.gpu(h100, "hami")

		p := b.pod("sandbox", "trainer", 0, 0)
		p.initContainer("fetch-weights", 60, "")
		c := p.container("model", "nvidia.com/gpu", g.UUID+"-0")
		c.Limits = hamiLimits(50, 20000)
		c.process(78000, g.UUID, 18000, 0, 0, []segY{seg(60, 300, 0.48)})
		hamiAnnotate(b, p, "", hamiDevice(g.UUID, 20000, 50))
		if !honest {
			p.annotate(30, map[string]string{aHAMi: ";" + hamiDevice(ghostGPU, 20000, 50) + ";", aHAMiNode: b.f.Node.Name})
		}

		n := b.pod("payments", "scorer", 0, 0)
		c = n.container("main", "nvidia.com/gpu", g.UUID+"-1")
		c.Limits = hamiLimits(30, 30000)
		c.process(78001, g.UUID, 25000, 0, 0, []segY{seg(0, 300, 0.2)})
		hamiAnnotate(b, n, hamiDevice(g.UUID, 30000, 30))

		b.forbid("kind", "noisy_neighbour")
		b.forbid("kind", "idle_allocation")
		return b
	}
}

// hamiUncapped: a pod whose spec asks for 4096 MiB and no cores keeps the
// GPU 60% busy; HAMi caps nothing. It used to hold its memory's 5% and,
// under idle: shared, its core-capped neighbour (30 cores, 10% busy) paid
// most of the time it used as its share of the never-allocated capacity.
// It holds at least what it used, out of what nobody holds: 180 s, as in
// the honest run (honest: its spec asks for the 60 cores it uses), and
// the neighbour's 90 s in both; measured, no anomaly.
func hamiUncapped(name string, honest bool) func() *builder {
	return func() *builder {
		b := newBuilder(name, 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
		b.namespace("sandbox", map[string]string{"team": "growth"})
		b.namespace("payments", map[string]string{"team": "payments"})
		g := b.gpu(h100, "hami")

		p := b.pod("sandbox", "batch", 0, 0)
		c := p.container("main", "nvidia.com/gpu", g.UUID+"-0")
		c.Limits = map[string]string{"nvidia.com/gpu": "1", rGPUMem: "4096"}
		cores := 0
		if honest {
			cores = 60
			c.Limits[rGPUCores] = "60"
		}
		c.process(79000, g.UUID, 3500, 0, 0, []segY{seg(0, 300, 0.6)})
		hamiAnnotate(b, p, hamiDevice(g.UUID, 4096, cores))

		n := b.pod("payments", "scorer", 0, 0)
		c = n.container("main", "nvidia.com/gpu", g.UUID+"-1")
		c.Limits = hamiLimits(30, 30000)
		c.process(79001, g.UUID, 25000, 0, 0, []segY{seg(0, 300, 0.1)})
		hamiAnnotate(b, n, hamiDevice(g.UUID, 30000, 30))

		b.forbid("kind", "noisy_neighbour")
		b.forbid("kind", "idle_allocation")
		return b
	}
}
