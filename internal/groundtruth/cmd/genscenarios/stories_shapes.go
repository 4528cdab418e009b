package main

import (
	"fmt"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

const (
	draGPU    = "gpu.nvidia.com"
	draDomain = "compute-domain.nvidia.com"

	lGKEStrategy = "cloud.google.com/gke-gpu-sharing-strategy"
	lGKEClients  = "cloud.google.com/gke-max-shared-clients-per-gpu"
)

// migRenamed: the mixed MIG strategy with time-slicing that renames the 1g
// resource nvidia.com/mig-1g.10gb.shared. Its replicas come from
// nvidia.com/mig-1g.10gb.replicas (2), never from nvidia.com/gpu.replicas
// (4). Two replicas share one 1g instance, one holds another alone (still
// a half), a 3g instance is unshared and a second GPU is held whole.
func migRenamed() *builder {
	b := newBuilder("mig-renamed", 300, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "4", lMIG: "mixed",
		migReplicas("1g.10gb"): "2"})
	b.namespace("serving", map[string]string{"team": "inference"})
	b.namespace("training", map[string]string{"team": "research"})
	g0 := b.gpu(a100, "mig")
	i0, i1, i2 := b.mig(g0, "1g.10gb"), b.mig(g0, "1g.10gb"), b.mig(g0, "1g.10gb")
	i3 := b.mig(g0, "3g.40gb")
	g1 := b.gpu(a100, "exclusive")
	shared := "nvidia.com/mig-1g.10gb.shared"

	for n, r := range [][2]float64{{0.3, 0.4}, {0.2, 0.3}} {
		c := b.pod("serving", fmt.Sprintf("chat-%d", n), 0, 0).container("srv", shared, fmt.Sprintf("%s::%d", i0, n))
		c.process(94000+n, i0, 4000, 0, 0, b.pattern(0, 300, 30, r[0], r[1]))
	}
	embed := b.pod("serving", "embed", 0, 0).container("srv", shared, i1+"::0")
	embed.process(94010, i1, 4000, 0, 0, b.pattern(0, 300, 30, 0.5, 0.7))
	rerank := b.pod("serving", "rerank", 0, 0).container("srv", shared, i2+"::1")
	rerank.process(94011, i2, 4000, 0, 0, b.pattern(0, 300, 30, 0.4, 0.6))
	train := b.pod("training", "finetune", 0, 0).container("main", "nvidia.com/mig-3g.40gb", i3)
	train.process(94020, i3, 30000, 0, 0, b.pattern(0, 300, 30, 0.6, 0.8))
	full := b.pod("training", "pretrain", 0, 0).container("main", "nvidia.com/gpu", g1.UUID)
	full.process(94030, g1.UUID, 70000, 0, 0, b.pattern(0, 300, 30, 0.7, 0.9))

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// draClaims: GPUs handed out by DRA (gpu.nvidia.com), mapped to GPUs and
// MIG instances through the node's ResourceSlices by their uuid attribute.
// A trainer claims a whole GPU plus a compute-domain channel (another
// driver: no GPU capacity); a server claims a MIG device; one claim's GPU
// is shared by a pod that leaves mid-run and, later, by a pod whose init
// container holds it while it runs; a claim's device has no uuid (its GPU
// stays unallocated, whatever its name suggests), another's uuid is on no
// GPU of this node.
func draClaims() *builder {
	b := newBuilder("dra-claims", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("research", map[string]string{"team": "research"})
	b.namespace("serving", map[string]string{"team": "inference"})
	b.namespace("sandbox", nil)
	g0, g1 := b.gpu(h100, "timeslicing"), b.gpu(h100, "exclusive")
	g2 := b.gpu(a100, "mig")
	mig := b.mig(g2, "3g.40gb")
	b.gpu(h100, "exclusive") // gpu-3: published without a uuid, so never allocated
	pool := b.f.Node.Name
	dev := func(name string, attrs ...string) sliceDeviceY {
		d := sliceDeviceY{Name: name}
		for k, v := range pairs(attrs) {
			if d.Attributes == nil {
				d.Attributes = map[string]scenario.Value{}
			}
			d.Attributes[k] = text(v)
		}
		return d
	}
	b.resourceSlice(draGPU, pool,
		dev("gpu-0", "type", "gpu", "uuid", g0.UUID),
		dev("gpu-1", "type", "gpu", "uuid", g1.UUID),
		dev("gpu-2-mig-1", "type", "mig", "uuid", mig, "parentUUID", g2.UUID, "profile", "3g.40gb"),
		dev("gpu-3", "type", "gpu", "productName", "NVIDIA H100 80GB HBM3"),
		dev("gpu-4", "type", "gpu", "uuid", "GPU-"+b.uuid()))
	b.resourceSlice(draDomain, pool, dev("channel-0", "type", "channel", "id", "0"))

	tr := b.pod("research", "trainer", 0, 0).container("main", "").
		claim("train-gpu", draGPU, pool, "gpu-1").claim("imex-channel", draDomain, pool, "channel-0")
	tr.process(95000, g1.UUID, 70000, 0, 0, b.pattern(0, 300, 30, 0.8, 0.95))
	srv := b.pod("serving", "mig-infer", 0, 0).container("server", "").claim("mig-gpu", draGPU, pool, "gpu-2-mig-1")
	srv.process(95001, mig, 20000, 0, 0, b.pattern(0, 300, 30, 0.4, 0.6))

	a := b.pod("serving", "shared-a", 0, 0).container("worker", "").claim("shared-gpu", draGPU, pool, "gpu-0")
	a.process(95010, g0.UUID, 10000, 0, 0, b.pattern(0, 300, 30, 0.2, 0.3))
	sb := b.pod("serving", "shared-b", 0, 150.5).container("worker", "").claim("shared-gpu", draGPU, pool, "gpu-0")
	sb.process(95011, g0.UUID, 10000, 0, 0, b.pattern(0, 150.5, 30, 0.3, 0.4))
	c := b.pod("serving", "shared-c", 200.5, 0)
	pre := c.initContainer("preload", 230.5, "").claim("shared-gpu", draGPU, pool, "gpu-0")
	pre.process(95012, g0.UUID, 6000, 0, 0, []segY{seg(200.5, 230.5, 0.4)})
	cw := c.container("worker", "").claim("shared-gpu", draGPU, pool, "gpu-0")
	cw.process(95013, g0.UUID, 10000, 0, 0, b.pattern(230.5, 300, 30, 0.2, 0.3))

	b.pod("sandbox", "no-uuid", 0, 0).container("main", "").claim("gpu", draGPU, pool, "gpu-3")
	b.pod("sandbox", "elsewhere", 0, 0).container("main", "").claim("gpu", draGPU, pool, "gpu-4")

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// gkeSharing: GKE's device plugin IDs name GPUs by NVML minor, which here
// differs from the index, and MIG instances by GPU-instance ID (2, 3, 9,
// 13, not 1..n). Three time-sharing clients share a GPU (the clients label
// says 3); one GPU is held whole; a MIG GPU has a whole 3g instance, one
// 1g instance shared by two vgpu clients, and a 2g instance with one.
func gkeSharing() *builder {
	b := newBuilder("gke-sharing", 300, map[string]string{
		"cloud.google.com/gke-accelerator": "nvidia-tesla-a100", lGKEStrategy: "time-sharing", lGKEClients: "3"})
	b.namespace("apps", map[string]string{"team": "apps"})
	b.namespace("ml", map[string]string{"team": "ml"})
	minor := func(g *gpuY, m int) { g.Minor = scenario.IntValue(m) }
	g0, g1, g2 := b.gpu(a100, "timeslicing"), b.gpu(a100, "exclusive"), b.gpu(a100, "mig")
	minor(g0, 2)
	minor(g1, 0)
	minor(g2, 1)
	gi2, gi3 := b.migGI(g2, "3g.40gb", 2), b.migGI(g2, "2g.20gb", 3)
	gi9 := b.migGI(g2, "1g.10gb", 9)
	b.migGI(g2, "1g.10gb", 13)

	for k, r := range [][2]float64{{0.2, 0.25}, {0.1, 0.15}, {0.25, 0.3}} {
		c := b.pod("apps", fmt.Sprintf("web-%d", k), 0, 0).container("app", "nvidia.com/gpu", fmt.Sprintf("nvidia2/vgpu%d", k))
		c.process(96000+k, g0.UUID, 5000, 0, 0, b.pattern(0, 300, 30, r[0], r[1]))
	}
	whole := b.pod("ml", "trainer", 0, 0).container("main", "nvidia.com/gpu", "nvidia0")
	whole.process(96010, g1.UUID, 60000, 0, 0, b.pattern(0, 300, 30, 0.6, 0.8))
	big := b.pod("ml", "mig-train", 0, 0).container("main", "nvidia.com/gpu", "nvidia1/gi2")
	big.process(96020, gi2, 30000, 0, 0, b.pattern(0, 300, 30, 0.5, 0.7))
	for k, r := range [][2]float64{{0.3, 0.4}, {0.2, 0.3}} {
		c := b.pod("apps", fmt.Sprintf("mig-web-%d", k), 0, 0).container("app", "nvidia.com/gpu", fmt.Sprintf("nvidia1/gi9/vgpu%d", k))
		c.process(96030+k, gi9, 3000, 0, 0, b.pattern(0, 300, 30, r[0], r[1]))
	}
	solo := b.pod("apps", "mig-solo", 0, 0).container("app", "nvidia.com/gpu", "nvidia1/gi3/vgpu0")
	solo.process(96040, gi3, 6000, 0, 0, b.pattern(0, 300, 30, 0.4, 0.5))

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}
