package main

import "fmt"

// Node labels as GPU feature discovery and the device plugins set them.
const (
	lProduct  = "nvidia.com/gpu.product"
	lStrategy = "nvidia.com/gpu.sharing-strategy"
	lReplicas = "nvidia.com/gpu.replicas"
	lMIG      = "nvidia.com/mig.strategy"

	a100 = "A100-SXM4-80GB"
	h100 = "H100-SXM5-80GB"
)

// migReplicas is the replicas label of a MIG profile's resource.
func migReplicas(profile string) string { return "nvidia.com/mig-" + profile + ".replicas" }

// story is one checked-in scenario.
type story struct {
	name  string
	build func() *builder
}

var stories = []story{
	{"exclusive-basic", exclusiveBasic},
	{"timeslicing-hostile", timeslicingHostile},
	{"mps-clients", func() *builder { return mpsHostile("mps-clients", "clients") }},
	{"mps-server-view", func() *builder { return mpsHostile("mps-server-view", "server") }},
	{"mig-hostile", migHostile},
	{"mig-timeslicing", migTimeslicing},
	{"hami-mixed", hamiMixed},
	{"churn-pidreuse", churnPIDReuse},
	{"forged-team", forgedTeam},
	{"no-replicas-label", noReplicasLabel},
	{"hami-initcontainers", hamiInitContainers},
	{"hami-kubelet-mismatch", hamiKubeletMismatch},
	{"hami-annotation-edit", hamiAnnotationEdit},
	{"mig-renamed", migRenamed},
	{"dra-claims", draClaims},
	{"gke-sharing", gkeSharing},
	{"memory-leak-timeslicing", memoryLeakTimeslicing},
	{"memory-leak-mps", memoryLeakMPS},
	{"memory-flat-large", memoryFlatLarge},
	{"memory-sawtooth", memorySawtooth},
	{"memory-leak-mig", memoryLeakMIG},
	{"garbage-replicas", garbageReplicas},
	{"hami-zero-share", hamiZeroShare},
	{"hami-edit-before-start", hamiEditBeforeStart},
	{"hami-duplicate-gpu", hamiDuplicateGPU},
	{"memory-leak-late-pod", memoryLeakLatePod},
	{"mig-compute-instance", migComputeInstance},
	{"hami-ghost-gpu", hamiGhostGPU("hami-ghost-gpu", false)},
	{"hami-ghost-gpu-honest", hamiGhostGPU("hami-ghost-gpu-honest", true)},
	{"hami-uncapped", hamiUncapped("hami-uncapped", false)},
	{"hami-uncapped-honest", hamiUncapped("hami-uncapped-honest", true)},
}

// exclusiveBasic: a trainer keeps its GPU ~90% busy, a notebook holds a
// whole GPU for a few seconds of work, a third GPU is free.
func exclusiveBasic() *builder {
	b := newBuilder("exclusive-basic", 480, map[string]string{
		lProduct: "NVIDIA-H100-80GB-HBM3", lStrategy: "none"})
	b.namespace("ml", map[string]string{"team": "training-platform"})
	b.namespace("notebooks", nil)
	g0, g1 := b.gpu(h100, "exclusive"), b.gpu(h100, "exclusive")
	b.gpu(h100, "exclusive") // nobody asks for it: unallocated

	trainer := b.pod("ml", "trainer", 0, 0).container("main", "nvidia.com/gpu", g0.UUID)
	trainer.process(11000, g0.UUID, 61000, 0, 0, b.pattern(0, 480, 30, 0.86, 0.94))
	nb := b.pod("notebooks", "nb-alice", 0, 0).container("jupyter", "nvidia.com/gpu", g1.UUID)
	nb.process(11100, g1.UUID, 2600, 0, 0, []segY{seg(60, 63, 0.5), seg(200, 202, 0.4), seg(400, 401, 0.6)})

	b.expect("kind", "idle_allocation", "namespace", "notebooks", "pod", "nb-alice")
	b.forbid("kind", "idle_allocation", "namespace", "ml", "pod", "trainer")
	b.forbid("kind", "noisy_neighbour")
	return b
}

