package nvmlsource

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/attribution"
)

// processCall is one of the running-process calls of an nvml.Device.
type processCall struct {
	what string // for errors: "cannot <what> of GPU ..."
	list func(nvml.Device) ([]nvml.ProcessInfo, nvml.Return)
}

var processCalls = [...]processCall{
	{"list processes", nvml.Device.GetComputeRunningProcesses},
	{"list MPS processes", nvml.Device.GetMPSComputeRunningProcesses},
}

// readProcesses lists the GPU's compute and MPS client processes, each
// once. On a MIG-enabled GPU the lists of the MIG device handles say which
// instance a process runs on; the GPU-level list's GpuInstanceId is used
// for processes that only it shows.
func (s *Source) readProcesses(d *device, r *Reading, t *tally) {
	start := len(r.Processes)
	clear(s.pidIdx)
	for _, call := range processCalls {
		procs, ret := call.list(d.handle)
		if !s.processCallOK(ret, r, t, func() error { return d.errorf(call.what, ret) }) {
			continue
		}
		for _, p := range procs {
			s.mergeProcess(r, d, p, d.deviceForInstance(p.GpuInstanceId), false)
		}
	}
	for i := range d.mig {
		m := &d.mig[i]
		for _, call := range processCalls {
			procs, ret := call.list(m.handle)
			if !s.processCallOK(ret, r, t, func() error {
				return d.errorf(fmt.Sprintf("%s on MIG device %d (%s)", call.what, m.index, m.inst.UUID), ret)
			}) {
				continue
			}
			for _, p := range procs {
				s.mergeProcess(r, d, p, m.inst.UUID, true)
			}
		}
	}
	slices.SortFunc(r.Processes[start:], func(a, b attribution.Process) int { return cmp.Compare(a.PID, b.PID) })
}

// processCallOK tallies a process-list call. NOT_SUPPORTED (MPS calls on a
// GPU without MPS, old drivers) is an empty list, not a failure.
func (s *Source) processCallOK(ret nvml.Return, r *Reading, t *tally, err func() error) bool {
	switch ret {
	case nvml.SUCCESS:
		t.ok++
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		t.ok++
		return false
	default:
		s.fail(r, t, err(), ret)
		return false
	}
}

// mergeProcess adds p to this GPU's processes, or merges it into the entry
// the PID already has: the larger memory figure wins, and a MIG device's
// own list (authoritative) decides which device the process runs on.
func (s *Source) mergeProcess(r *Reading, d *device, p nvml.ProcessInfo, dev string, authoritative bool) {
	if p.Pid == 0 {
		return
	}
	mib := bytesToMiB(p.UsedGpuMemory)
	if i, ok := s.pidIdx[p.Pid]; ok {
		q := &r.Processes[i]
		if authoritative {
			q.Device = dev
		}
		q.MemoryMiB = max(q.MemoryMiB, mib)
		return
	}
	s.pidIdx[p.Pid] = len(r.Processes)
	r.Processes = append(r.Processes, attribution.Process{PID: p.Pid, GPU: d.uuid, Device: dev, MemoryMiB: mib})
}

// deviceForInstance returns the MIG UUID of GPU instance gi, or the GPU's
// own UUID when MIG is off or gi names no known instance.
func (d *device) deviceForInstance(gi uint32) string {
	if !d.migEnabled {
		return d.uuid
	}
	for i := range d.mig {
		if d.mig[i].inst.GPUInstanceID >= 0 && uint32(d.mig[i].inst.GPUInstanceID) == gi {
			return d.mig[i].inst.UUID
		}
	}
	return d.uuid
}

// bytesToMiB converts NVML's used-memory bytes, where all ones means "not
// available" (for example under WDDM or without permission).
func bytesToMiB(b uint64) uint64 {
	if b == math.MaxUint64 {
		return 0
	}
	return b >> 20
}
