package scenario

import (
	"cmp"
	"slices"
)

// checkPIDs rejects a PID alive twice at once on the same device. Lifetimes
// are closed intervals, so a reused PID must appear strictly after its first
// owner is gone: the collector lists a process at both ends of its life.
//
// The check is per device, not node-wide: the shared example migmix-107
// gives PID 70002 to two pods on two MIG instances for the whole run, and a
// scenario following the contract must load. On one device, though, a
// duplicate would be two entries for one process in NVML's list.
func checkPIDs(p *problems, s *Scenario, devices map[string]deviceRef, procs []procRef) {
	type key struct {
		pid    uint32
		device string
	}
	groups := make(map[key][]procRef)
	var order []key // first appearance, so that errors come out in file order
	for _, pr := range procs {
		k := key{pr.p.PID, pr.p.Device}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], pr)
	}
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		slices.SortStableFunc(g, func(a, b procRef) int { return cmp.Compare(a.p.Start, b.p.Start) })
		last := g[0]
		for _, pr := range g[1:] {
			if pr.p.Start <= last.p.End {
				p.addf(field(pr.path, "pid"), "%d on %s is alive during [%s,%s], overlapping %s alive during [%s,%s]",
					k.pid, devices[k.device].path(), pr.p.Start, pr.p.End, last.path, last.p.Start, last.p.End)
			}
			if pr.p.End > last.p.End {
				last = pr
			}
		}
	}
}
