package sim

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// noInstance is what NVML puts in GpuInstanceId/ComputeInstanceId of a
// process that does not run on a MIG instance.
const noInstance = ^uint32(0)

// maxMIGDevices is how many MIG devices a MIG-capable GPU can hold.
const maxMIGDevices = 7

// device is an NVML handle: a whole GPU (mig == nil) or one MIG device.
// Methods defined here override the embedded mock's; hot paths avoid the
// mock so its call recording cannot grow over a long run.
type device struct {
	mock.Device
	n   *Node
	g   *gpu
	mig *migInst
}

var _ nvml.Device = (*device)(nil)

func (n *Node) newDevice(g *gpu, m *migInst) *device {
	d := &device{n: n, g: g, mig: m}
	fillUnset(&d.Device)
	return d
}

// GetUUID returns the GPU or MIG UUID.
func (d *device) GetUUID() (string, nvml.Return) {
	if d.mig != nil {
		return d.mig.uuid, nvml.SUCCESS
	}
	return d.g.uuid, nvml.SUCCESS
}

// GetName returns the product name, "NVIDIA <model>" (plus " MIG <profile>"
// on MIG devices).
func (d *device) GetName() (string, nvml.Return) {
	if d.mig != nil {
		return "NVIDIA " + d.g.model + " MIG " + d.mig.profile, nvml.SUCCESS
	}
	return "NVIDIA " + d.g.model, nvml.SUCCESS
}

// GetIndex returns the GPU's index (the parent's on MIG devices).
func (d *device) GetIndex() (int, nvml.Return) { return d.g.index, nvml.SUCCESS }

// GetMinorNumber returns the GPU's minor number, /dev/nvidia<minor> (the
// parent's on MIG devices).
func (d *device) GetMinorNumber() (int, nvml.Return) { return d.g.minor, nvml.SUCCESS }

// GetMemoryInfo returns total and used framebuffer; used is the sum of the
// live processes' memory.
func (d *device) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	total, used := d.memory()
	return nvml.Memory{Total: total, Used: used, Free: total - min(used, total)}, nvml.SUCCESS
}

// GetMemoryInfo_v2 is GetMemoryInfo with the v2 layout.
func (d *device) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	total, used := d.memory()
	return nvml.Memory_v2{Version: nvml.STRUCT_VERSION(nvml.Memory_v2{}, 2), Total: total, Used: used, Free: total - min(used, total)}, nvml.SUCCESS
}

func (d *device) memory() (total, used uint64) {
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	t := d.n.clock.offset()
	if d.mig != nil {
		return d.mig.memMiB << 20, usedMiB(d.mig.grp.alive, t) << 20
	}
	return d.g.totalMiB << 20, d.g.usedMiB(t) << 20
}

// GetMigMode reports current and pending MIG mode of a GPU.
func (d *device) GetMigMode() (int, int, nvml.Return) {
	switch {
	case d.mig != nil:
		return 0, 0, nvml.ERROR_NOT_SUPPORTED
	case d.g.isMIG():
		return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
	}
	return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
}

// GetMaxMigDeviceCount is 7 on MIG-enabled GPUs, 0 elsewhere.
func (d *device) GetMaxMigDeviceCount() (int, nvml.Return) {
	switch {
	case d.mig != nil:
		return 0, nvml.ERROR_NOT_SUPPORTED
	case d.g.isMIG():
		return maxMIGDevices, nvml.SUCCESS
	}
	return 0, nvml.SUCCESS
}

// GetMigDeviceHandleByIndex returns the i-th MIG device in scenario order.
func (d *device) GetMigDeviceHandleByIndex(i int) (nvml.Device, nvml.Return) {
	switch {
	case d.mig != nil:
		return nil, nvml.ERROR_INVALID_ARGUMENT
	case i < 0 || i >= len(d.g.migs):
		return nil, nvml.ERROR_NOT_FOUND
	}
	return d.g.migs[i].dev, nvml.SUCCESS
}

// IsMigDeviceHandle reports whether this handle is a MIG device.
func (d *device) IsMigDeviceHandle() (bool, nvml.Return) { return d.mig != nil, nvml.SUCCESS }

// GetDeviceHandleFromMigDeviceHandle returns a MIG device's parent GPU.
func (d *device) GetDeviceHandleFromMigDeviceHandle() (nvml.Device, nvml.Return) {
	if d.mig == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return d.g.dev, nvml.SUCCESS
}

// GetGpuInstanceId returns a MIG device's GPU instance ID (the scenario's gi).
func (d *device) GetGpuInstanceId() (int, nvml.Return) {
	if d.mig == nil {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return d.mig.giID, nvml.SUCCESS
}

// GetComputeInstanceId returns a MIG device's compute instance ID: each GPU
// instance holds one compute instance, ID 0.
func (d *device) GetComputeInstanceId() (int, nvml.Return) {
	if d.mig == nil {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return 0, nvml.SUCCESS
}

// GetAttributes returns slice counts and memory of a MIG device (the whole
// GPU's memory on a GPU handle). A scenario's MIG instance is a GPU
// instance with one compute instance: spanning it (3g.40gb: both counts
// 3) or, for a compute-instance profile, part of it (1c.3g.40gb: GPU
// instance 3, compute instance 1). The collector charges the compute
// count, as it does the device's name (package gpu).
func (d *device) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	if d.mig == nil {
		return nvml.DeviceAttributes{MemorySizeMB: d.g.totalMiB}, nvml.SUCCESS
	}
	s, c := uint32(d.mig.slices), uint32(d.mig.ciSlices)
	return nvml.DeviceAttributes{
		GpuInstanceSliceCount: s, ComputeInstanceSliceCount: c,
		MultiprocessorCount: 14 * c, SharedCopyEngineCount: s,
		MemorySizeMB: d.mig.memMiB,
	}, nvml.SUCCESS
}

// GetComputeRunningProcesses lists the processes alive now: on a GPU all of
// its processes (with MIG instance IDs on MIG GPUs), on a MIG device that
// instance's, each with the memory it holds now (UsedGpuMemory, bytes).
func (d *device) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	return d.running(), nvml.SUCCESS
}

