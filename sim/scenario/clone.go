package scenario

import (
	"maps"
	"strings"
)

// Clone returns a deep copy of s that shares no memory with it, strings
// included. Parsing a large scenario allocates far more garbage than the
// scenario it keeps, and the kept strings and slices lie scattered through
// that garbage, each pinning a mostly empty heap span for as long as the
// scenario lives; a clone made after a GC packs them together (simulate
// does this: 9 MiB less resident memory on the 6-hour dense node).
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.APIVersion, c.Kind, c.Name, c.Dir = strings.Clone(s.APIVersion), strings.Clone(s.Kind), strings.Clone(s.Name), strings.Clone(s.Dir)
	c.Node = Node{Name: strings.Clone(s.Node.Name), Labels: cloneMap(s.Node.Labels),
		ResourceSlices: cloneEach(s.Node.ResourceSlices, cloneResourceSlice)}
	c.Namespaces = cloneEach(s.Namespaces, func(n Namespace) Namespace {
		return Namespace{Name: strings.Clone(n.Name), Labels: cloneMap(n.Labels)}
	})
	c.GPUs = cloneEach(s.GPUs, func(g GPU) GPU {
		g.UUID, g.Model, g.Mode, g.MPSProcessView = strings.Clone(g.UUID), strings.Clone(g.Model), strings.Clone(g.Mode), strings.Clone(g.MPSProcessView)
		g.MIGInstances = cloneEach(g.MIGInstances, func(m MIGInstance) MIGInstance {
			m.UUID, m.Profile = strings.Clone(m.UUID), strings.Clone(m.Profile)
			return m
		})
		return g
	})
	c.Pods = cloneEach(s.Pods, func(p Pod) Pod {
		p.UID, p.Namespace, p.Name = strings.Clone(p.UID), strings.Clone(p.Namespace), strings.Clone(p.Name)
		p.Labels, p.Annotations = cloneMap(p.Labels), cloneMap(p.Annotations)
		p.Containers = cloneEach(p.Containers, cloneContainer)
		p.InitContainers = cloneEach(p.InitContainers, cloneContainer)
		p.AnnotationChanges = cloneEach(p.AnnotationChanges, func(a AnnotationChange) AnnotationChange {
			a.Annotations = cloneMap(a.Annotations)
			return a
		})
		return p
	})
	c.HostProcesses = cloneEach(s.HostProcesses, cloneProcess)
	return &c
}

func cloneContainer(ct Container) Container {
	ct.Name, ct.ID, ct.RestartPolicy = strings.Clone(ct.Name), strings.Clone(ct.ID), strings.Clone(ct.RestartPolicy)
	ct.Devices = cloneEach(ct.Devices, func(d DeviceRequest) DeviceRequest {
		return DeviceRequest{Resource: strings.Clone(d.Resource), IDs: cloneEach(d.IDs, strings.Clone)}
	})
	ct.Claims = cloneEach(ct.Claims, func(cl Claim) Claim {
		return Claim{
			Claim: strings.Clone(cl.Claim), Request: strings.Clone(cl.Request),
			Driver: strings.Clone(cl.Driver), Pool: strings.Clone(cl.Pool), Device: strings.Clone(cl.Device),
		}
	})
	ct.Processes = cloneEach(ct.Processes, cloneProcess)
	ct.Limits = cloneMap(ct.Limits)
	return ct
}

func cloneResourceSlice(rs ResourceSlice) ResourceSlice {
	return ResourceSlice{
		Driver: strings.Clone(rs.Driver), Pool: strings.Clone(rs.Pool),
		Devices: cloneEach(rs.Devices, func(d SliceDevice) SliceDevice {
			return SliceDevice{Name: strings.Clone(d.Name), Attributes: cloneMap(d.Attributes)}
		}),
	}
}

func cloneProcess(p Process) Process {
	p.Device, p.Comm = strings.Clone(p.Device), strings.Clone(p.Comm)
	p.Busy = cloneEach(p.Busy, func(s Segment) Segment { return s })
	p.Memory = cloneEach(p.Memory, func(s MemorySegment) MemorySegment { return s })
	return p
}

// cloneEach copies a slice element by element; nil stays nil.
func cloneEach[T any](in []T, f func(T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range maps.All(m) {
		out[strings.Clone(k)] = strings.Clone(v)
	}
	return out
}
