package main

import "fmt"

const (
	aHAMi     = "hami.io/vgpu-devices-allocated"
	aHAMiNode = "hami.io/vgpu-node"
)

// hamiDevice is one device of a container's HAMi annotation entry.
func hamiDevice(uuid string, memMiB, cores int) string {
	return fmt.Sprintf("%s,NVIDIA,%d,%d:", uuid, memMiB, cores)
}

// hamiAnnotate sets a pod's HAMi annotation from its per-container entries
// (each ended by ";", as HAMi writes them).
func hamiAnnotate(b *builder, p *podY, entries ...string) {
	v := ""
	for _, e := range entries {
		v += e + ";"
	}
	p.Annotations = map[string]string{aHAMi: v, aHAMiNode: b.f.Node.Name}
}

// hamiInitContainers: HAMi 2.9 writes one annotation entry per container in
// spec order, init containers first: an istio-init style init container and
// a native istio-proxy sidecar without GPUs (empty entries), a cache warmer
// init container with half of GPU 0, then the model server. An older-HAMi
// pod lists its regular containers only, although it has an init
// container: the entry count tells the two apart.
func hamiInitContainers() *builder {
	b := newBuilder("hami-initcontainers", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("llm", map[string]string{"team": "genai"})
	b.namespace("legacy", map[string]string{"team": "platform"})
	g0, g1 := b.gpu(h100, "hami"), b.gpu(h100, "hami")

	rag := b.pod("llm", "rag-server", 0, 0)
	rag.initContainer("istio-init", 2, "")
	rag.sidecar("istio-proxy")
	warm := rag.initContainer("warm-cache", 40, "nvidia.com/gpu", g0.UUID+"-0")
	warm.process(91000, g0.UUID, 8000, 0, 0, []segY{seg(2, 40, 0.5)})
	model := rag.container("model", "nvidia.com/gpu", g0.UUID+"-1")
	model.process(91001, g0.UUID, 20000, 0, 0, b.pattern(40, 300, 20, 0.2, 0.28))
	hamiAnnotate(b, rag, "", "", hamiDevice(g0.UUID, 8000, 50), hamiDevice(g0.UUID, 20000, 30))

	old := b.pod("legacy", "batch-worker", 0, 0)
	old.initContainer("migrate", 5, "")
	worker := old.container("worker", "nvidia.com/gpu", g1.UUID+"-0")
	worker.process(91002, g1.UUID, 10000, 0, 0, b.pattern(5, 300, 20, 0.3, 0.38))
	old.container("log-shipper", "")
	hamiAnnotate(b, old, hamiDevice(g1.UUID, 0, 40), "")

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// hamiKubeletMismatch: HAMi's device plugin hands kubelet IDs that need
// not name the GPUs the annotation gives (HAMi issue 1741: a two-GPU
// trainer gets two IDs of GPU 0 and the annotation's GPUs 1 and 2). An
// inference pod's kubelet ID names GPU 3, its annotation GPU 0. A batch
// job's process also runs on GPU 0, which its annotation does not name:
// that usage stays its own, and the job is estimated.
func hamiKubeletMismatch() *builder {
	b := newBuilder("hami-kubelet-mismatch", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("research", map[string]string{"team": "research"})
	b.namespace("serving", map[string]string{"team": "inference"})
	b.namespace("batch", map[string]string{"team": "batch"})
	g := []*gpuY{b.gpu(h100, "hami"), b.gpu(h100, "hami"), b.gpu(h100, "hami"), b.gpu(h100, "hami")}

	train := b.pod("research", "train-2gpu", 0, 0)
	tr := train.container("trainer", "nvidia.com/gpu", g[0].UUID+"-0", g[0].UUID+"-1")
	tr.process(92000, g[1].UUID, 38000, 0, 0, b.pattern(0, 300, 30, 0.5, 0.6))
	tr.process(92001, g[2].UUID, 38000, 0, 0, b.pattern(0, 300, 30, 0.5, 0.6))
	hamiAnnotate(b, train, hamiDevice(g[1].UUID, 40000, 60)+hamiDevice(g[2].UUID, 40000, 60))

	infer := b.pod("serving", "infer", 0, 0)
	srv := infer.container("server", "nvidia.com/gpu", g[3].UUID+"-0")
	srv.process(92002, g[0].UUID, 9000, 0, 0, b.pattern(0, 300, 30, 0.15, 0.2))
	hamiAnnotate(b, infer, hamiDevice(g[0].UUID, 10000, 25))

	job := b.pod("batch", "nightly", 0, 0)
	j := job.container("job", "nvidia.com/gpu", g[3].UUID+"-1")
	j.process(92003, g[3].UUID, 12000, 0, 0, b.pattern(0, 300, 30, 0.2, 0.25))
	j.process(92004, g[0].UUID, 2000, 60, 240, []segY{seg(60, 240, 0.1)})
	hamiAnnotate(b, job, hamiDevice(g[3].UUID, 0, 30))

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// hamiAnnotationEdit: tenants patch their own pods' HAMi annotations while
// they run, one cores 25 -> 1, one its memory down and onto the other GPU.
// The value first observed stays in force: neither pays less.
func hamiAnnotationEdit() *builder {
	b := newBuilder("hami-annotation-edit", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("team-a", map[string]string{"team": "alpha"})
	b.namespace("team-b", map[string]string{"team": "beta"})
	g0, g1 := b.gpu(h100, "hami"), b.gpu(h100, "hami")

	a := b.pod("team-a", "tenant-a", 0, 0)
	a.container("model", "nvidia.com/gpu", g0.UUID+"-0").
		process(93000, g0.UUID, 18000, 0, 0, b.pattern(0, 300, 20, 0.18, 0.25))
	hamiAnnotate(b, a, hamiDevice(g0.UUID, 20000, 25))
	a.annotate(120, map[string]string{aHAMi: hamiDevice(g0.UUID, 20000, 1) + ";"})

	bb := b.pod("team-b", "tenant-b", 0, 0)
	bb.container("model", "nvidia.com/gpu", g0.UUID+"-1").
		process(93001, g0.UUID, 15000, 0, 0, b.pattern(0, 300, 20, 0.1, 0.15))
	hamiAnnotate(b, bb, hamiDevice(g0.UUID, 16384, 0))
	bb.annotate(200, map[string]string{aHAMi: hamiDevice(g1.UUID, 1024, 0) + ";", "example.com/edited-by": "tenant-b"})

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}
