package nvmlsource

import (
	"cmp"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/attribution"
)

// readProcessUtilisation appends the per-process samples newer than the
// device's lastSeen and not newer than now. Every distinct (pid, timestamp)
// is kept once: several samples of one process in a cycle are several
// sample periods, while a repeated (pid, timestamp) is the same period
// reported twice.
func (s *Source) readProcessUtilisation(d *device, nowUS uint64, r *Reading, t *tally) {
	st := d.state
	if !st.procBaseline {
		// Samples up to now are history from before this collector (or
		// this GPU) was watched: start counting from here.
		st.procBaseline, st.procLastSeen = true, nowUS
		return
	}
	samples, ret := d.handle.GetProcessUtilization(st.procLastSeen)
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_FOUND: // nothing newer than lastSeen
		t.ok++
		return
	case nvml.ERROR_NOT_SUPPORTED: // always so on MIG-enabled GPUs
		if !st.notedUtilUnsupported {
			st.notedUtilUnsupported = true
			s.log.Info("GPU does not report per-process utilisation", "gpu", d.index, "uuid", d.uuid, "mig", d.migEnabled)
		}
		t.ok++
		return
	default:
		s.fail(r, t, d.errorf("read process utilisation", ret), ret)
		return
	}
	t.ok++

	// The driver may hand back samples at or before lastSeen, and ones
	// stamped after now belong to the next cycle's window.
	buf := s.utilBuf[:0]
	for _, x := range samples {
		if x.Pid != 0 && x.TimeStamp > st.procLastSeen && x.TimeStamp <= nowUS {
			buf = append(buf, x)
		}
	}
	slices.SortFunc(buf, func(a, b nvml.ProcessUtilizationSample) int {
		if c := cmp.Compare(a.TimeStamp, b.TimeStamp); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pid, b.Pid); c != 0 {
			return c
		}
		return cmp.Compare(b.SmUtil, a.SmUtil) // duplicates: keep the larger
	})
	lastSeen := st.procLastSeen
	for i, x := range buf {
		if i > 0 && x.Pid == buf[i-1].Pid && x.TimeStamp == buf[i-1].TimeStamp {
			continue
		}
		r.Samples = append(r.Samples, attribution.ProcessSample{
			GPU:    d.uuid,
			PID:    x.Pid,
			At:     fromMicros(x.TimeStamp),
			SMUtil: float64(x.SmUtil),
		})
		lastSeen = max(lastSeen, x.TimeStamp)
	}
	st.procLastSeen = lastSeen
	s.utilBuf = buf[:0]
}

// readDeviceSamples reads GPU_UTILIZATION_SAMPLES newer than the device's
// own lastSeen into gpu.DeviceSamples (carved from the shared devSamples
// buffer) and keeps the sample period estimate up to date. The first Read
// of a device reads the driver's history only to learn the period.
func (s *Source) readDeviceSamples(d *device, nowUS uint64, gpu *attribution.GPU, devSamples *[]attribution.UtilSample, r *Reading, t *tally) {
	st := d.state
	first := !st.sampleBaseline
	since := st.sampleLastSeen
	if first {
		since = 0
	}
	vt, samples, ret := d.handle.GetSamples(nvml.GPU_UTILIZATION_SAMPLES, since)
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_FOUND: // nothing new
		gpu.DeviceSamplesOK = true
		if first {
			st.sampleBaseline, st.sampleLastSeen = true, nowUS
		}
		t.ok++
		return
	case nvml.ERROR_NOT_SUPPORTED: // always so on MIG-enabled GPUs
		if !st.notedSamplesUnsupported {
			st.notedSamplesUnsupported = true
			s.log.Info("GPU does not report utilisation samples", "gpu", d.index, "uuid", d.uuid, "mig", d.migEnabled)
		}
		t.ok++
		return
	default:
		s.fail(r, t, d.errorf("read utilisation samples", ret), ret)
		return
	}

	buf := s.devBuf[:0]
	for _, x := range samples {
		if x.TimeStamp > since && x.TimeStamp <= nowUS {
			buf = append(buf, x)
		}
	}
	slices.SortFunc(buf, func(a, b nvml.Sample) int { return cmp.Compare(a.TimeStamp, b.TimeStamp) })
	s.devBuf = buf[:0]

	start := len(*devSamples)
	lastSeen := since
	for i, x := range buf {
		if i > 0 && x.TimeStamp == buf[i-1].TimeStamp {
			continue
		}
		v, err := decodeSampleValue(vt, x.SampleValue)
		if err != nil {
			*devSamples = (*devSamples)[:start]
			s.fail(r, t, d.errorf("decode utilisation samples", err), nvml.SUCCESS)
			return
		}
		st.observeSample(x.TimeStamp)
		lastSeen = max(lastSeen, x.TimeStamp)
		if !first {
			*devSamples = append(*devSamples, attribution.UtilSample{At: fromMicros(x.TimeStamp), Percent: v})
		}
	}
	t.ok++
	gpu.DeviceSamplesOK = true
	if first {
		st.sampleBaseline, st.sampleLastSeen = true, nowUS
		return
	}
	st.sampleLastSeen = lastSeen
	if n := len(*devSamples); n > start {
		gpu.DeviceSamples = (*devSamples)[start:n:n]
	}
}

// observeSample updates the sample period estimate with the next device
// sample timestamp (timestamps arrive in increasing order).
func (st *deviceState) observeSample(ts uint64) {
	if st.lastSampleTS != 0 && ts > st.lastSampleTS {
		if gap := ts - st.lastSampleTS; st.periodUS == 0 || gap < st.periodUS {
			st.periodUS = gap
		}
	}
	st.lastSampleTS = max(st.lastSampleTS, ts)
}