// timeslicingHostile: four replicas of one GPU; a backfill job takes 84%
// of it while three services each want 5%, below their quarter.
func timeslicingHostile() *builder {
	b := newBuilder("timeslicing-hostile", 300, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "4"})
	g := b.gpu(a100, "timeslicing")
	tenants := []struct{ ns, team, pod string }{
		{"batch-jobs", "batch", "embeddings-backfill"},
		{"ranking", "ranking", "ranker"},
		{"search", "search", "query-encoder"},
		{"ads", "ads", "ctr-model"},
	}
	for i, t := range tenants {
		b.namespace(t.ns, map[string]string{"team": t.team})
		c := b.pod(t.ns, t.pod, 0, 0).container("main", "nvidia.com/gpu.shared", fmt.Sprintf("%s::%d", g.UUID, i))
		busy := b.pattern(0, 300, 20, 0.04, 0.05)
		if i == 0 {
			busy = b.pattern(0, 300, 20, 0.83, 0.84)
		}
		c.process(21000+i, g.UUID, 8000, 0, 0, busy)
	}
	b.expect("kind", "noisy_neighbour", "namespace", "batch-jobs", "pod", "embeddings-backfill")
	for _, t := range tenants[1:] {
		b.expect("kind", "starved", "namespace", t.ns, "pod", t.pod)
		b.forbid("kind", "noisy_neighbour", "namespace", t.ns, "pod", t.pod)
	}
	b.forbid("kind", "idle_allocation")
	return b
}

// mpsHostile: four MPS clients; a trainer ramps up to 0.9 after 30 s while
// three inference servers each ask 0.08-0.2, so the GPU is oversubscribed
// (MPS allows it) and the trainer takes most of each sample period. With the
// server view NVML shows only nvidia-cuda-mps-server, so usage per client is
// only estimable and no finding can be expected.
func mpsHostile(name, view string) *builder {
	b := newBuilder(name, 300, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "mps", lReplicas: "4"})
	b.namespace("training", map[string]string{"team": "research"})
	b.namespace("serving", map[string]string{"team": "inference"})
	g := b.gpu(a100, "mps")
	g.MPS = &mpsY{ProcessView: view}
	trainer := b.pod("training", "trainer", 0, 0).container("main", "nvidia.com/gpu", g.UUID+"::0")
	trainer.process(31000, g.UUID, 30000, 0, 0, []segY{seg(0, 30, 0.3), seg(30, 300, 0.9)})
	for i := 1; i <= 3; i++ {
		pod := fmt.Sprintf("infer-%d", i)
		c := b.pod("serving", pod, 0, 0).container("server", "nvidia.com/gpu", fmt.Sprintf("%s::%d", g.UUID, i))
		// Changes land between driver sample periods (every 15.05 s).
		c.process(31000+i, g.UUID, 6000, 0, 0, b.pattern(0, 300, 15.05, 0.08, 0.2))
		if view == "clients" {
			b.expect("kind", "starved", "namespace", "serving", "pod", pod)
			b.forbid("kind", "noisy_neighbour", "namespace", "serving", "pod", pod)
		}
	}
	if view == "clients" {
		b.expect("kind", "noisy_neighbour", "namespace", "training", "pod", "trainer")
	}
	b.forbid("kind", "idle_allocation")
	return b
}

