package attribution

// Sample owners other than a group index.
const (
	ownerUnattributed int32 = -1 // host process, unresolved or unknown PID
	ownerMPSPool      int32 = -2 // the MPS server: its clients' work
)

// sampleW is one process sample on a whole GPU: its busy fraction of the
// sample period and who gets it.
type sampleW struct {
	at    int64
	frac  float64
	owner int32
	bin   int32
}

// bin is one driver sample period: the processes' seconds in it and the
// device's busy seconds, when a device sample covers it.
type bin struct {
	sum, cap, factor float64
	n                int // process samples in the period
	hasCap           bool
}

// roundingSlack is how far a period's process seconds may exceed, or fall
// short of, the device's busy seconds through NVML's rounding alone: every
// sample, the device's included, is a whole percent, so each is off by up
// to half a percent of the period. Within it the samples are left as
// measured: scaling everyone down for one process's rounding would bias
// every small tenant on the GPU.
func roundingSlack(n int, p float64) float64 { return 0.005 * float64(n+1) * p }

// maxBins bounds the sample periods of one cycle; samples with absurd
// timestamps are folded into the edge periods rather than growing memory.
const maxBins = 1 << 14

// attributeUsage builds the usage partition of every GPU.
func (e *Engine) attributeUsage() {
	c := &e.cy
	e.collectSamples()
	for gi := range c.gpus {
		if c.gpus[gi].MIGEnabled {
			e.usageMIG(gi)
		} else {
			e.usageGPU(gi)
		}
	}
}

// collectSamples sorts the process samples per GPU and resolves their
// owners once: samples come in runs of one GPU and one PID, so the last
// lookup is kept.
func (e *Engine) collectSamples() {
	c := &e.cy
	lastGPU, lastGPUIdx := "", -1
	lastPID, lastOwner := uint32(0), int32(0)
	haveOwner := false
	for si := range c.obs.Samples {
		s := &c.obs.Samples[si]
		if s.GPU != lastGPU || lastGPUIdx < 0 {
			gi, ok := c.gpuByUUID(s.GPU)
			if !ok {
				c.anomaly(AnomalyUnknownGPU, s.GPU, "process samples from GPU "+s.GPU+", which this node does not list")
				continue
			}
			lastGPU, lastGPUIdx, haveOwner = s.GPU, gi, false
		}
		if c.gpus[lastGPUIdx].MIGEnabled {
			continue // NVML has no per-process samples under MIG
		}
		if !haveOwner || s.PID != lastPID {
			lastPID, lastOwner, haveOwner = s.PID, e.sampleOwner(lastGPUIdx, s.PID), true
		}
		gw := &c.gpuW[lastGPUIdx]
		gw.samples = append(gw.samples, sampleW{at: unixNanos(s.At), frac: pct(s.SMUtil), owner: lastOwner})
	}
}

// sampleOwner finds who a PID's samples belong to: the running process
// with that PID on the GPU, else whoever owned the PID there last cycle
// (samples of a process that exited just before the poll).
func (e *Engine) sampleOwner(gpu int, pid uint32) int32 {
	c := &e.cy
	if pi, ok := c.process(gpu, pid); ok {
		ref := c.procs[pi]
		switch ref.class {
		case procContainer:
			if ref.inst < 0 {
				return ref.group
			}
			// Runs on a MIG instance of a GPU NVML samples as a whole:
			// charge the container's whole-GPU presence.
			p := &c.obs.Processes[pi]
			pod, ci, _ := c.findContainer(int(pi), p.Owner)
			g := &c.groups[ref.group]
			return c.runningGroup(pod, ci, gpu, -1, g.ctr, g.team, c.gpus[gpu].UUID)
		case procMPSServer:
			return ownerMPSPool
		}
		return ownerUnattributed
	}
	rec, ok := e.prevOwner(ownerKey{c.gpus[gpu].UUID, pid})
	if !ok {
		return ownerUnattributed
	}
	switch rec.class {
	case procContainer:
		oc := &e.prevOwnerCtrs[rec.ctr]
		pod, ci := c.locate(oc.ctr)
		return c.runningGroup(pod, ci, gpu, -1, oc.ctr, oc.team, c.gpus[gpu].UUID)
	case procMPSServer:
		return ownerMPSPool
	}
	return ownerUnattributed
}

