package nvmlsource

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeGPU describes a small fake GPU. The mock devices built from it read
// its fields at call time, so a test can change them between Reads.
type fakeGPU struct {
	uuid     string
	name     string
	memBytes uint64
	minor    int
	minorRet nvml.Return // GetMinorNumber; SUCCESS by default
	mig      bool
	migs     []*fakeMIG // index = MIG device index; nil is a hole (NOT_FOUND)

	procs, mpsProcs  []nvml.ProcessInfo
	procsRet, mpsRet nvml.Return

	util    func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return)
	samples func(lastSeen uint64) (nvml.ValueType, []nvml.Sample, nvml.Return)

	energy    uint64
	energyRet nvml.Return

	handleRet nvml.Return // DeviceGetHandleByIndex
	dev       *mock.Device
}

// fakeMIG is one MIG device of a fakeGPU.
type fakeMIG struct {
	uuid     string
	name     string
	gi       int
	attrs    nvml.DeviceAttributes
	attrsRet nvml.Return
	procs    []nvml.ProcessInfo
	mpsProcs []nvml.ProcessInfo
	dev      *mock.Device
}

func notFoundUtil(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	return nil, nvml.ERROR_NOT_FOUND
}

func notFoundSamples(uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
	return nvml.VALUE_TYPE_UNSIGNED_INT, nil, nvml.ERROR_NOT_FOUND
}

func (g *fakeGPU) device() *mock.Device {
	if g.dev != nil {
		return g.dev
	}
	g.dev = &mock.Device{
		GetUUIDFunc:        func() (string, nvml.Return) { return g.uuid, nvml.SUCCESS },
		GetNameFunc:        func() (string, nvml.Return) { return g.name, nvml.SUCCESS },
		GetMemoryInfoFunc:  func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: g.memBytes}, nvml.SUCCESS },
		GetMinorNumberFunc: func() (int, nvml.Return) { return g.minor, g.minorRet },
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.mig {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
		// One more than the fake has: that index answers INVALID_ARGUMENT.
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return len(g.migs) + 1, nvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(g.migs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			if g.migs[i] == nil {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return g.migs[i].device(), nvml.SUCCESS
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return g.procs, g.procsRet
		},
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return g.mpsProcs, g.mpsRet
		},
		GetProcessUtilizationFunc: func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			if g.util == nil {
				return notFoundUtil(lastSeen)
			}
			return g.util(lastSeen)
		},
		GetSamplesFunc: func(t nvml.SamplingType, lastSeen uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
			if t != nvml.GPU_UTILIZATION_SAMPLES {
				return 0, nil, nvml.ERROR_INVALID_ARGUMENT
			}
			if g.samples == nil {
				return notFoundSamples(lastSeen)
			}
			return g.samples(lastSeen)
		},
		GetTotalEnergyConsumptionFunc: func() (uint64, nvml.Return) { return g.energy, g.energyRet },
	}
	return g.dev
}

func (m *fakeMIG) device() *mock.Device {
	if m.dev != nil {
		return m.dev
	}
	m.dev = &mock.Device{
		GetUUIDFunc:          func() (string, nvml.Return) { return m.uuid, nvml.SUCCESS },
		GetNameFunc:          func() (string, nvml.Return) { return m.name, nvml.SUCCESS },
		GetGpuInstanceIdFunc: func() (int, nvml.Return) { return m.gi, nvml.SUCCESS },
		GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
			return m.attrs, m.attrsRet
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return m.procs, nvml.SUCCESS
		},
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return m.mpsProcs, nvml.SUCCESS
		},
	}
	return m.dev
}

// newLib builds an nvml.Interface over the fake GPUs, in index order.
func newLib(gpus ...*fakeGPU) *mock.Interface {
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(gpus), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(gpus) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			if gpus[i].handleRet != nvml.SUCCESS {
				return nil, gpus[i].handleRet
			}
			return gpus[i].device(), nvml.SUCCESS
		},
	}
}

// uintSample is a device sample with an UNSIGNED_INT value.
func uintSample(ts uint64, v uint32) nvml.Sample {
	return nvml.Sample{TimeStamp: ts, SampleValue: [8]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}}
}
