package groundtruth

import (
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// MemoryTruth is a container's framebuffer over the scenario.
type MemoryTruth struct {
	// MiBSeconds is the exact integral of its processes' memory over
	// their lives.
	MiBSeconds float64
	// Tol is what sampling once per poll may cost: a collector charges
	// the memory it reads at the end of a cycle for the whole cycle, so
	// each change of |d| MiB (a start and an end count as changes from
	// and to 0) may be off by |d| x pollInterval.
	Tol float64
}

// Memory computes every container's memory truth, keyed
// "namespace/pod/container". It reads the scenario's intervals directly
// (not Process.MemoryAt, nor anything the simulator uses): the integral is
// the baseline over the whole life plus, for each interval, its
// difference from the baseline over the interval.
func Memory(sc *scenario.Scenario) map[string]MemoryTruth {
	out := map[string]MemoryTruth{}
	poll := sc.PollInterval.Seconds()
	for pi := range sc.Pods {
		p := &sc.Pods[pi]
		for _, k := range podContainers(sc, p, pi) {
			key := p.Namespace + "/" + p.Name + "/" + k.c.Name
			mt := out[key]
			for _, proc := range k.c.Processes {
				integral, change := processMemory(proc, k.win.start, k.win.end, sc.Duration)
				mt.MiBSeconds += integral
				mt.Tol += change * poll
			}
			mt.Tol += 1e-6 * mt.MiBSeconds
			out[key] = mt
		}
	}
	return out
}

// processMemory returns the MiB-seconds one process holds over its life
// (clipped to its container's window and the scenario, as the usage truth
// clips it) and the sum of the absolute changes of its memory along the
// way, the first rise from 0 and the last fall to 0 included.
func processMemory(proc scenario.Process, defStart, defEnd, dur time.Duration) (integral, change float64) {
	start, end := max(proc.Start, defStart, 0), proc.End
	if end == 0 || end > defEnd {
		end = defEnd
	}
	end = min(end, dur)
	if end <= start {
		return 0, 0
	}
	base := float64(proc.MemoryMiB)
	// first is what it holds from its first instant on: an interval
	// starting then, else the baseline.
	first := base
	if len(proc.Memory) > 0 && proc.Memory[0].From <= start && proc.Memory[0].To > start {
		first = float64(proc.Memory[0].MiB)
	}
	integral = base * (end - start).Seconds()
	prev, at := first, start // the value held just before each interval
	for _, m := range proc.Memory {
		from, to := max(m.From, start), min(m.To, end)
		if to <= from {
			continue
		}
		v := float64(m.MiB)
		integral += (v - base) * (to - from).Seconds()
		if from > at {
			// Back to the baseline between two intervals.
			change += abs(base - prev)
			prev = base
		}
		change += abs(v - prev)
		prev, at = v, to
	}
	// Back to the baseline after the last interval, or at the very instant
	// of its end (a process is listed at its end, holding memoryMiB); then
	// the rise from nothing at the start and the fall to nothing after.
	change += abs(base-prev) + first + base
	return integral, change
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
