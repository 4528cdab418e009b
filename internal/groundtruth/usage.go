package groundtruth

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// hostOwner owns host processes' activity: it is unattributed.
const hostOwner = ""

// track is one process's activity, clipped to its lifetime and the scenario.
type track struct {
	owner string // container key, hostOwner for host processes
	dev   device
	segs  []scenario.Segment
}

// usage is the scenario's usage partition: seconds per (device, owner),
// where device is a MIG instance UUID or a whole GPU UUID.
type usage struct {
	on map[string]map[string]float64
}

func (u *usage) add(dev, owner string, sec float64) {
	if u.on[dev] == nil {
		u.on[dev] = make(map[string]float64)
	}
	u.on[dev][owner] += sec
}

// usedBy sums one owner's seconds over every device.
func (u *usage) usedBy(owner string) float64 {
	sum := 0.0
	for _, dev := range sortedKeys(u.on) {
		sum += u.on[dev][owner]
	}
	return sum
}

// unattributed sums host processes' seconds per physical GPU UUID.
func (u *usage) unattributed(idx *deviceIndex) map[string]float64 {
	out := make(map[string]float64)
	for _, dev := range sortedKeys(u.on) {
		if sec, ok := u.on[dev][hostOwner]; ok {
			out[idx.byUUID[dev].gpu.UUID] += sec
		}
	}
	return out
}

// collectTracks resolves every pod and host process to its device and
// clips its busy segments to the process's lifetime, which defaults to and
// never leaves its container's running window.
func collectTracks(sc *scenario.Scenario, idx *deviceIndex) ([]track, error) {
	var out []track
	for pi := range sc.Pods {
		p := &sc.Pods[pi]
		for _, k := range podContainers(sc, p, pi) {
			owner := p.Namespace + "/" + p.Name + "/" + k.c.Name
			for qi, proc := range k.c.Processes {
				where := fmt.Sprintf("%s.processes[%d] (pid %d)", k.path, qi, proc.PID)
				t, err := newTrack(sc, idx, owner, proc, k.win.start, k.win.end, where)
				if err != nil {
					return nil, err
				}
				out = append(out, t)
			}
		}
	}
	for hi, proc := range sc.HostProcesses {
		where := fmt.Sprintf("hostProcesses[%d] (pid %d)", hi, proc.PID)
		t, err := newTrack(sc, idx, hostOwner, proc, 0, sc.Duration, where)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func newTrack(sc *scenario.Scenario, idx *deviceIndex, owner string, proc scenario.Process, defStart, defEnd time.Duration, where string) (track, error) {
	dev, ok := idx.byUUID[proc.Device]
	if !ok {
		return track{}, fmt.Errorf("%s: device %q is not on this node", where, proc.Device)
	}
	if dev.gpu.Mode == scenario.ModeMIG && dev.instance == "" {
		return track{}, fmt.Errorf("%s: device %q is a MIG-enabled GPU; processes run on its instances", where, proc.Device)
	}
	start, end := max(proc.Start, defStart), proc.End
	if end == 0 || end > defEnd {
		end = defEnd
	}
	start = max(start, 0)
	end = min(end, sc.Duration)
	t := track{owner: owner, dev: dev}
	for si, s := range proc.Busy {
		if s.Fraction < 0 || s.Fraction > 1 {
			return track{}, fmt.Errorf("%s: busy[%d].fraction %v outside [0,1]", where, si, s.Fraction)
		}
		from, to := max(s.From, start), min(s.To, end)
		if to > from && s.Fraction > 0 {
			t.segs = append(t.segs, scenario.Segment{From: from, To: to, Fraction: s.Fraction})
		}
	}
	return t, nil
}

// measure integrates every track. Time-sliced devices (exclusive,
// time-slicing, HAMi, each MIG instance) attribute each process its own busy
// integral, weighted by the instance's share of the GPU; MPS GPUs split
// their busy time per driver sample period.
func measure(sc *scenario.Scenario, tracks []track) *usage {
	u := &usage{on: make(map[string]map[string]float64)}
	mps := make(map[string][]track)
	for _, t := range tracks {
		if t.dev.gpu.Mode == scenario.ModeMPS {
			mps[t.dev.gpu.UUID] = append(mps[t.dev.gpu.UUID], t)
			continue
		}
		area := 0.0
		for _, s := range t.segs {
			area += s.Fraction * (s.To - s.From).Seconds()
		}
		u.add(t.dev.uuid(), t.owner, t.dev.weight*area)
	}
	period := sc.DriverSamplePeriod
	if period <= 0 {
		period = time.Second / 6
	}
	for gpu, ts := range mps {
		split := splitMPS(ts, period)
		for _, owner := range sortedKeys(split) {
			u.add(gpu, owner, split[owner])
		}
	}
	return u
}
