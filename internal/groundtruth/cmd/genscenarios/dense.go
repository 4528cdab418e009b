package main

import "fmt"

// Dense node shape. The request was "8 H100s, 56 MIG instances on some and
// 48-replica MPS on others"; seven 1g instances fit on one GPU, so four GPUs
// run MIG with 7 instances each, every instance shared by 2 MPS replicas
// (56 MIG slices), and four GPUs run MPS with 48 replicas each.
const (
	denseMIGGPUs      = 4
	denseMPSGPUs      = 4
	denseInstances    = 7
	denseMIGReplicas  = 2
	denseMPSReplicas  = 48
	densePods         = 400
	denseProcesses    = 1000
	denseTeams        = 20
	denseReplaceStart = 5.0 // seconds between a pod's end and its successor's start
)

// denseSlot is one device ID kubelet can hand out.
type denseSlot struct {
	id, device, resource string
	mig                  bool
}

// denseNode builds the scale scenario: every slot is held for the whole run,
// some by one pod, the others by two pods one after the other, so that
// 400 pods run 1,000 processes whose activity changes every few minutes.
// The node has no replicas label (it could not say 2 and 48 at once), so the
// replica counts are the distinct IDs per device.
func denseNode(duration float64) *builder {
	b := newBuilder("dense", duration, map[string]string{
		lProduct: "NVIDIA-H100-80GB-HBM3", lStrategy: "mps", lMIG: "mixed"})
	for t := range denseTeams {
		b.namespace(fmt.Sprintf("team-%02d", t), map[string]string{"team": fmt.Sprintf("team-%02d", t)})
	}
	var slots []denseSlot
	for range denseMIGGPUs {
		g := b.gpu(h100, "mig")
		for range denseInstances {
			in := b.mig(g, "1g.10gb")
			for r := range denseMIGReplicas {
				slots = append(slots, denseSlot{fmt.Sprintf("%s::%d", in, r), in, "nvidia.com/mig-1g.10gb", true})
			}
		}
	}
	for range denseMPSGPUs {
		g := b.gpu(h100, "mps")
		g.MPS = &mpsY{ProcessView: "clients"}
		for r := range denseMPSReplicas {
			slots = append(slots, denseSlot{fmt.Sprintf("%s::%d", g.UUID, r), g.UUID, "nvidia.com/gpu", false})
		}
	}

	// The first len(slots)-(densePods-len(slots)) shuffled slots keep one pod,
	// the rest are handed over once half-way through.
	twice := make(map[int]bool)
	for _, si := range b.rng.Perm(len(slots))[:densePods-len(slots)] {
		twice[si] = true
	}
	threeProcs := denseProcesses - 2*densePods // pods with a third process
	pod, pid := 0, 100000
	for si, s := range slots {
		lives := [][2]float64{{0, duration}}
		if twice[si] {
			cut := roundT(duration * (0.3 + 0.4*b.rng.Float64()))
			lives = [][2]float64{{0, cut}, {cut + denseReplaceStart, duration}}
		}
		for _, life := range lives {
			procs := 2
			if pod < threeProcs {
				procs = 3
			}
			b.densePod(s, pod, life, procs, &pid, duration)
			pod++
		}
	}
	return b
}

// densePod adds one pod holding slot s with procs processes. On a MIG
// instance each replica keeps its processes under 0.48 in total, so the two
// replicas never exceed the instance; MPS clients may oversubscribe.
func (b *builder) densePod(s denseSlot, n int, life [2]float64, procs int, pid *int, duration float64) {
	ns := fmt.Sprintf("team-%02d", n%denseTeams)
	end := life[1]
	if end >= duration {
		end = 0
	}
	p := b.pod(ns, fmt.Sprintf("worker-%03d", n), life[0], end)
	c := p.container("main", s.resource, s.id)
	start, stop := life[0], life[1]
	if start > 0 {
		start += 0.5
	}
	if stop < duration {
		stop -= 0.5
	}
	for range procs {
		// Halved after the draw (the same random sequence as before):
		// 48 MPS replicas of up to three such processes must fit in the
		// GPU's framebuffer, which scenarios now enforce.
		hi, mem := 0.04, (200+b.rng.Intn(800))/2
		if s.mig {
			hi, mem = 0.48/float64(procs), 500+b.rng.Intn(1000)
		}
		step := float64(120 + b.rng.Intn(240))
		c.process(*pid, s.device, mem, start, stop, b.pattern(start, stop, step, 0, hi))
		*pid++
	}
}
