package attribution

// distribute splits each group's used seconds and memory over its rows by
// allocation share (a container holding several slices of one device);
// a phantom row takes all of its group's.
func (e *Engine) distribute() {
	c := &e.cy
	for gi := range c.groups {
		g := &c.groups[gi]
		n := 0
		for ri := g.head; ri >= 0; ri = c.rows[ri].next {
			n++
		}
		for ri := g.head; ri >= 0; ri = c.rows[ri].next {
			r := &c.rows[ri]
			wgt := 1 / float64(n)
			if g.shareSum > 0 {
				wgt = r.share / g.shareSum
			}
			r.used = g.used * wgt
			r.mem = g.mem * wgt
			r.estimated = r.estimated || g.estimated
		}
	}
}

// assemble turns the scratch state into the cycle's GPUCycles, GPUs in
// the order NVML listed them and rows in the order kubelet did.
func (e *Engine) assemble() []GPUCycle {
	c := &e.cy
	out := make([]GPUCycle, len(c.gpus))
	counts := make([]int, len(c.gpus)+1)
	for ri := range c.rows {
		counts[c.rows[ri].gpu+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	ccs := make([]ContainerCycle, len(c.rows))
	for gi := range c.gpus {
		g, gw := &c.gpus[gi], &c.gpuW[gi]
		out[gi] = GPUCycle{UUID: g.UUID, Model: g.Model, Capacity: c.w,
			Unattributed: gw.unattr, Idle: gw.idle, EnergyJoules: gw.energy,
			UnattributedEnergy: gw.unattrE, IdleEnergy: gw.idleE,
			Containers: ccs[counts[gi]:counts[gi]:counts[gi+1]]}
	}
	for ri := range c.rows {
		r := &c.rows[ri]
		g := &c.groups[r.group]
		gc := &out[r.gpu]
		method := MethodMeasured
		if r.estimated {
			method = MethodEstimated
		}
		profile := ""
		if r.inst >= 0 {
			profile = c.gpus[r.gpu].MIG[r.inst].Profile
		}
		gc.Containers = append(gc.Containers, ContainerCycle{
			SliceID: r.sid.Raw, MIGProfile: profile, SharingMode: string(r.mode),
			Namespace: g.ctr.ns, Pod: g.ctr.pod, PodUID: g.ctr.podUID, Container: g.ctr.container,
			Team: g.team, Method: method, Share: r.share,
			Allocated: r.allocated, Used: r.used,
			MemoryMiB: r.mem, MemoryMiBs: r.mem * c.w, Energy: r.energy,
			Running: g.running,
		})
	}
	for gi := range out {
		var alloc float64
		for _, cc := range out[gi].Containers {
			alloc += cc.Allocated
		}
		out[gi].Unallocated = max(c.w-alloc, 0)
	}
	return out
}
