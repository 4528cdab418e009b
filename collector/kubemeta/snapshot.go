package kubemeta

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
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
		pm.Containers = append(pm.Containers, attribution.ContainerMeta{Name: c.Name, ID: containerID(p.Status.ContainerStatuses, c.Name),
			Limits: extendedLimits(c.Resources), LimitsKnown: true})
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
			Limits:  extendedLimits(c.Resources), LimitsKnown: true,
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

// maxLimits bounds the extended resources kept per container; a spec with
// more is kept in part (the API server already bounds a pod's size).
const maxLimits = 32

// extendedLimits are a container's extended-resource limits (names with a
// '/': nvidia.com/gpu, nvidia.com/gpucores, ...), a request standing in
// for a name with no limit, as HAMi reads them. Values are decimal
// integers where the quantity is one, else the quantity as written. Nil
// when there are none, so most pods cost no map.
func extendedLimits(r corev1.ResourceRequirements) map[string]string {
	var out map[string]string
	add := func(rl corev1.ResourceList) {
		for name, q := range rl {
			if !strings.Contains(string(name), "/") || len(out) >= maxLimits {
				continue
			}
			if _, ok := out[string(name)]; ok {
				continue
			}
			if out == nil {
				out = make(map[string]string, 4)
			}
			if v, ok := q.AsInt64(); ok {
				out[string(name)] = strconv.FormatInt(v, 10)
			} else {
				out[string(name)] = q.String()
			}
		}
	}
	add(r.Limits)
	add(r.Requests)
	return out
}
