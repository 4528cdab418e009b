package scenario

import (
	"time"
)

// RestartAlways is the restartPolicy that makes an init container a
// sidecar; it is the only restart policy an init container may have.
const RestartAlways = "Always"

// initContainers converts a pod's init containers and computes their run
// windows.
//
// Plain init containers run one after another in spec order: each starts
// at its turn (the previous plain one's end, the first at the pod's start)
// and runs to its own `end`. A plain init container without `end` exits
// at its turn: a zero-second window [turn, turn], which the simulator
// lists only at that very instant and in which no process can run. A
// sidecar (restartPolicy Always) starts at its turn and runs to the pod's
// end; it does not delay the init containers after it.
func (c *converter) initContainers(path string, r *FilePod, podStart, podEnd time.Duration, lifeOK bool) []Container {
	var out []Container
	turn := podStart
	for i, ri := range r.InitContainers {
		ip := index(field(path, "initContainers"), i)
		start, end := turn, turn
		switch ri.RestartPolicy {
		case "":
			end = c.plainInitEnd(field(ip, "end"), ri.End, turn, podEnd, lifeOK)
			turn = end
		case RestartAlways:
			end = podEnd
			if ri.End.set() {
				c.p.addf(field(ip, "end"), "given for a sidecar (restartPolicy %s), which runs to the pod's end; end is for plain init containers", RestartAlways)
			}
		default:
			c.p.addf(field(ip, "restartPolicy"), "%q is not %s, the only restart policy of an init container (leave it out for a plain one)", shortText(ri.RestartPolicy), RestartAlways)
		}
		ct := c.container(ip, r.UID, ri.Name, &ri.FileContainerSpec, lifetimeOf(podStart, podEnd, "the pod's").defaulting(start, end))
		ct.RestartPolicy = ri.RestartPolicy
		ct.Start, ct.End = start, end
		out = append(out, ct)
	}
	return out
}

// plainInitEnd reads a plain init container's end, which must lie in
// [turn, podEnd]; an invalid or absent one yields turn so that the
// containers after it still get a sensible window.
func (c *converter) plainInitEnd(path string, v Value, turn, podEnd time.Duration, lifeOK bool) time.Duration {
	end, ok := durationField(&c.p, path, v, turn)
	switch {
	case !ok:
		return turn
	case end < turn:
		c.p.addf(path, "%s is before the init container's turn at %s (the end of the plain init containers before it, or the pod's start)", end, turn)
		return turn
	case lifeOK && end > podEnd:
		c.p.addf(path, "%s is after the pod's end %s", end, podEnd)
		return turn
	}
	return end
}
