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
// is resolved afresh when it appears. A PID can also be reused within one
// poll (its first process exits and another container's process gets the
// PID before the next poll), so it never leaves the lists: retireGone marks
// an entry stale once the container it names is no longer in the metadata
// (its pod ended, or the container was replaced), and a stale entry is
// resolved again when it is next seen. That costs a set of the metadata's
// container IDs per cycle and a procfs read only for PIDs whose container
// has gone, never one per process per cycle.
type ownerCache struct {
	res     ownerResolver
	entries map[uint32]ownerEntry
	cycle   uint64
	live    map[string]struct{} // retireGone's scratch: container IDs listed
}

type ownerEntry struct {
	owner attribution.Owner
	seen  uint64 // last cycle the PID was seen
	stale bool   // its container is gone: resolve again when seen
}

func newOwnerCache(res ownerResolver) *ownerCache {
	return &ownerCache{res: res, entries: make(map[uint32]ownerEntry), live: make(map[string]struct{})}
}

// resolve returns the owner of pid, reading procfs only for a new PID, and
// returns the procfs error if there was one (the owner is then unresolved).
func (c *ownerCache) resolve(pid uint32) (attribution.Owner, error) {
	if e, ok := c.entries[pid]; ok && e.owner.Resolved && !e.stale {
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
// A stale entry is resolved again if the PID is still there (reused), else
// it keeps the owner it had (the samples are its last ones).
func (c *ownerCache) lookup(pid uint32) attribution.Owner {
	e, ok := c.entries[pid]
	if ok && !e.stale {
		e.seen = c.cycle
		c.entries[pid] = e
		return e.owner
	}
	o, err := c.res.Resolve(pid)
	if err != nil {
		if ok {
			e.seen = c.cycle
			c.entries[pid] = e
			return e.owner
		}
		return attribution.Owner{}
	}
	c.entries[pid] = ownerEntry{owner: o, seen: c.cycle}
	return o
}

// retireGone marks stale the cached pod processes whose container this
// cycle's metadata no longer lists, so that a PID reused within a poll by
// another container is resolved to its new owner. It must run before the
// cycle's resolve and lookup calls. Metadata that failed to read, or lists
// no pods at all, retires nothing: every PID would be read again.
func (c *ownerCache) retireGone(obs *attribution.Observation) {
	meta := &obs.Metadata
	if len(c.entries) == 0 || obs.Degraded[SourceKubeMeta] || len(meta.Pods) == 0 {
		return
	}
	clear(c.live)
	for pi := range meta.Pods {
		p := &meta.Pods[pi]
		for ci := range p.Containers {
			if id := p.Containers[ci].ID; id != "" {
				c.live[id] = struct{}{}
			}
		}
		for ci := range p.InitContainers {
			if id := p.InitContainers[ci].ID; id != "" {
				c.live[id] = struct{}{}
			}
		}
	}
	for pid, e := range c.entries {
		if e.stale || !e.owner.Resolved || e.owner.PodUID == "" {
			continue
		}
		if _, ok := c.live[e.owner.ContainerID]; !ok {
			e.stale = true
			c.entries[pid] = e
		}
	}
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
