package scenario

import (
	"time"

	"github.com/gpuledger/gpuledger/gpu"
)

// End is the simulated wall-clock time at which the scenario ends.
func (s *Scenario) End() time.Time { return s.Start.Add(s.Duration) }

// At is the simulated wall-clock time of an offset from the start.
func (s *Scenario) At(offset time.Duration) time.Time { return s.Start.Add(offset) }

// Device resolves a process's device UUID to its GPU and, for a MIG UUID,
// the instance (nil for a whole GPU).
func (s *Scenario) Device(uuid string) (gpu *GPU, inst *MIGInstance, ok bool) {
	for i := range s.GPUs {
		g := &s.GPUs[i]
		if g.UUID == uuid {
			return g, nil, true
		}
		for j := range g.MIGInstances {
			if g.MIGInstances[j].UUID == uuid {
				return g, &g.MIGInstances[j], true
			}
		}
	}
	return nil, nil, false
}

// Namespace returns the declared namespace of that name; undeclared
// namespaces have no labels.
func (s *Scenario) Namespace(name string) (Namespace, bool) {
	for _, ns := range s.Namespaces {
		if ns.Name == name {
			return ns, true
		}
	}
	return Namespace{Name: name}, false
}

// ProcessRef is one GPU process with its owner; Pod and Container are nil
// for host processes.
type ProcessRef struct {
	Pod       *Pod
	Container *Container
	Process   *Process
}

// Processes lists every process of the scenario: pod processes first, pod
// by pod in file order, each pod's init containers' before its containers';
// then host processes.
func (s *Scenario) Processes() []ProcessRef {
	var out []ProcessRef
	for i := range s.Pods {
		pod := &s.Pods[i]
		for _, cts := range [][]Container{pod.InitContainers, pod.Containers} {
			for j := range cts {
				ct := &cts[j]
				for k := range ct.Processes {
					out = append(out, ProcessRef{Pod: pod, Container: ct, Process: &ct.Processes[k]})
				}
			}
		}
	}
	for i := range s.HostProcesses {
		out = append(out, ProcessRef{Process: &s.HostProcesses[i]})
	}
	return out
}

// Slices is the instance's compute slices (of gpu.TotalSlices); 0 for a profile
// name that does not parse, which a validated scenario never holds.
func (m MIGInstance) Slices() int {
	n, err := gpu.ProfileSlices(m.Profile)
	if err != nil {
		return 0
	}
	return n
}

// Weight is the instance's allocation weight w(i) = slices / 7.
func (m MIGInstance) Weight() float64 { return float64(m.Slices()) / gpu.TotalSlices }

// AliveAt reports whether the pod is listed at offset t (both ends
// inclusive, as the simulator lists it).
func (p *Pod) AliveAt(t time.Duration) bool { return p.Start <= t && t <= p.End }

// AliveAt reports whether the process is running at offset t (both ends
// inclusive, as the simulator lists it).
func (p *Process) AliveAt(t time.Duration) bool { return p.Start <= t && t <= p.End }

// ContainersStart is the offset at which the pod's regular containers start:
// the end of its last plain init container, or the pod's start.
func (p *Pod) ContainersStart() time.Duration {
	start := p.Start
	for _, ct := range p.InitContainers {
		if !ct.Sidecar() && ct.End > start {
			start = ct.End
		}
	}
	return start
}

// Sidecar reports whether an init container keeps running beside the
// containers (restartPolicy Always).
func (c *Container) Sidecar() bool { return c.RestartPolicy == RestartAlways }

// RunsAt reports whether the container runs at offset t (both ends
// inclusive, as the simulator lists it).
func (c *Container) RunsAt(t time.Duration) bool { return c.Start <= t && t <= c.End }

// AnnotationsAt is the pod's annotations at offset t: the initial ones with
// every change whose At <= t applied in order (keys given replace, others
// stay). The result is a fresh map.
func (p *Pod) AnnotationsAt(t time.Duration) map[string]string {
	out := make(map[string]string, len(p.Annotations))
	for k, v := range p.Annotations {
		out[k] = v
	}
	for _, ch := range p.AnnotationChanges {
		if ch.At > t {
			break
		}
		for k, v := range ch.Annotations {
			out[k] = v
		}
	}
	return out
}
