package collector

import "github.com/gpuledger/gpuledger/attribution"

// ownerResolver resolves a PID to its owner. procfs.Resolver satisfies it.
type ownerResolver interface {
	Resolve(pid uint32) (attribution.Owner, error)
}

// ownerCache keeps PID owners between cycles so that procfs is read once per
// process, not once per cycle. An entry lives while its PID shows up in the
// running-process list or in samples; a PID absent for a whole cycle is
// forgotten, so a PID reused by another container after its first owner exits
// is resolved afresh when it appears.
type ownerCache struct {
	res     ownerResolver
	entries map[uint32]ownerEntry
	cycle   uint64
}

type ownerEntry struct {
	owner attribution.Owner
	seen  uint64 // last cycle the PID was seen
}

func newOwnerCache(res ownerResolver) *ownerCache {
	return &ownerCache{res: res, entries: make(map[uint32]ownerEntry)}
}

// resolve returns the owner of pid, reading procfs only for a new PID, and
// returns the procfs error if there was one (the owner is then unresolved).
func (c *ownerCache) resolve(pid uint32) (attribution.Owner, error) {
	if e, ok := c.entries[pid]; ok && e.owner.Resolved {
		e.seen = c.cycle
		c.entries[pid] = e
		return e.owner, nil
	}
	o, err := c.res.Resolve(pid)
	if err != nil {
		o = attribution.Owner{}
	}
	c.entries[pid] = ownerEntry{owner: o, seen: c.cycle}
	return o, err
}

// lookup returns a cached owner for a PID seen only in samples (a process
// that exited within the cycle), resolving it if it is still there.
func (c *ownerCache) lookup(pid uint32) attribution.Owner {
	if e, ok := c.entries[pid]; ok {
		e.seen = c.cycle
		c.entries[pid] = e
		return e.owner
	}
	o, err := c.res.Resolve(pid)
	if err != nil {
		return attribution.Owner{}
	}
	c.entries[pid] = ownerEntry{owner: o, seen: c.cycle}
	return o
}

// endCycle forgets PIDs not seen in this cycle and starts the next one.
func (c *ownerCache) endCycle() {
	for pid, e := range c.entries {
		if e.seen != c.cycle {
			delete(c.entries, pid)
		}
	}
	c.cycle++
}
