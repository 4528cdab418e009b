package scenario

import "fmt"

// deviceRef locates a device a process may name: a whole GPU (mig < 0) or
// one of its MIG instances.
type deviceRef struct {
	gpu, mig int
}

func (d deviceRef) path() string {
	if d.mig < 0 {
		return index("gpus", d.gpu)
	}
	return index(field(index("gpus", d.gpu), "migInstances"), d.mig)
}

// procRef is one process with its field path, the unit of the checks that
// span the whole scenario.
type procRef struct {
	path string
	p    *Process
}

// validate runs the checks that relate objects to each other. The cheap,
// structural ones go first: the PID and physics checks assume every process
// names a device that exists.
func validate(s *Scenario) error {
	var p problems
	devices := checkGPUs(&p, s.GPUs)
	checkNamespaces(&p, s.Namespaces)
	checkPods(&p, s)
	procs := processes(s)
	checkDevices(&p, s, devices, procs)
	if !p.empty() {
		return p.err()
	}
	checkPIDs(&p, s, devices, procs)
	checkPhysics(&p, s, devices, procs)
	return p.err()
}

func processes(s *Scenario) []procRef {
	var out []procRef
	for i := range s.Pods {
		pod := &s.Pods[i]
		for j := range pod.Containers {
			ct := &pod.Containers[j]
			for k := range ct.Processes {
				path := fmt.Sprintf("pods[%d].containers[%d].processes[%d]", i, j, k)
				out = append(out, procRef{path, &ct.Processes[k]})
			}
		}
	}
	for i := range s.HostProcesses {
		out = append(out, procRef{index("hostProcesses", i), &s.HostProcesses[i]})
	}
	return out
}

// checkGPUs rejects duplicate GPU indexes and UUIDs and returns every device
// UUID a process may name.
func checkGPUs(p *problems, gpus []GPU) map[string]deviceRef {
	devices := make(map[string]deviceRef)
	byIndex := make(map[int]int)
	for i, g := range gpus {
		path := index("gpus", i)
		if j, dup := byIndex[g.Index]; dup {
			p.addf(field(path, "index"), "%d is already used by gpus[%d]", g.Index, j)
		} else {
			byIndex[g.Index] = i
		}
		if d, dup := devices[g.UUID]; dup {
			p.addf(field(path, "uuid"), "%q is already used by %s", g.UUID, d.path())
		} else {
			devices[g.UUID] = deviceRef{gpu: i, mig: -1}
		}
		for j, m := range g.MIGInstances {
			mp := index(field(path, "migInstances"), j)
			if d, dup := devices[m.UUID]; dup {
				p.addf(field(mp, "uuid"), "%q is already used by %s", m.UUID, d.path())
			} else {
				devices[m.UUID] = deviceRef{gpu: i, mig: j}
			}
		}
	}
	return devices
}

func checkNamespaces(p *problems, nss []Namespace) {
	seen := make(map[string]int)
	for i, ns := range nss {
		if j, dup := seen[ns.Name]; dup {
			p.addf(field(index("namespaces", i), "name"), "%q is already declared by namespaces[%d]", ns.Name, j)
			continue
		}
		seen[ns.Name] = i
	}
}

// checkPods rejects duplicate pod UIDs, container names within a pod and
// container IDs. Namespaces need not be declared: an undeclared one simply
// has no labels.
func checkPods(p *problems, s *Scenario) {
	uids := make(map[string]int)
	ids := make(map[string]string)
	for i, pod := range s.Pods {
		path := index("pods", i)
		if j, dup := uids[pod.UID]; dup {
			p.addf(field(path, "uid"), "%q is already used by pods[%d]", pod.UID, j)
		} else {
			uids[pod.UID] = i
		}
		names := make(map[string]int)
		for j, ct := range pod.Containers {
			cp := index(field(path, "containers"), j)
			if k, dup := names[ct.Name]; dup {
				p.addf(field(cp, "name"), "%q is already used by containers[%d] of this pod", ct.Name, k)
			} else {
				names[ct.Name] = j
			}
			if other, dup := ids[ct.ID]; dup {
				p.addf(field(cp, "id"), "%q is already used by %s", ct.ID, other)
			} else {
				ids[ct.ID] = cp
			}
		}
	}
}

// checkDevices makes every process name a device of the node: a MIG
// instance on a MIG-mode GPU, the whole GPU otherwise.
func checkDevices(p *problems, s *Scenario, devices map[string]deviceRef, procs []procRef) {
	for _, pr := range procs {
		path := field(pr.path, "device")
		d, ok := devices[pr.p.Device]
		switch {
		case pr.p.Device == "":
			// Reported by the converter.
		case !ok:
			p.addf(path, "%q is not a GPU or MIG instance of this node", pr.p.Device)
		case d.mig < 0 && s.GPUs[d.gpu].Mode == ModeMIG:
			p.addf(path, "%q is a GPU in mig mode; name one of its MIG instances", pr.p.Device)
		}
	}
}
