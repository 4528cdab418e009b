package attribution

// instStat gathers one MIG instance's holders for the usage split.
type instStat struct {
	holders      int     // groups holding a slice of the instance
	lone         int32   // the holder, when there is one
	runShare     float64 // summed shares of holders with running processes
	phantoms     int     // containers running there without a slice
	lonePhantom  int32   // the phantom, when there is one
	replicaShare float64 // share of one replica of the instance
	busy, total  float64 // busy seconds; summed participant weights
	split        bool    // busy is split among participants
	shared       bool    // several participants: every holder's use is an estimate
}

// usageMIG builds the usage partition of a MIG-enabled GPU from DCGM's
// per-instance activity (NVML has no per-process samples under MIG).
// Instance i is busy w(i) x GR_ENGINE_ACTIVE_i x W seconds. A lone holder
// gets it all (measured), and so does a lone container running there
// without holding it when no holder and no host process runs there.
// Otherwise it is split by share among holders with running processes,
// containers running there without a slice (one replica each) and, as one
// replica, host processes (estimated; the host part is unattributed). Busy
// time no container runs on is unattributed, and so is an instance's whole
// capacity when DCGM says nothing about it.
func (e *Engine) usageMIG(gi int) {
	c := &e.cy
	g, gw, w := &c.gpus[gi], &c.gpuW[gi], c.w
	st := c.instStats(gi)
	var unattr float64
	for i := range g.MIG {
		s := &st[i]
		m := &g.MIG[i]
		wi := migWeight(m)
		if m.DCGM == nil {
			unattr += wi * w
			continue
		}
		s.busy = wi * clamp01(m.DCGM.GrEngineActive) * w
		host := gw.instHost[i]
		switch {
		case s.holders == 1 && !host && s.phantoms == 0:
			c.groups[s.lone].used += s.busy
		case s.phantoms == 1 && !host && !(s.runShare > 0):
			// The only container running there holds nothing of the
			// instance (its holders, if any, run nothing): its use is
			// measured (scenario.md: only host processes are unattributed).
			c.groups[s.lonePhantom].used += s.busy
		case s.phantoms == 0 && !(s.runShare > 0):
			// Nobody's container runs there: a host process's or
			// nobody's busy time.
			unattr += s.busy
			s.shared = s.holders > 0
		default:
			s.shared = s.holders > 0
			rs := s.replicaShare
			if !(rs > 0) {
				rs = wi
			}
			s.total = s.runShare + rs*float64(s.phantoms)
			if host {
				s.total += rs
				unattr += s.busy * rs / s.total
			}
			s.replicaShare, s.split = rs, true
		}
	}
	for i := range c.groups {
		grp := &c.groups[i]
		if grp.gpu != gi || grp.inst < 0 {
			continue
		}
		if st[grp.inst].shared {
			// A holder with nothing running gets no seconds, but its
			// zero is as much an estimate as its neighbours' shares.
			grp.estimated = true
		}
		if !grp.running || !st[grp.inst].split {
			continue
		}
		s := &st[grp.inst]
		wgt := s.replicaShare
		if grp.hasSlice {
			wgt = grp.shareSum
		}
		grp.used += s.busy * wgt / s.total
		grp.estimated = true
	}
	e.closeUsage(gi, unattr)
}

// instStats counts each MIG instance's holders of GPU gi.
func (c *cycle) instStats(gi int) []instStat {
	n := len(c.gpus[gi].MIG)
	if cap(c.inst) < n {
		c.inst = make([]instStat, n)
	}
	st := c.inst[:n]
	clear(st)
	for i := range c.groups {
		grp := &c.groups[i]
		if grp.gpu != gi || grp.inst < 0 {
			continue
		}
		s := &st[grp.inst]
		switch {
		case grp.hasSlice:
			s.holders++
			s.lone = int32(i)
			if grp.running {
				s.runShare += grp.shareSum
			}
		case grp.running:
			s.phantoms++
			s.lonePhantom = int32(i)
		}
	}
	// One replica's share is the smallest share of a slice of the
	// instance: w(i)/replicas for ::<n> IDs, w(i) for a whole instance.
	for ri := range c.rows {
		r := &c.rows[ri]
		if r.gpu != gi || r.inst < 0 || r.phantom {
			continue
		}
		if s := &st[r.inst]; s.replicaShare == 0 || r.share < s.replicaShare {
			s.replicaShare = r.share
		}
	}
	return st
}