// GetMPSComputeRunningProcesses lists the MPS clients: the same list as
// GetComputeRunningProcesses on MPS GPUs, empty elsewhere.
func (d *device) GetMPSComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	if d.g.mode != scenario.ModeMPS {
		return []nvml.ProcessInfo{}, nvml.SUCCESS
	}
	return d.GetComputeRunningProcesses()
}

// running builds the process list; callers hold n.mu.
func (d *device) running() []nvml.ProcessInfo {
	var groups []*group
	switch {
	case d.mig != nil:
		groups = []*group{d.mig.grp}
	case d.g.isMIG():
		for _, m := range d.g.migs {
			groups = append(groups, m.grp)
		}
	default:
		groups = []*group{d.g.grp}
	}
	out := []nvml.ProcessInfo{}
	t := d.n.clock.offset()
	for _, grp := range groups {
		for _, p := range grp.alive {
			pi := nvml.ProcessInfo{Pid: p.pid, UsedGpuMemory: p.memAt(t) << 20, GpuInstanceId: noInstance, ComputeInstanceId: noInstance}
			if p.inst != nil {
				pi.GpuInstanceId, pi.ComputeInstanceId = uint32(p.inst.giID), 0
			}
			out = append(out, pi)
		}
	}
	if len(groups) > 1 {
		slices.SortStableFunc(out, func(a, b nvml.ProcessInfo) int { return cmp.Compare(a.Pid, b.Pid) })
	}
	return out
}

// samplesSupported: per-process and device utilisation samples do not
// exist on MIG-enabled GPUs or MIG devices.
func (d *device) samplesSupported() bool { return d.mig == nil && !d.g.isMIG() }

// GetProcessUtilization returns one sample per process per completed
// driver period newer than lastSeen (µs since the epoch), from the last
// bufferSpanFor(pollInterval) of periods only. Under MPS processView server, the MPS server
// carries the whole device's activity instead of the clients.
func (d *device) GetProcessUtilization(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	if !d.samplesSupported() {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	from, to := d.n.bufferedPeriods()
	for from < to && d.n.stampMicros(from) <= lastSeen {
		from++
	}
	count := 0
	for k := from; k < to; k++ {
		count += len(d.g.ring[k%d.n.capPeriods].samples)
	}
	if count == 0 {
		return nil, nvml.ERROR_NOT_FOUND
	}
	out := make([]nvml.ProcessUtilizationSample, 0, count)
	for k := from; k < to; k++ {
		ts := d.n.stampMicros(k)
		for _, s := range d.g.ring[k%d.n.capPeriods].samples {
			out = append(out, nvml.ProcessUtilizationSample{Pid: s.pid, TimeStamp: ts, SmUtil: s.util})
		}
	}
	return out, nvml.SUCCESS
}

// GetSamples returns GPU_UTILIZATION_SAMPLES: one per completed driver
// period newer than lastSeen, round(100 x mean(min(1, S))).
func (d *device) GetSamples(typ nvml.SamplingType, lastSeen uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
	if !d.samplesSupported() || typ != nvml.GPU_UTILIZATION_SAMPLES {
		return 0, nil, nvml.ERROR_NOT_SUPPORTED
	}
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	var out []nvml.Sample
	from, to := d.n.bufferedPeriods()
	for k := from; k < to; k++ {
		ts := d.n.stampMicros(k)
		if ts <= lastSeen {
			continue
		}
		s := nvml.Sample{TimeStamp: ts}
		binary.NativeEndian.PutUint32(s.SampleValue[:4], pct(d.g.ring[k%d.n.capPeriods].busy))
		out = append(out, s)
	}
	if len(out) == 0 {
		return nvml.VALUE_TYPE_UNSIGNED_INT, nil, nvml.ERROR_NOT_FOUND
	}
	return nvml.VALUE_TYPE_UNSIGNED_INT, out, nvml.SUCCESS
}

// GetUtilizationRates returns the last completed period's busy percentage.
func (d *device) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	if !d.samplesSupported() {
		return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
	}
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	rec, _ := d.n.lastPeriod(d.g)
	return nvml.Utilization{Gpu: pct(rec.busy)}, nvml.SUCCESS
}

// GetTotalEnergyConsumption returns the energy counter in mJ since the
// scenario start.
func (d *device) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	if d.mig != nil {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	return roundU64(d.g.energyMilliJ()), nvml.SUCCESS
}

// GetPowerUsage returns the mean draw of the last completed period in mW
// (idle power before the first one).
func (d *device) GetPowerUsage() (uint32, nvml.Return) {
	if d.mig != nil {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	rec, _ := d.n.lastPeriod(d.g)
	return uint32(roundU64(1000 * d.g.power(rec.busy))), nvml.SUCCESS
}
