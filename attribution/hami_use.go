package attribution

// floorHAMiUse charges each HAMi row marked useFloor at least its
// container's use of the GPU this cycle (platforms.md, "HAMi"): HAMi caps
// a container's compute only by its gpucores limit, so one without that
// limit (or one whose annotation names another GPU, or none of this node)
// can keep the GPU busy while holding a small memory share or nothing,
// and under allocation billing its neighbours would pay for that time as
// never-allocated capacity. The floor takes only capacity no other row
// holds: a neighbour's share never shrinks, so its bill is what it would
// be had the tenant declared what it used. When the floored rows' unmet
// use exceeds the free capacity, each gets the same fraction of its own.
// It runs after the usage partition and before distribute; shares (which
// the detectors compare use with) stay as declared.
func (e *Engine) floorHAMiUse() {
	c := &e.cy
	floored := false
	for ri := range c.rows {
		if c.rows[ri].useFloor {
			floored = true
			break
		}
	}
	if !floored {
		return
	}
	for gi := range c.gpuW {
		c.gpuW[gi].held, c.gpuW[gi].unmet = 0, 0
	}
	for ri := range c.rows {
		c.gpuW[c.rows[ri].gpu].held += c.rows[ri].allocated
	}
	for ri := range c.rows {
		if r := &c.rows[ri]; c.floorHead(ri) {
			c.gpuW[r.gpu].unmet += c.unmetUse(r.group)
		}
	}
	for ri := range c.rows {
		r := &c.rows[ri]
		if !c.floorHead(ri) {
			continue
		}
		gw := &c.gpuW[r.gpu]
		free := max(c.w-gw.held, 0)
		if !(gw.unmet > 0) || !(free > 0) {
			continue
		}
		r.allocated += c.unmetUse(r.group) * min(1, free/gw.unmet)
	}
}

// floorHead reports whether row ri is the first useFloor row of its group,
// the one that takes the group's floor (a group is one container on one
// device; its use is measured per group).
func (c *cycle) floorHead(ri int) bool {
	r := &c.rows[ri]
	if !r.useFloor || r.inst >= 0 {
		return false
	}
	for x := c.groups[r.group].head; x >= 0; x = c.rows[x].next {
		if c.rows[x].useFloor && c.rows[x].inst < 0 {
			return int(x) == ri
		}
	}
	return false
}

// unmetUse is how much more group g used this cycle than its rows hold.
func (c *cycle) unmetUse(g int32) float64 {
	grp := &c.groups[g]
	held := 0.0
	for x := grp.head; x >= 0; x = c.rows[x].next {
		held += c.rows[x].allocated
	}
	return max(grp.used-held, 0)
}
