package scenario

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// checkInvariants asserts what every successfully parsed scenario promises
// its users, recomputed in the simplest way.
func checkInvariants(t *testing.T, s *Scenario) {
	t.Helper()
	if s.Duration <= 0 || s.PollInterval <= 0 || s.LedgerInterval <= 0 || s.DriverSamplePeriod <= 0 {
		t.Fatalf("non-positive interval: %v %v %v %v", s.Duration, s.PollInterval, s.LedgerInterval, s.DriverSamplePeriod)
	}
	for _, ref := range s.Processes() {
		p := ref.Process
		gpu, inst, ok := s.Device(p.Device)
		if !ok {
			t.Fatalf("pid %d names unknown device %q", p.PID, p.Device)
		}
		if (gpu.Mode == ModeMIG) != (inst != nil) {
			t.Fatalf("pid %d on %q: mode %s with instance %v", p.PID, p.Device, gpu.Mode, inst)
		}
		lo, hi := time.Duration(0), s.Duration
		if ref.Pod != nil {
			lo, hi = processBounds(t, ref.Pod, ref.Container)
			if len(ref.Container.ID) != 64 {
				t.Fatalf("container ID %q", ref.Container.ID)
			}
		}
		if !(lo <= p.Start && p.Start < p.End && p.End <= hi) {
			t.Fatalf("pid %d lifetime [%v,%v] outside [%v,%v]", p.PID, p.Start, p.End, lo, hi)
		}
		for i, seg := range p.Busy {
			if !(seg.Fraction > 0 && seg.Fraction <= 1) || seg.From >= seg.To || seg.From < p.Start || seg.To > p.End {
				t.Fatalf("pid %d segment %d = %+v in [%v,%v]", p.PID, i, seg, p.Start, p.End)
			}
			if i > 0 && p.Busy[i-1].To > seg.From {
				t.Fatalf("pid %d segments %d and %d overlap or are unsorted", p.PID, i-1, i)
			}
		}
		for i, m := range p.Memory {
			if m.From >= m.To || m.From < p.Start || m.To > p.End {
				t.Fatalf("pid %d memory interval %d = %+v in [%v,%v]", p.PID, i, m, p.Start, p.End)
			}
			if i > 0 && p.Memory[i-1].To > m.From {
				t.Fatalf("pid %d memory intervals %d and %d overlap or are unsorted", p.PID, i-1, i)
			}
		}
	}
	for i := range s.Pods {
		checkPodShapes(t, &s.Pods[i])
	}
	checkGPUIDs(t, s.GPUs)
	for _, g := range s.GPUs {
		if g.Mode == ModeMPS {
			continue
		}
		devices := []string{g.UUID}
		for _, m := range g.MIGInstances {
			devices = append(devices, m.UUID)
		}
		for _, d := range devices {
			if at, sum, over := referenceOverload(s.Pods, d, s.HostProcesses...); over {
				t.Fatalf("%s sums to %v at %v", d, sum, at)
			}
		}
	}
}

// processBounds is where a container's processes may run: an init
// container's window, or for a regular container from the end of the
// plain init containers (recomputed here) to the pod's end.
func processBounds(t *testing.T, pod *Pod, ct *Container) (time.Duration, time.Duration) {
	t.Helper()
	if !(0 <= pod.Start && pod.Start < pod.End) {
		t.Fatalf("pod %s lifetime [%v,%v]", pod.Name, pod.Start, pod.End)
	}
	for i := range pod.InitContainers {
		if &pod.InitContainers[i] == ct {
			return ct.Start, ct.End
		}
	}
	lo := pod.Start
	for _, ic := range pod.InitContainers {
		if ic.RestartPolicy == "" {
			lo = max(lo, ic.End)
		}
	}
	return lo, pod.End
}

