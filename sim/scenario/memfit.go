package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/gpu"
)

// checkMemoryFits rejects a scenario in which the processes on one device
// (a whole GPU, or a MIG instance) hold more framebuffer at some instant
// than the device has: CUDA would have refused the allocation, so no node
// can show it. The memory each process holds comes from MemoryAt while it
// is alive (both ends of its life included).
//
// Only devices where some process describes memory over time (memory or
// memoryTrace, this project's extension) are checked: the scenario format's
// physics constrain activity, not memory, so a scenario written with one
// memoryMiB per process must run whatever its sum.
func checkMemoryFits(p *problems, s *Scenario, devices map[string]deviceRef, procs []procRef) {
	byDevice := make(map[string][]procRef)
	var order []string
	for _, pr := range procs {
		if _, seen := byDevice[pr.p.Device]; !seen {
			order = append(order, pr.p.Device)
		}
		byDevice[pr.p.Device] = append(byDevice[pr.p.Device], pr)
	}
	for _, dev := range order {
		ref := devices[dev]
		size, ok := deviceMemoryMiB(s, ref)
		if !ok {
			continue // an unknown model or profile is reported where it is written
		}
		group := byDevice[dev]
		if !slices.ContainsFunc(group, func(pr procRef) bool { return len(pr.p.Memory) > 0 }) {
			continue
		}
		if peakBound(group) <= size {
			continue // the common case: even every process's peak at once fits
		}
		if t, sum, over := firstMemoryOverflow(group, size); over {
			p.addf(ref.path(), "framebuffer on %s sums to %d MiB at %s (%s), above the device's %d MiB",
				dev, sum, t, memoryHolders(group, t), size)
		}
	}
}

// deviceMemoryMiB is the framebuffer of a whole GPU or of a MIG instance.
func deviceMemoryMiB(s *Scenario, ref deviceRef) (uint64, bool) {
	g := s.GPUs[ref.gpu]
	if ref.mig < 0 {
		mem, err := gpu.ModelMemoryMiB(g.Model)
		return mem, err == nil
	}
	prof, ok := lookupGPUInstance(g.Model, g.MIGInstances[ref.mig].Profile)
	return prof.MemoryMiB, ok
}

// peakBound is the sum of every process's largest memory.
func peakBound(group []procRef) uint64 {
	var sum uint64
	for _, pr := range group {
		peak := pr.p.MemoryMiB
		for _, m := range pr.p.Memory {
			peak = max(peak, m.MiB)
		}
		sum += peak
	}
	return sum
}

// firstMemoryOverflow checks the sum at every instant where it can change
// (a start, an end, an interval's edge), in time order. Between those it is
// constant, so these instants hold its maximum.
func firstMemoryOverflow(group []procRef, size uint64) (time.Duration, uint64, bool) {
	var at []time.Duration
	for _, pr := range group {
		at = append(at, pr.p.Start, pr.p.End)
		for _, m := range pr.p.Memory {
			at = append(at, m.From, m.To)
		}
	}
	slices.Sort(at)
	at = slices.Compact(at)
	for _, t := range at {
		if sum := memoryAt(group, t); sum > size {
			return t, sum, true
		}
	}
	return 0, 0, false
}

func memoryAt(group []procRef, t time.Duration) uint64 {
	var sum uint64
	for _, pr := range group {
		if pr.p.AliveAt(t) {
			sum += pr.p.MemoryAt(t)
		}
	}
	return sum
}

func memoryHolders(group []procRef, t time.Duration) string {
	var parts []string
	n := 0
	for _, pr := range group {
		if !pr.p.AliveAt(t) || pr.p.MemoryAt(t) == 0 {
			continue
		}
		n++
		if n <= maxListed {
			parts = append(parts, fmt.Sprintf("%s pid %d: %d MiB", pr.path, pr.p.PID, pr.p.MemoryAt(t)))
		}
	}
	if n > maxListed {
		parts = append(parts, fmt.Sprintf("and %d more", n-maxListed))
	}
	return strings.Join(parts, ", ")
}