// prevOwner looks a PID up among last cycle's processes; the index is
// built only when a sample's PID is not running any more.
func (e *Engine) prevOwner(k ownerKey) (ownerRec, bool) {
	if !e.prevBuilt {
		clear(e.prevIdx)
		for i := range e.prevOwners {
			if _, dup := e.prevIdx[e.prevOwners[i].key]; !dup {
				e.prevIdx[e.prevOwners[i].key] = int32(i)
			}
		}
		e.prevBuilt = true
	}
	i, ok := e.prevIdx[k]
	if !ok {
		return ownerRec{}, false
	}
	return e.prevOwners[i], true
}

// locate finds a container in this cycle's metadata (-1, -1 when it is
// not listed any more).
func (c *cycle) locate(ctr ctrID) (pod, ci int) {
	pi, ok := c.podByName(ctr.ns, ctr.pod)
	if !ok || c.obs.Metadata.Pods[pi].UID != ctr.podUID {
		return -1, -1
	}
	if ci = containerIndex(&c.obs.Metadata.Pods[pi], ctr.container); ci < 0 {
		return -1, -1
	}
	return pi, ci
}

// pct turns a percentage from NVML into a fraction in [0, 1].
func pct(p float64) float64 { return clamp01(p / 100) }

// usageGPU builds the usage partition of a whole (non-MIG) GPU: device
// busy seconds B from NVML device samples (else DCGM, else the processes'
// own samples), process samples capped per period by the device's busy
// time and overall by B, each going to its owner; the rest of B is
// unattributed and what is left of the window is idle.
func (e *Engine) usageGPU(gi int) {
	c := &e.cy
	g, w := &c.gpus[gi], c.w
	smp := c.gpuW[gi].samples
	p := samplePeriod(g, smp, w)
	devOK := g.DeviceSamplesOK && (len(g.DeviceSamples) > 0 || len(smp) == 0)
	var busy float64
	fromProcs := false
	switch {
	case devOK:
		for _, d := range g.DeviceSamples {
			busy += pct(d.Percent) * p
		}
	case g.DCGM != nil:
		busy = clamp01(g.DCGM.GrEngineActive) * w
	case len(smp) > 0:
		fromProcs = true
	default:
		// Neither the device nor DCGM nor the processes say anything:
		// we cannot claim the GPU was idle.
		e.closeUsage(gi, w)
		return
	}
	total, unexplained := c.binSamples(g, smp, p, devOK)
	if fromProcs {
		busy = total
	}
	busy = min(busy, w)
	scale := 1.0
	if !devOK && total > busy {
		// Only DCGM's window mean to go by: cap the processes at it.
		scale = busy / total
	}
	var unattr, pool float64
	for _, s := range smp {
		sec := s.frac * p * scale * c.bins[s.bin].factor
		switch s.owner {
		case ownerUnattributed:
			unattr += sec
		case ownerMPSPool:
			pool += sec
		default:
			c.groups[s.owner].used += sec
		}
	}
	if pool > 0 {
		unattr += pool - e.splitPool(gi, pool)
	}
	if devOK {
		// Busy time no process sample explains, beyond rounding.
		unattr += unexplained
	} else {
		unattr += max(busy-total*scale, 0)
	}
	e.closeUsage(gi, e.carryUsage(gi, unattr, p))
}

// gpuCarry is what a GPU's samples reported beyond a cycle's window, to be
// charged in the next cycle: where the poll interval is not a multiple of
// the driver's sample period, a cycle's samples cover a little more or less
// than its window, and a poll shorter than the period sees cycles without a
// new sample. Dropping the excess would lose busy time for good (7.4% of a
// fully busy GPU at a 0.5 s poll and 0.2 s period); carried, every sample's
// seconds are charged exactly once and each cycle's partition still closes.
type gpuCarry struct {
	uuid   string
	unattr float64
	owners []carryOwner
}

// carryOwner is one container's carried seconds on a GPU (or an instance
// of it, inst >= 0).
type carryOwner struct {
	ctr  ctrID
	team string
	inst int
	sec  float64
}

