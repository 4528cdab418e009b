package kubemeta

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuledger/gpuledger/attribution"
)

// build turns the informer caches into a Metadata. Maps are copied: the
// cached objects belong to the informers.
func (s *InformerSource) build() attribution.Metadata {
	nss, pods := s.namespaces.List(), s.pods.List()
	m := attribution.Metadata{
		NodeLabels: maps.Clone(s.nodeLabels()),
		Namespaces: make(map[string]map[string]string, len(nss)),
		Pods:       make([]attribution.PodMeta, 0, len(pods)),
	}
	for _, obj := range nss {
		if ns, ok := obj.(*corev1.Namespace); ok {
			m.Namespaces[ns.Name] = maps.Clone(ns.Labels)
		}
	}
	for _, obj := range pods {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		// The field selector already scopes the watch; checking again keeps
		// a stray object (or an API server that ignores selectors) out.
		if p.Spec.NodeName != s.node || finished(p) {
			continue
		}
		m.Pods = append(m.Pods, podMeta(p))
	}
	if s.slices != nil {
		m.DRADevices = draDevices(s.slices.List(), s.node)
	}
	// Stores return map order; a stable order keeps the output stable.
	slices.SortFunc(m.Pods, func(a, b attribution.PodMeta) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	return m
}

// finished reports whether a pod's containers have all terminated for good.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func podMeta(p *corev1.Pod) attribution.PodMeta {
	pm := attribution.PodMeta{
		UID:         string(p.UID),
		Namespace:   p.Namespace,
		Name:        p.Name,
		Labels:      maps.Clone(p.Labels),
		Annotations: maps.Clone(p.Annotations),
		Containers:  make([]attribution.ContainerMeta, 0, len(p.Spec.Containers)),
	}
	if p.Status.StartTime != nil {
		pm.StartTime = p.Status.StartTime.UTC() // client-go decodes times into time.Local
	}
	for _, c := range p.Spec.Containers {
		pm.Containers = append(pm.Containers, attribution.ContainerMeta{Name: c.Name, ID: containerID(p.Status.ContainerStatuses, c.Name)})
	}
	// Init containers apart and in spec order: HAMi's annotation lists
	// them first, and sidecars (restartPolicy Always) run beside the
	// regular containers and may hold GPUs too.
	if len(p.Spec.InitContainers) > 0 {
		pm.InitContainers = make([]attribution.ContainerMeta, 0, len(p.Spec.InitContainers))
	}
	for _, c := range p.Spec.InitContainers {
		pm.InitContainers = append(pm.InitContainers, attribution.ContainerMeta{
			Name:    c.Name,
			ID:      containerID(p.Status.InitContainerStatuses, c.Name),
			Sidecar: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways,
		})
	}
	return pm
}

// containerID returns the runtime ID of the named container without its
// "<runtime>://" prefix, or "" before the container was created.
func containerID(statuses []corev1.ContainerStatus, name string) string {
	for _, st := range statuses {
		if st.Name == name {
			if _, id, ok := strings.Cut(st.ContainerID, "://"); ok {
				return id
			}
			return st.ContainerID
		}
	}
	return ""
}
