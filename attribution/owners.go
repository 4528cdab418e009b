package attribution

import (
	"strconv"

	"github.com/gpuledger/gpuledger/tenancy"
)

// resolveProcesses maps every running process to its owner: a container's
// group on the device, the MPS server, a host process or nobody known. A
// container that runs on a device without holding a slice of it still
// gets a row (allocated 0): it used the GPU.
func (e *Engine) resolveProcesses() {
	c := &e.cy
	for pi := range c.obs.Processes {
		p := &c.obs.Processes[pi]
		ref := procRef{gpu: -1, inst: -1, group: -1}
		gpu, inst, ok := c.resolveProcDevice(p)
		if !ok {
			c.anomaly(AnomalyUnknownGPU, p.GPU+" "+p.Device, "process on device "+p.Device+
				" of GPU "+p.GPU+", which this node does not list")
			c.procs = append(c.procs, ref)
			continue
		}
		ref.gpu, ref.inst = gpu, inst
		rec := ownerRec{key: ownerKey{c.gpus[gpu].UUID, p.PID}}
		ref.class, ref.group = e.ownerOf(pi, p, gpu, inst, &rec)
		if ref.group >= 0 {
			// A PID seen only in samples ran during the window but is
			// gone: it owns its samples, it is not running any more.
			if !p.Exited {
				g := &c.groups[ref.group]
				g.running = true
				g.mem += float64(p.MemoryMiB)
			}
		} else if inst >= 0 && !p.Exited {
			c.gpuW[gpu].instHost[inst] = true
		}
		c.procs = append(c.procs, ref)
		e.owners = append(e.owners, rec)
	}
}

// resolveProcDevice finds the GPU and MIG instance (-1: whole GPU) a
// process runs on.
func (c *cycle) resolveProcDevice(p *Process) (gpu, inst int, ok bool) {
	if p.Device != "" && p.Device != p.GPU {
		if r, ok := c.migIdx[p.Device]; ok {
			return r.gpu, r.inst, true
		}
	}
	if gpu, ok := c.gpuByUUID(p.GPU); ok {
		return gpu, -1, true
	}
	gpu, ok = c.gpuByUUID(p.Device)
	return gpu, -1, ok
}

// ownerOf classifies a process and, for a container, returns its group on
// (gpu, inst), creating a row for it where it holds no slice there. It
// fills rec for the next cycle.
func (e *Engine) ownerOf(pi int, p *Process, gpu, inst int, rec *ownerRec) (procClass, int32) {
	c := &e.cy
	o := p.Owner
	switch {
	case !o.Resolved:
		rec.class = procUnknown
	case o.PodUID == "" && o.Comm == mpsServerComm:
		rec.class = procMPSServer
	case o.PodUID == "":
		rec.class = procHost
	}
	if !o.Resolved || o.PodUID == "" {
		return rec.class, -1
	}
	pod, ci, ok := c.findContainer(pi, o)
	if !ok {
		c.anomaly(AnomalyUnknownOwner, o.PodUID+"/"+o.ContainerID, "process "+strconv.FormatUint(uint64(p.PID), 10)+
			" belongs to pod UID "+o.PodUID+" container "+o.ContainerID+", which the metadata does not list; unattributed")
		rec.class = procUnknown
		return procUnknown, -1
	}
	pm := &c.obs.Metadata.Pods[pod]
	ctr := ctrID{pm.Namespace, pm.Name, pm.UID, ctrMeta(pm, ci).Name}
	slot := &c.slotOwner[int(c.slotBase[pod])+ci]
	if *slot < 0 {
		*slot = int32(len(e.ownerCtrs))
		e.ownerCtrs = append(e.ownerCtrs, ownerCtr{ctr, c.podTeams[pod]})
	}
	rec.class, rec.ctr = procContainer, *slot
	return procContainer, c.runningGroup(pod, ci, gpu, inst, ctr, c.podTeams[pod], deviceOf(p))
}

func deviceOf(p *Process) string {
	if p.Device != "" {
		return p.Device
	}
	return p.GPU
}

// findContainer maps the owner of process pi to a pod and container of
// the metadata. A pod whose container IDs are not known yet (just
// started) but that has a single container is still matched.
func (c *cycle) findContainer(pi int, o Owner) (pod, ctr int, ok bool) {
	pods := c.obs.Metadata.Pods
	for len(c.procHint) <= pi {
		c.procHint = append(c.procHint, ctrRef{-1, -1})
	}
	if h := c.procHint[pi]; h.pod >= 0 && h.pod < len(pods) && h.ctr < ctrCount(&pods[h.pod]) &&
		ctrMeta(&pods[h.pod], h.ctr).ID == o.ContainerID && pods[h.pod].UID == o.PodUID {
		return h.pod, h.ctr, true
	}
	pod, ctr, ok = c.findContainerSlow(o)
	if ok {
		c.procHint[pi] = ctrRef{pod, ctr}
	}
	return pod, ctr, ok
}

func (c *cycle) findContainerSlow(o Owner) (pod, ctr int, ok bool) {
	if r, ok := c.containerByID(o.ContainerID); ok && c.obs.Metadata.Pods[r.pod].UID == o.PodUID {
		return r.pod, r.ctr, true
	}
	pi, ok := c.podByUID(o.PodUID)
	if !ok || ctrCount(&c.obs.Metadata.Pods[pi]) != 1 {
		return 0, 0, false
	}
	if id := ctrMeta(&c.obs.Metadata.Pods[pi], 0).ID; id != "" && id != o.ContainerID {
		return 0, 0, false
	}
	return pi, 0, true
}

// runningGroup returns ctr's group on (gpu, inst); a container without a
// slice there gets a phantom row named after the device it ran on. Its
// sharing mode is the GPU's dominant one on a whole GPU; on a MIG instance
// it holds nothing of, it is the mode of the container's own slice on
// another instance of that GPU (one container, one mode), else mig.
func (c *cycle) runningGroup(pod, ci, gpu, inst int, ctr ctrID, team, device string) int32 {
	g := c.group(pod, ci, gpu, inst, ctr, team)
	if c.groups[g].head < 0 {
		kind, mode := SliceKindGPU, c.gpuW[gpu].mode
		if inst >= 0 {
			kind, mode = SliceKindMIG, c.heldMIGMode(pod, ci, gpu)
		}
		c.addRow(g, rowW{gpu: gpu, inst: inst, pod: -1, ctrIndex: -1, phantom: true,
			mode: mode,
			sid:  SliceID{Raw: device, Kind: kind, UUID: device, Replica: -1, GI: -1, CI: -1}})
		c.flagUnlisted(g, pod, ci, device)
	}
	return g
}

// heldMIGMode is the sharing mode of a slice the container (pod, ci) holds
// on another MIG instance of GPU gpu, or mig when it holds none.
func (c *cycle) heldMIGMode(pod, ci, gpu int) tenancy.Mode {
	if pod < 0 || ci < 0 {
		return tenancy.MIG
	}
	for g := c.slots[int(c.slotBase[pod])+ci]; g >= 0; g = c.groups[g].nextSame {
		grp := &c.groups[g]
		if grp.gpu != gpu || grp.inst < 0 {
			continue
		}
		for ri := grp.head; ri >= 0; ri = c.rows[ri].next {
			if r := &c.rows[ri]; !r.phantom && r.mode != "" {
				return r.mode
			}
		}
	}
	return tenancy.MIG
}
