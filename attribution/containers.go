package attribution

// A pod's containers are numbered the way HAMi 2.9+ numbers its
// annotation's entries: init containers first (spec order, sidecars
// included), then the regular containers. Kubelet lists a running init
// container's devices like a container's, and its processes must find
// their container too, so every per-container index in this package uses
// this numbering.

// ctrCount is how many containers, init ones included, pod p has.
func ctrCount(p *PodMeta) int { return len(p.InitContainers) + len(p.Containers) }

// ctrMeta is container ci of pod p in that numbering.
func ctrMeta(p *PodMeta, ci int) *ContainerMeta {
	if ci < len(p.InitContainers) {
		return &p.InitContainers[ci]
	}
	return &p.Containers[ci-len(p.InitContainers)]
}

// containerIndex finds a container by name (-1 when the pod has none of
// that name). Names are unique across init and regular containers.
func containerIndex(p *PodMeta, name string) int {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return len(p.InitContainers) + i
		}
	}
	for i := range p.InitContainers {
		if p.InitContainers[i].Name == name {
			return i
		}
	}
	return -1
}
