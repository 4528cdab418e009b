package attribution

// energyBase is a GPU's energy counters at the end of the cycle that last
// read them.
type energyBase struct {
	at         int64 // Unix ns of that cycle's Time
	nvml, dcgm uint64
	nvmlOK     bool
	dcgmOK     bool
}

// splitEnergy splits each GPU's energy counter delta like its usage
// partition: container rows by used seconds, then unattributed and idle,
// each seconds/W of it, so a GPU's rows add up to the delta. NVML's
// counter is preferred; DCGM's stands in where NVML's is missing on
// either end. Without a baseline from the previous, adjacent cycle there
// is no delta and all energies are 0.
func (e *Engine) splitEnergy(contiguous bool) {
	c := &e.cy
	for gi := range c.gpus {
		g, gw := &c.gpus[gi], &c.gpuW[gi]
		delta, ok := e.energyDelta(g, contiguous)
		if !ok || !(c.w > 0) {
			continue
		}
		gw.energy = delta
		gw.unattrE = delta * gw.unattr / c.w
		rest := delta - gw.unattrE
		for ri := range c.rows {
			if r := &c.rows[ri]; r.gpu == gi {
				r.energy = delta * r.used / c.w
				rest -= r.energy
			}
		}
		// Idle takes the remainder so the rows add up to the delta
		// exactly; it is idle/W of it up to rounding.
		gw.idleE = max(rest, 0)
	}
}

// energyDelta returns the joules GPU g used over the window and records
// this cycle's counters as the next baseline.
func (e *Engine) energyDelta(g *GPU, contiguous bool) (float64, bool) {
	c := &e.cy
	base, had := e.energy[g.UUID]
	usable := had && contiguous && base.at == c.prev
	next := energyBase{at: c.now, nvml: g.EnergyMilliJoules, nvmlOK: g.EnergyOK}
	if g.DCGM != nil && g.DCGM.EnergyMilliJ > 0 {
		next.dcgm, next.dcgmOK = g.DCGM.EnergyMilliJ, true
	}
	e.energy[g.UUID] = next
	if !usable {
		return 0, false
	}
	switch {
	case base.nvmlOK && next.nvmlOK:
		return e.counterDelta(g.UUID, "nvml", base.nvml, next.nvml), true
	case base.dcgmOK && next.dcgmOK:
		return e.counterDelta(g.UUID, "dcgm", base.dcgm, next.dcgm), true
	}
	return 0, false
}

// counterDelta is the joules between two millijoule readings; a counter
// that went backwards (driver reload, wrap) counts as 0.
func (e *Engine) counterDelta(gpu, source string, from, to uint64) float64 {
	if to < from {
		e.cy.anomaly(AnomalyEnergyBackward, gpu+" "+source, "energy counter of "+gpu+" ("+source+
			") went backwards; the window's energy counts as 0")
		return 0
	}
	return float64(to-from) / 1000
}
