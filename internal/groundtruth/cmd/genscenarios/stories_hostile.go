package main

import "fmt"

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