// checkPodShapes checks container windows and annotation changes.
func checkPodShapes(t *testing.T, pod *Pod) {
	t.Helper()
	for i := range pod.Containers {
		ct := &pod.Containers[i]
		// Regular containers run from the end of the plain init containers.
		lo, hi := processBounds(t, pod, ct)
		if ct.Start != lo || ct.End != hi {
			t.Fatalf("pod %s container %s window [%v,%v], want [%v,%v]", pod.Name, ct.Name, ct.Start, ct.End, lo, hi)
		}
	}
	turn := pod.Start
	for _, ct := range pod.InitContainers {
		switch ct.RestartPolicy {
		case "":
			if ct.Start != turn || ct.End < ct.Start || ct.End > pod.End {
				t.Fatalf("pod %s init container %s window [%v,%v], turn %v", pod.Name, ct.Name, ct.Start, ct.End, turn)
			}
			turn = ct.End
		case "Always":
			if ct.Start != turn || ct.End != pod.End {
				t.Fatalf("pod %s sidecar %s window [%v,%v], turn %v", pod.Name, ct.Name, ct.Start, ct.End, turn)
			}
		default:
			t.Fatalf("pod %s init container %s restartPolicy %q", pod.Name, ct.Name, ct.RestartPolicy)
		}
	}
	for i, ch := range pod.AnnotationChanges {
		if ch.At < pod.Start || ch.At > pod.End || (i > 0 && ch.At < pod.AnnotationChanges[i-1].At) {
			t.Fatalf("pod %s annotation change %d at %v", pod.Name, i, ch.At)
		}
	}
}

// checkGPUIDs checks minors are unique on the node and GIs on each GPU.
func checkGPUIDs(t *testing.T, gpus []GPU) {
	t.Helper()
	minors := map[int]bool{}
	for _, g := range gpus {
		if g.Minor < 0 || minors[g.Minor] {
			t.Fatalf("minor %d negative or repeated", g.Minor)
		}
		minors[g.Minor] = true
		gis := map[int]bool{}
		for _, m := range g.MIGInstances {
			if m.GI < 0 || gis[m.GI] {
				t.Fatalf("gpu %s: gi %d negative or repeated", g.UUID, m.GI)
			}
			gis[m.GI] = true
		}
	}
}

// referenceOverload finds the first instant at which the busy fractions on
// a device exceed 1 by brute force: the sum only rises where a segment
// starts, so checking every start is enough.
func referenceOverload(pods []Pod, device string, hosts ...Process) (time.Duration, float64, bool) {
	var procs []Process
	for _, pod := range pods {
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			for _, p := range c.Processes {
				if p.Device == device {
					procs = append(procs, p)
				}
			}
		}
	}
	for _, p := range hosts {
		if p.Device == device {
			procs = append(procs, p)
		}
	}
	first, firstSum, found := time.Duration(0), 0.0, false
	for _, p := range procs {
		for _, cand := range p.Busy {
			t := cand.From
			if found && t >= first {
				continue
			}
			sum := 0.0
			for _, q := range procs {
				for _, seg := range q.Busy {
					if seg.From <= t && t < seg.To {
						sum += seg.Fraction
					}
				}
			}
			if sum > 1+1e-9 {
				first, firstSum, found = t, sum, true
			}
		}
	}
	return first, firstSum, found
}

// TestFirstOverloadMatchesReference compares the sweep with the brute force
// on random traces on one device.
func TestFirstOverloadMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var hosts []Process
		var refs []procRef
		for i := range 1 + rng.IntN(4) {
			p := Process{PID: uint32(i + 1), Device: "d"}
			at := time.Duration(rng.IntN(5)) * time.Second
			for range rng.IntN(6) {
				length := time.Duration(1+rng.IntN(4)) * time.Second
				// Fractions in tenths so that exact sums of 1 occur often.
				p.Busy = append(p.Busy, Segment{at, at + length, float64(1+rng.IntN(10)) / 10})
				at += length + time.Duration(rng.IntN(3))*time.Second
			}
			hosts = append(hosts, p)
		}
		for i := range hosts {
			refs = append(refs, procRef{path: "p", p: &hosts[i]})
		}
		wantAt, wantSum, wantOver := referenceOverload(nil, "d", hosts...)
		gotAt, gotSum, gotOver := firstOverload(refs)
		if gotOver != wantOver || (wantOver && (gotAt != wantAt || abs(gotSum-wantSum) > 1e-9)) {
			t.Fatalf("trial %d: firstOverload = %v %v %v, reference = %v %v %v\n%+v",
				trial, gotAt, gotSum, gotOver, wantAt, wantSum, wantOver, hosts)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
