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
	checkResourceSlices(&p, s.Node.ResourceSlices)
	checkNamespaces(&p, s.Namespaces)
	checkPods(&p, s)
	procs := processes(s)
	checkDevices(&p, s, devices, procs)
	if !p.empty() {
		return p.err()
	}
	checkPIDs(&p, s, devices, procs)
	checkPhysics(&p, s, devices, procs)
	checkMemoryFits(&p, s, devices, procs)
	return p.err()
}

func processes(s *Scenario) []procRef {
	var out []procRef
	for i := range s.Pods {
		pod := &s.Pods[i]
		out = appendProcs(out, index("pods", i), "initContainers", pod.InitContainers)
		out = appendProcs(out, index("pods", i), "containers", pod.Containers)
	}
	for i := range s.HostProcesses {
		out = append(out, procRef{index("hostProcesses", i), &s.HostProcesses[i]})
	}
	return out
}

func appendProcs(out []procRef, podPath, list string, cts []Container) []procRef {
	for j := range cts {
		ct := &cts[j]
		for k := range ct.Processes {
			path := fmt.Sprintf("%s.%s[%d].processes[%d]", podPath, list, j, k)
			out = append(out, procRef{path, &ct.Processes[k]})
		}
	}
	return out
}

// checkGPUs rejects duplicate GPU indexes, minor numbers and UUIDs, and
// GPU-instance IDs repeated on one GPU, and returns every device UUID a
// process may name.
func checkGPUs(p *problems, gpus []GPU) map[string]deviceRef {
	devices := make(map[string]deviceRef)
	byIndex := make(map[int]int)
	byMinor := make(map[int]int)
	for i, g := range gpus {
		path := index("gpus", i)
		if j, dup := byIndex[g.Index]; dup {
			p.addf(field(path, "index"), "%d is already used by gpus[%d]", g.Index, j)
		} else {
			byIndex[g.Index] = i
		}
		// A minor left out defaults to the index, so say so: the clash
		// may be with a value nobody wrote.
		if j, dup := byMinor[g.Minor]; dup {
			p.addf(field(path, "minor"), "%d is already the minor number of gpus[%d] (a minor left out is the GPU's index)", g.Minor, j)
		} else {
			byMinor[g.Minor] = i
		}
		checkGIs(p, path, g.MIGInstances)
		if d, dup := devices[g.UUID]; dup {
			p.addf(field(path, "uuid"), "%q is already used by %s", shortText(g.UUID), d.path())
		} else {
			devices[g.UUID] = deviceRef{gpu: i, mig: -1}
		}
		for j, m := range g.MIGInstances {
			mp := index(field(path, "migInstances"), j)
			if d, dup := devices[m.UUID]; dup {
				p.addf(field(mp, "uuid"), "%q is already used by %s", shortText(m.UUID), d.path())
			} else {
				devices[m.UUID] = deviceRef{gpu: i, mig: j}
			}
		}
	}
	return devices
}

// checkGIs rejects a GPU-instance ID used twice on one GPU.
func checkGIs(p *problems, gpuPath string, insts []MIGInstance) {
	byGI := make(map[int]int)
	for j, m := range insts {
		if k, dup := byGI[m.GI]; dup {
			p.addf(field(index(field(gpuPath, "migInstances"), j), "gi"),
				"%d is already the GPU-instance ID of migInstances[%d] (a gi left out is the instance's position, counting from 0)", m.GI, k)
		} else {
			byGI[m.GI] = j
		}
	}
}

// checkResourceSlices rejects a device published twice in one pool of one
// driver: Kubernetes names devices uniquely per pool, and a claim names a
// device by driver, pool and name.
func checkResourceSlices(p *problems, rss []ResourceSlice) {
	type key struct{ driver, pool, name string }
	seen := make(map[key]string)
	for i, rs := range rss {
		for j, d := range rs.Devices {
			path := index(field(index("node.resourceSlices", i), "devices"), j)
			k := key{rs.Driver, rs.Pool, d.Name}
			if other, dup := seen[k]; dup {
				p.addf(field(path, "name"), "%q is already published in pool %q of driver %q by %s", shortText(d.Name), shortText(rs.Pool), shortText(rs.Driver), other)
			} else {
				seen[k] = path
			}
		}
	}
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
		// Kubernetes names init and regular containers in one namespace.
		names := make(map[string]string)
		for _, list := range []struct {
			name string
			cts  []Container
		}{{"initContainers", pod.InitContainers}, {"containers", pod.Containers}} {
			for j, ct := range list.cts {
				cp := index(field(path, list.name), j)
				if other, dup := names[ct.Name]; dup {
					p.addf(field(cp, "name"), "%q is already used by %s of this pod", ct.Name, other)
				} else {
					names[ct.Name] = index(list.name, j)
				}
				if other, dup := ids[ct.ID]; dup {
					p.addf(field(cp, "id"), "%q is already used by %s", shortText(ct.ID), other)
				} else {
					ids[ct.ID] = cp
				}
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
			p.addf(path, "%q is not a GPU or MIG instance of this node", shortText(pr.p.Device))
		case d.mig < 0 && s.GPUs[d.gpu].Mode == ModeMIG:
			p.addf(path, "%q is a GPU in mig mode; name one of its MIG instances", shortText(pr.p.Device))
		}
	}
}
