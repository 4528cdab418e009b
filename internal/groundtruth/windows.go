package groundtruth

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// window is when a container runs: [start, end) in offsets.
type window struct{ start, end time.Duration }

func (w window) seconds() float64 { return max(0, (w.end - w.start).Seconds()) }

// ctr is one container of a pod, regular or init, with where it sits in
// the pod spec (HAMi's annotation entries follow that order).
type ctr struct {
	c    *scenario.Container
	init bool
	pos  int // index within InitContainers or Containers
	win  window
	path string // field path for errors
}

// podContainers lists a pod's init containers (spec order) then its
// regular containers, with their running windows. The windows are derived
// here from each init container's End and restart policy, not taken from
// the parser's Start/End, so that a parser slip cannot hide in the truth:
// plain init containers run one after another from the pod's start, each
// to its End; a sidecar (restartPolicy Always) runs from its turn to the
// pod's end; regular containers start when the last plain init container
// ends and hold their devices from then to the pod's end (the scenario
// format: "the containers start when the last plain init container
// ends"). Everything is clipped to the pod's lifetime.
func podContainers(sc *scenario.Scenario, p *scenario.Pod, pi int) []ctr {
	start, end := podLifetime(sc, p)
	out := make([]ctr, 0, len(p.InitContainers)+len(p.Containers))
	turn := start
	for i := range p.InitContainers {
		c := &p.InitContainers[i]
		w := window{turn, end}
		if c.RestartPolicy != "Always" {
			w.end = min(max(c.End, turn), end)
			turn = w.end
		}
		out = append(out, ctr{c: c, init: true, pos: i, win: w, path: fieldPath(pi, "initContainers", i)})
	}
	for i := range p.Containers {
		out = append(out, ctr{c: &p.Containers[i], pos: i, win: window{turn, end}, path: fieldPath(pi, "containers", i)})
	}
	return out
}

func fieldPath(pi int, list string, i int) string {
	return fmt.Sprintf("pods[%d].%s[%d]", pi, list, i)
}

// sweep cuts time at every start and end of wins and calls visit for each
// piece [a, b) with the indexes of the windows covering all of it, in
// order, so that shares can be settled piece by piece.
func sweep(wins []window, visit func(a, b time.Duration, live []int)) {
	cuts := make([]time.Duration, 0, 2*len(wins))
	for _, w := range wins {
		cuts = append(cuts, w.start, w.end)
	}
	cuts = sortedUnique(cuts)
	var live []int
	for i := 0; i+1 < len(cuts); i++ {
		a, b := cuts[i], cuts[i+1]
		live = live[:0]
		for j, w := range wins {
			if w.start <= a && w.end >= b {
				live = append(live, j)
			}
		}
		visit(a, b, live)
	}
}
