package nvmlsource

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/attribution"
)

// tally counts, for one device, the calls that told us something (data,
// "nothing new", "not supported") and the calls that failed.
type tally struct{ ok, failed int }

// readDevice reads one GPU into r and returns its GPU entry. ok is false
// when every call on it failed.
func (s *Source) readDevice(d *device, nowUS uint64, r *Reading, devSamples *[]attribution.UtilSample) (gpu attribution.GPU, ok bool) {
	gpu = d.gpu()
	var t tally
	// An nvml.Interface other than the real one (a simulator built on
	// go-nvml's mock) panics on a method it does not implement; that must
	// cost this GPU's data, not the collector.
	defer func() {
		if p := recover(); p != nil {
			r.Errors = append(r.Errors, fmt.Errorf("cannot read GPU %d (%s): NVML call panicked: %v", d.index, d.uuid, p))
			ok = t.ok > 0
		}
	}()
	s.readProcesses(d, r, &t)
	s.readProcessUtilisation(d, nowUS, r, &t)
	s.readDeviceSamples(d, nowUS, &gpu, devSamples, r, &t)
	s.readEnergy(d, &gpu, r, &t)
	gpu.SamplePeriod = time.Duration(d.state.periodUS) * time.Microsecond
	return gpu, t.ok > 0
}

// fail records a failed call on d and notes whether the failure says the
// topology is out of date.
func (s *Source) fail(r *Reading, t *tally, err error, ret nvml.Return) {
	r.Errors = append(r.Errors, err)
	t.failed++
	if invalidatesTopology(ret) {
		s.stale = true
	}
}

// invalidatesTopology reports whether ret means a handle no longer names
// what it named at the last refresh.
func invalidatesTopology(ret nvml.Return) bool {
	switch ret {
	case nvml.ERROR_GPU_IS_LOST, nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_GPU_NOT_FOUND,
		nvml.ERROR_NOT_FOUND, nvml.ERROR_RESET_REQUIRED:
		return true
	}
	return false
}

// readEnergy reads the total energy counter.
func (s *Source) readEnergy(d *device, gpu *attribution.GPU, r *Reading, t *tally) {
	mj, ret := d.handle.GetTotalEnergyConsumption()
	switch ret {
	case nvml.SUCCESS:
		gpu.EnergyMilliJoules, gpu.EnergyOK = mj, true
		t.ok++
	case nvml.ERROR_NOT_SUPPORTED:
		if !d.state.notedEnergyUnsupported {
			d.state.notedEnergyUnsupported = true
			s.log.Info("GPU has no energy counter", "gpu", d.index, "uuid", d.uuid)
		}
		t.ok++
	default:
		s.fail(r, t, d.errorf("read the energy counter", ret), ret)
	}
}
