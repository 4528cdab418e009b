package exposition

import "time"

// labelCache keeps the label sets of one small family (findings, inventory,
// health) across cycles, keyed by their label values, so a steady node
// validates and renders them once rather than every cycle. It lives in the
// Exporter and is only touched by Update.
type labelCache struct {
	sets map[string]*cachedLabels
	key  []byte // scratch for building lookup keys
}

type cachedLabels struct {
	ls   *labelSet
	seen uint64 // cycle that last emitted it
}

// get returns the label set of lv for this cycle, building it on first use
// (fresh is then true, so the caller can report invalid values once). It
// returns nil when lv was already emitted this cycle: a family never holds
// a series twice.
func (c *labelCache) get(f *family, cycle uint64, lv []string) (ls *labelSet, fresh bool) {
	c.key = c.key[:0]
	for _, v := range lv {
		// 0xff cannot occur in valid UTF-8; invalid values fail
		// validation and are never emitted whatever their key.
		c.key = append(append(c.key, v...), 0xff)
	}
	if e, ok := c.sets[string(c.key)]; ok {
		if e.seen == cycle {
			return nil, false
		}
		e.seen = cycle
		return e.ls, false
	}
	if c.sets == nil {
		c.sets = make(map[string]*cachedLabels)
	}
	ls = newLabelSet(f.desc, time.Time{}, lv)
	c.sets[string(c.key)] = &cachedLabels{ls: ls, seen: cycle}
	return ls, true
}

// sweep forgets the label sets the given cycle did not emit.
func (c *labelCache) sweep(cycle uint64) {
	for k, e := range c.sets {
		if e.seen != cycle {
			delete(c.sets, k)
		}
	}
}
