package sim

import (
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// pod is one scenario pod with what pod-resources and metadata show of it.
type pod struct {
	start, end time.Duration
	meta       attribution.PodMeta // annotations as at the pod's start
	// edits are the pod's annotations after each annotationChanges entry,
	// in time order, built once so that a snapshot allocates nothing.
	edits []annotationVersion
	// containers are the init containers in spec order, then the regular
	// ones, as kubelet pod-resources lists them.
	containers []container
}

// annotationVersion is the whole annotation map in force from at on.
type annotationVersion struct {
	at          time.Duration
	annotations map[string]string
}

// container is what pod-resources lists for one container while it runs.
type container struct {
	name       string
	devices    []scenario.DeviceRequest
	claims     []scenario.Claim
	start, end time.Duration // listed when start <= t <= end
}

// buildPods prepares what pod-resources and metadata show of every pod.
// Init containers are listed during the run window the parser computed
// (a hand-built scenario must set Start and End on them); regular
// containers for the pod's whole life.
func (n *Node) buildPods(sc *scenario.Scenario) {
	for _, sp := range sc.Pods {
		p := &pod{start: sp.Start, end: orDefault(sp.End, sc.Duration)}
		p.meta = attribution.PodMeta{
			UID: sp.UID, Namespace: sp.Namespace, Name: sp.Name,
			Labels: copyMap(sp.Labels), Annotations: copyMap(sp.Annotations),
			StartTime: sc.Start.UTC().Add(sp.Start),
		}
		for _, c := range sp.InitContainers {
			p.meta.InitContainers = append(p.meta.InitContainers, attribution.ContainerMeta{
				Name: c.Name, ID: containerID(sp, c), Sidecar: c.Sidecar(),
				Limits: limitsOf(c), LimitsKnown: c.Limits != nil,
			})
			p.containers = append(p.containers, container{name: c.Name, devices: c.Devices, claims: c.Claims, start: c.Start, end: c.End})
		}
		for _, c := range sp.Containers {
			p.meta.Containers = append(p.meta.Containers, attribution.ContainerMeta{Name: c.Name, ID: containerID(sp, c),
				Limits: limitsOf(c), LimitsKnown: c.Limits != nil})
			p.containers = append(p.containers, container{name: c.Name, devices: c.Devices, claims: c.Claims, start: sp.ContainersStart(), end: p.end})
		}
		for _, ch := range sp.AnnotationChanges {
			p.edits = append(p.edits, annotationVersion{ch.At, sp.AnnotationsAt(ch.At)})
		}
		n.pods = append(n.pods, p)
	}
}

// aliveAt reports whether the pod exists at offset t (both ends inclusive).
func (p *pod) aliveAt(t time.Duration) bool { return p.start <= t && t <= p.end }

// runsAt reports whether pod-resources lists the container at offset t
// (both ends inclusive, like pods).
func (c *container) runsAt(t time.Duration) bool { return c.start <= t && t <= c.end }

// metaAt is the pod's metadata at offset t: its annotations with every
// change made at or before t. The maps are shared and read-only.
func (p *pod) metaAt(t time.Duration) attribution.PodMeta {
	m := p.meta
	for _, v := range p.edits {
		if v.at > t {
			break
		}
		m.Annotations = v.annotations
	}
	return m
}

// limitsOf copies a container's limits for its metadata; nil when the
// scenario sets none or does not say.
func limitsOf(c scenario.Container) map[string]string {
	if len(c.Limits) == 0 {
		return nil
	}
	return copyMap(c.Limits)
}