// migHostile: five tenants on hardware-isolated MIG instances; one runs
// flat out on its 2g instance, which must not be flagged as noisy.
func migHostile() *builder {
	b := newBuilder("mig-hostile", 300, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "none", lMIG: "mixed"})
	g := b.gpu(a100, "mig")
	b.namespace("research-sandbox", map[string]string{"team": "research"})
	b.namespace("serving", map[string]string{"team": "inference"})
	big := []string{b.mig(g, "2g.20gb"), b.mig(g, "2g.20gb")}
	small := []string{b.mig(g, "1g.10gb"), b.mig(g, "1g.10gb"), b.mig(g, "1g.10gb")}

	miner := b.pod("research-sandbox", "hash-bench", 0, 0).container("main", "nvidia.com/mig-2g.20gb", big[0])
	miner.process(41000, big[0], 18000, 0, 0, []segY{seg(0, 300, 1)})
	ranker := b.pod("serving", "ranker", 0, 0).container("main", "nvidia.com/mig-2g.20gb", big[1])
	ranker.process(41001, big[1], 15000, 0, 0, b.pattern(0, 300, 30, 0.5, 0.7))
	for i, in := range small {
		c := b.pod("serving", fmt.Sprintf("infer-%d", i), 0, 0).container("main", "nvidia.com/mig-1g.10gb", in)
		c.process(41002+i, in, 7000, 0, 0, b.pattern(0, 300, 30, 0.2, 0.5))
	}
	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "starved")
	b.forbid("kind", "idle_allocation")
	return b
}

// migTimeslicing: MIG instances shared by time-slicing replicas (3 per
// profile, from the per-profile labels: the whole-GPU label never applies
// to MIG resources). Three replicas share the 3g instance, two the 2g one
// (the second joins late), one holds a 1g instance alone and the last 1g
// is free.
func migTimeslicing() *builder {
	b := newBuilder("mig-timeslicing", 360, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "3", lMIG: "mixed",
		migReplicas("3g.40gb"): "3", migReplicas("2g.20gb"): "3", migReplicas("1g.10gb"): "3"})
	b.namespace("serving", map[string]string{"team": "inference"})
	g := b.gpu(a100, "mig")
	i3, i2, i1 := b.mig(g, "3g.40gb"), b.mig(g, "2g.20gb"), b.mig(g, "1g.10gb")
	b.mig(g, "1g.10gb")

	ranges := [][2]float64{{0.3, 0.45}, {0.2, 0.3}, {0.1, 0.2}}
	for n, r := range ranges {
		c := b.pod("serving", fmt.Sprintf("llm-%d", n), 0, 0).container("srv", "nvidia.com/mig-3g.40gb", fmt.Sprintf("%s::%d", i3, n))
		c.process(51000+n, i3, 9000, 0, 0, b.pattern(0, 360, 30, r[0], r[1]))
	}
	emb := b.pod("serving", "embed-0", 0, 0).container("srv", "nvidia.com/mig-2g.20gb", i2+"::0")
	emb.process(51010, i2, 6000, 0, 0, b.pattern(0, 360, 30, 0.4, 0.55))
	late := b.pod("serving", "embed-1", 120.5, 0).container("srv", "nvidia.com/mig-2g.20gb", i2+"::1")
	late.process(51011, i2, 6000, 121, 0, b.pattern(121, 360, 30, 0.3, 0.4))
	solo := b.pod("serving", "rerank", 0, 0).container("srv", "nvidia.com/mig-1g.10gb", i1+"::0")
	solo.process(51020, i1, 4000, 0, 0, b.pattern(0, 360, 30, 0.5, 0.9))

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// hamiMixed: HAMi splits one H100 by cores (40/40) and by memory (20000 MiB
// with cores 0), more than the whole GPU, so the shares are scaled down. A
// fourth pod's annotation names the node's other GPU while kubelet's ID
// names the first: the annotation says which GPU it holds (5% of the
// second), and its process on the first GPU stays its own usage, marked
// estimated.
func hamiMixed() *builder {
	b := newBuilder("hami-mixed", 300, map[string]string{lProduct: "NVIDIA-H100-80GB-HBM3"})
	b.namespace("llm", map[string]string{"team": "genai"})
	b.namespace("growth", map[string]string{"team": "growth"})
	g0, g1 := b.gpu(h100, "hami"), b.gpu(h100, "hami")
	pods := []struct {
		ns, name, annotation string
		lo, hi               float64
	}{
		{"llm", "chat-0", g0.UUID + ",NVIDIA,24000,40:;", 0.2, 0.28},
		{"llm", "chat-1", g0.UUID + ",NVIDIA,24000,40:;", 0.15, 0.28},
		{"llm", "embed", g0.UUID + ",NVIDIA,20000,0:;", 0.1, 0.2},
		{"growth", "scraper", g1.UUID + ",NVIDIA,4000,5:;", 0.1, 0.2},
	}
	for i, p := range pods {
		pod := b.pod(p.ns, p.name, 0, 0)
		pod.Annotations = map[string]string{
			"hami.io/vgpu-devices-allocated": p.annotation,
			"hami.io/vgpu-node":              "sim-hami-mixed",
		}
		c := pod.container("model", "nvidia.com/gpu", fmt.Sprintf("%s-%d", g0.UUID, i))
		c.process(61000+i, g0.UUID, 12000, 0, 0, b.pattern(0, 300, 20, p.lo, p.hi))
	}
	b.forbid("kind", "noisy_neighbour")
	// The scraper holds GPU 1 and runs on GPU 0: whether that is an idle
	// allocation depends on the detector's view (per GPU or per
	// container), which the contract leaves open.
	b.forbid("kind", "idle_allocation", "namespace", "llm")
	return b
}