// carrySlot returns the carry of the GPU with uuid, adding one if needed.
func (e *Engine) carrySlot(uuid string) *gpuCarry {
	for i := range e.carries {
		if e.carries[i].uuid == uuid {
			return &e.carries[i]
		}
	}
	e.carries = append(e.carries, gpuCarry{uuid: uuid})
	return &e.carries[len(e.carries)-1]
}

// carryUsage adds what the GPU carried from the last cycle to its owners
// and to unattr, then, if the GPU's used and unattributed seconds exceed
// the window, keeps the excess, in proportion per owner, for the next
// cycle. It returns the cycle's unattributed seconds; used + unattr <= W.
// The carry is bounded by one window plus one sample period (more than
// that is not sampling phase but timestamps gone wrong, and is dropped).
func (e *Engine) carryUsage(gi int, unattr, p float64) float64 {
	c := &e.cy
	g := &c.gpus[gi]
	unattr = max(unattr, 0)
	if !(c.w > 0) {
		// An empty window (the first cycle's baselines) charges nothing
		// and carries nothing: its samples are history.
		return unattr
	}
	cr := e.carrySlot(g.UUID)
	unattr += cr.unattr
	for _, o := range cr.owners {
		gr := c.findGroup(gi, o.inst, o.ctr)
		if gr < 0 {
			device := g.UUID
			if o.inst >= 0 && o.inst < len(g.MIG) {
				device = g.MIG[o.inst].UUID
			}
			pod, ci := c.locate(o.ctr)
			gr = c.runningGroup(pod, ci, gi, o.inst, o.ctr, o.team, device)
		}
		c.groups[gr].used += o.sec
	}
	cr.unattr, cr.owners = 0, cr.owners[:0]
	var used float64
	for i := range c.groups {
		if c.groups[i].gpu == gi {
			used += c.groups[i].used
		}
	}
	w := c.w
	t := used + unattr
	if !(t > w) || !(t > 0) {
		return unattr
	}
	f := w / t
	keep := min((t-w)/t, (w+p)/t) // share of every owner's seconds carried
	for i := range c.groups {
		gr := &c.groups[i]
		if gr.gpu != gi || !(gr.used > 0) {
			continue
		}
		cr.owners = append(cr.owners, carryOwner{ctr: gr.ctr, team: gr.team, inst: gr.inst, sec: gr.used * keep})
		gr.used *= f
	}
	cr.unattr = unattr * keep
	return unattr * f
}

// findGroup returns the group of container ctr on the GPU (instance inst),
// or -1.
func (c *cycle) findGroup(gi, inst int, ctr ctrID) int32 {
	for i := range c.groups {
		if g := &c.groups[i]; g.gpu == gi && g.inst == inst && g.ctr == ctr {
			return int32(i)
		}
	}
	return -1
}

// dropCarries forgets every carry: after a gap the samples of the next
// cycle start afresh.
func (e *Engine) dropCarries() {
	for i := range e.carries {
		e.carries[i].unattr, e.carries[i].owners = 0, e.carries[i].owners[:0]
	}
}

// samplePeriod is the driver's sample period in seconds: as NVML
// reported it, else the spacing of the device samples, else of the
// process samples, else the window shared among the device samples.
func samplePeriod(g *GPU, smp []sampleW, w float64) float64 {
	if g.SamplePeriod > 0 {
		return g.SamplePeriod.Seconds()
	}
	var best int64
	for i := 1; i < len(g.DeviceSamples); i++ {
		best = minPositive(best, unixNanos(g.DeviceSamples[i].At)-unixNanos(g.DeviceSamples[i-1].At))
	}
	if best == 0 {
		for i := 1; i < len(smp); i++ {
			best = minPositive(best, smp[i].at-smp[i-1].at)
		}
	}
	switch {
	case best > 0:
		return float64(best) / 1e9
	case len(g.DeviceSamples) > 0:
		return w / float64(len(g.DeviceSamples))
	}
	return w
}

func minPositive(best, d int64) int64 {
	if d < 0 {
		d = -d
	}
	if d > 0 && (best == 0 || d < best) {
		return d
	}
	return best
}

