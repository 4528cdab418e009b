package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// lifeEvent is a process starting or ending. A process is alive when
// start <= t <= end, so a start is due once t >= at and an end once t > at.
type lifeEvent struct {
	at  time.Duration
	end bool
	p   *proc
}

func (e lifeEvent) due(t time.Duration) bool {
	if e.end {
		return t > e.at
	}
	return t >= e.at
}

// buildLifecycle sorts every start and end so Advance applies them
// incrementally. At equal times starts come first: a process ending at t is
// still alive at t, and a PID reused at t belongs to the newer process.
func (n *Node) buildLifecycle() {
	n.life = make([]lifeEvent, 0, 2*len(n.procs))
	for _, p := range n.procs {
		n.life = append(n.life, lifeEvent{p.start, false, p}, lifeEvent{p.end, true, p})
	}
	slices.SortStableFunc(n.life, func(a, b lifeEvent) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		switch {
		case !a.end && b.end:
			return -1
		case a.end && !b.end:
			return 1
		}
		return 0
	})
}

// applyLife applies every start and end due at t, in time order, to the
// alive lists and the procfs tree.
func (n *Node) applyLife(t time.Duration) error {
	for ; n.nextLife < len(n.life) && n.life[n.nextLife].due(t); n.nextLife++ {
		e := n.life[n.nextLife]
		var err error
		if e.end {
			err = n.endProc(e.p)
		} else {
			err = n.startProc(e.p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) startProc(p *proc) error {
	if g := p.group(); g != nil {
		g.addAlive(p)
	}
	// A reused PID replaces the older process's entry.
	if _, taken := n.pidOwner[p.pid]; taken {
		if err := n.procfs.remove(p.pid); err != nil {
			return fmt.Errorf("cannot start process %d: %w", p.pid, err)
		}
	}
	if err := n.procfs.write(p); err != nil {
		return fmt.Errorf("cannot start process %d: %w", p.pid, err)
	}
	n.pidOwner[p.pid] = p
	return nil
}

func (n *Node) endProc(p *proc) error {
	if g := p.group(); g != nil {
		g.removeAlive(p)
	}
	if n.pidOwner[p.pid] != p {
		return nil // the PID already belongs to a newer process
	}
	delete(n.pidOwner, p.pid)
	if err := n.procfs.remove(p.pid); err != nil {
		return fmt.Errorf("cannot end process %d: %w", p.pid, err)
	}
	return nil
}

// group is the device group the process runs in; nil for the MPS server,
// which NVML lists in no running-process list.
func (p *proc) group() *group {
	switch {
	case p.mpsServer:
		return nil
	case p.inst != nil:
		return p.inst.grp
	}
	return p.gpu.grp
}