// churnPIDReuse: batch jobs come and go at x.3 s and x.7 s; job-b reuses
// job-a's slot and, 3 s after job-a's process exited, its PID. A host
// process (a monitoring probe outside kubepods) is unattributed.
func churnPIDReuse() *builder {
	b := newBuilder("churn-pidreuse", 360, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing", lReplicas: "4"})
	b.namespace("jobs", map[string]string{"team": "batch"})
	g := b.gpu(a100, "timeslicing")
	id := func(n int) string { return fmt.Sprintf("%s::%d", g.UUID, n) }

	steady := b.pod("jobs", "steady", 0, 0).container("worker", "nvidia.com/gpu.shared", id(0))
	steady.process(31000, g.UUID, 4000, 0, 0, b.pattern(0, 360, 30, 0.2, 0.3))
	a := b.pod("jobs", "job-a", 10.3, 120.7).container("worker", "nvidia.com/gpu.shared", id(1))
	a.process(31001, g.UUID, 3000, 10.7, 120.3, []segY{seg(10.7, 120.3, 0.3)})
	bb := b.pod("jobs", "job-b", 122.7, 300.3).container("worker", "nvidia.com/gpu.shared", id(1))
	bb.process(31001, g.UUID, 3000, 123.3, 299.7, []segY{seg(123.3, 299.7, 0.35)})
	c := b.pod("jobs", "job-c", 45.3, 0).container("worker", "nvidia.com/gpu.shared", id(2))
	c.process(31003, g.UUID, 3000, 46.7, 359.3, b.pattern(46.7, 359.3, 40, 0.15, 0.2))
	d := b.pod("jobs", "job-d", 200.7, 330.3).container("worker", "nvidia.com/gpu.shared", id(3))
	d.process(31004, g.UUID, 3000, 201.3, 329.7, []segY{seg(201.3, 329.7, 0.1)})
	b.host(700, g.UUID, 300, []segY{seg(0, 360, 0.03)})

	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// forgedTeam: team labels. A payments pod labels itself marketing (the
// namespace label wins); a namespace without a team label lets its pod's
// label count (vision); pods label themselves into finance's bill where
// their namespace has no team label, an empty one, or one under a
// differently cased key: finance is a labelled namespace's team, so their
// namespaces pay; a namespace with neither bills the namespace name.
func forgedTeam() *builder {
	b := newBuilder("forged-team", 180, map[string]string{
		lProduct: "NVIDIA-H100-80GB-HBM3", lStrategy: "time-slicing", lReplicas: "8"})
	b.namespace("payments", map[string]string{"team": "payments"})
	b.namespace("ml-research", map[string]string{"env": "dev"})
	b.namespace("sandbox", nil)
	b.namespace("finance", map[string]string{"team": "finance"})
	b.namespace("blank-label", map[string]string{"team": ""})
	b.namespace("cased-key", map[string]string{"Team": "ops"})
	g := b.gpu(h100, "timeslicing")
	pods := []struct {
		ns, name, team string
		frac           float64
	}{
		{"payments", "fraud-scorer", "marketing", 0.3},
		{"ml-research", "vision-train", "vision", 0.2},
		{"sandbox", "scratch", "", 0.05},
		{"sandbox", "free-rider", "finance", 0.05},
		{"blank-label", "free-rider", "finance", 0.05},
		{"cased-key", "free-rider", "FINANCE", 0.05},
		{"finance", "ledger-close", "", 0.05},
	}
	for i, p := range pods {
		pod := b.pod(p.ns, p.name, 0, 0)
		if p.team != "" {
			pod.Labels = map[string]string{"team": p.team, "app": p.name}
		}
		c := pod.container("main", "nvidia.com/gpu.shared", fmt.Sprintf("%s::%d", g.UUID, i))
		c.process(71000+i, g.UUID, 5000, 0, 0, []segY{seg(0, 180, p.frac)})
	}
	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// noReplicasLabel: time-slicing without nvidia.com/gpu.replicas; the
// replica count is the three distinct ::<n> IDs seen, so each holds 1/3.
func noReplicasLabel() *builder {
	b := newBuilder("no-replicas-label", 180, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "time-slicing"})
	b.namespace("dev", map[string]string{"team": "platform"})
	g := b.gpu(a100, "timeslicing")
	for i := range 3 {
		c := b.pod("dev", fmt.Sprintf("svc-%d", i), 0, 0).container("main", "nvidia.com/gpu.shared", fmt.Sprintf("%s::%d", g.UUID, i))
		c.process(81000+i, g.UUID, 2000, 0, 0, b.pattern(0, 180, 30, 0.2, 0.3))
	}
	b.forbid("kind", "noisy_neighbour")
	b.forbid("kind", "idle_allocation")
	return b
}

// migComputeInstance: an A100 cut into a 3g.40gb GPU instance holding one
// 1-slice compute instance (1c.3g.40gb, as mig-parted can configure it and
// the device plugin lists it), a plain 3g.40gb and a 1g.10gb. The compute
// instance is charged its one compute slice, 1/7 of the GPU (the GPU
// instance's other two slices stay unallocated), whether the collector
// reads the slice count from NVML's attributes or from the name.
func migComputeInstance() *builder {
	b := newBuilder("mig-compute-instance", 300, map[string]string{
		lProduct: "NVIDIA-A100-SXM4-80GB", lStrategy: "none", lMIG: "mixed"})
	g := b.gpu(a100, "mig")
	b.namespace("research", map[string]string{"team": "research"})
	ci, plain, small := b.mig(g, "1c.3g.40gb"), b.mig(g, "3g.40gb"), b.mig(g, "1g.10gb")
	probe := b.pod("research", "probe", 0, 0).container("main", "nvidia.com/mig-1c.3g.40gb", ci)
	probe.process(43000, ci, 12000, 0, 0, b.pattern(0, 300, 30, 0.4, 0.8))
	train := b.pod("research", "train", 0, 0).container("main", "nvidia.com/mig-3g.40gb", plain)
	train.process(43001, plain, 30000, 0, 0, b.pattern(0, 300, 30, 0.6, 0.9))
	nb := b.pod("research", "notebook", 60, 0).container("main", "nvidia.com/mig-1g.10gb", small)
	nb.process(43002, small, 5000, 0, 0, b.pattern(60, 300, 30, 0.1, 0.3))
	b.forbid("kind", "noisy_neighbour")
	return b
}