// binSamples groups a GPU's process samples by driver sample period and
// caps each period's process seconds at the device's busy seconds for it
// where they exceed it by more than rounding can explain (MPS overlap),
// where a device sample covers it. It returns the capped total, the busy
// seconds of periods that the process samples fall short of by more than
// rounding (activity no process sample shows), and leaves each period's
// factor in c.bins.
func (c *cycle) binSamples(g *GPU, smp []sampleW, p float64, useDev bool) (total, unexplained float64) {
	c.bins = c.bins[:0]
	if len(smp) == 0 && !(useDev && len(g.DeviceSamples) > 0) {
		return 0, 0
	}
	pns := int64(p * 1e9)
	if pns <= 0 {
		pns = 1
	}
	var ref int64
	if useDev && len(g.DeviceSamples) > 0 {
		ref = unixNanos(g.DeviceSamples[0].At)
	} else {
		ref = smp[0].at
	}
	idx := func(at int64) int64 { return floorDiv(at-ref+pns/2, pns) }
	lo, hi := int64(0), int64(0)
	for _, s := range smp {
		i := idx(s.at)
		lo, hi = min(lo, i), max(hi, i)
	}
	if useDev {
		for _, d := range g.DeviceSamples {
			i := idx(unixNanos(d.At))
			lo, hi = min(lo, i), max(hi, i)
		}
	}
	n := hi - lo + 1
	if n <= 0 || n > maxBins {
		n = maxBins
	}
	for int64(cap(c.bins)) < n {
		c.bins = append(c.bins[:cap(c.bins)], bin{})
	}
	c.bins = c.bins[:n]
	clear(c.bins)
	at := func(t int64) int32 { return int32(min(max(idx(t)-lo, 0), n-1)) }
	for si := range smp {
		b := at(smp[si].at)
		smp[si].bin = b
		c.bins[b].sum += smp[si].frac * p
		c.bins[b].n++
	}
	if useDev {
		for _, d := range g.DeviceSamples {
			b := &c.bins[at(unixNanos(d.At))]
			b.cap, b.hasCap = max(b.cap, pct(d.Percent)*p), true
		}
	}
	for b := range c.bins {
		bn := &c.bins[b]
		bn.factor = 1
		slack := roundingSlack(bn.n, p)
		if bn.hasCap && bn.sum > bn.cap+slack {
			bn.factor = bn.cap / bn.sum
		}
		total += bn.sum * bn.factor
		if bn.hasCap && bn.cap-bn.sum > slack {
			unexplained += bn.cap - bn.sum
		}
	}
	return total, unexplained
}

// splitPool shares the MPS server's seconds among the containers holding
// a slice of the GPU that have processes running on it, by allocation
// share (an estimate: NVML cannot see the clients' activity). It returns
// what it gave away; the rest is unattributed.
func (e *Engine) splitPool(gi int, pool float64) float64 {
	c := &e.cy
	var tot float64
	for i := range c.groups {
		if g := &c.groups[i]; g.gpu == gi && g.hasSlice && g.running {
			tot += g.shareSum
		}
	}
	if !(tot > 0) {
		return 0
	}
	for i := range c.groups {
		if g := &c.groups[i]; g.gpu == gi && g.hasSlice && g.running {
			g.used += pool * g.shareSum / tot
			g.estimated = true
		}
	}
	return pool
}

// closeUsage finishes a GPU's usage partition: used is what its groups
// got; used+unattributed is clamped to the window (usageGPU carries the
// excess into the next cycle first) and idle is the rest.
func (e *Engine) closeUsage(gi int, unattr float64) {
	c := &e.cy
	gw, w := &c.gpuW[gi], c.w
	var used float64
	for i := range c.groups {
		if c.groups[i].gpu == gi {
			used += c.groups[i].used
		}
	}
	unattr = max(unattr, 0)
	if t := used + unattr; t > w {
		f := w / t
		used, unattr = 0, unattr*f
		for i := range c.groups {
			if g := &c.groups[i]; g.gpu == gi {
				g.used *= f
				used += g.used
			}
		}
	}
	gw.unattr = unattr
	gw.idle = max(w-used-unattr, 0)
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
