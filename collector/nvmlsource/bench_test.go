package nvmlsource

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// benchDevice answers the per-Read calls without the mock's call
// recording, which would otherwise dominate the allocations measured.
// Methods the Source does not call fall through to the embedded nil
// interface and would panic.
type benchDevice struct {
	nvml.Device
	uuid    string
	procs   []nvml.ProcessInfo
	util    []nvml.ProcessUtilizationSample
	samples []nvml.Sample
	energy  uint64
}

const benchPeriod = 166000 // µs: five driver periods fit in one second

func (d *benchDevice) GetUUID() (string, nvml.Return) { return d.uuid, nvml.SUCCESS }
func (d *benchDevice) GetName() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3", nvml.SUCCESS }
func (d *benchDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	return nvml.Memory{Total: 80 << 30}, nvml.SUCCESS
}
func (d *benchDevice) GetMinorNumber() (int, nvml.Return) { return 0, nvml.SUCCESS }
func (d *benchDevice) GetMigMode() (int, int, nvml.Return) {
	return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
}
func (d *benchDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return d.procs, nvml.SUCCESS
}
func (d *benchDevice) GetMPSComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return nil, nvml.ERROR_NOT_SUPPORTED
}
func (d *benchDevice) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	d.energy += 300000
	return d.energy, nvml.SUCCESS
}

// GetProcessUtilization returns five periods after lastSeen for every
// process, in driver order (by process, then time).
func (d *benchDevice) GetProcessUtilization(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	for i := range d.util {
		d.util[i].TimeStamp = lastSeen + uint64(i%5+1)*benchPeriod
	}
	return d.util, nvml.SUCCESS
}

func (d *benchDevice) GetSamples(_ nvml.SamplingType, lastSeen uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
	for i := range d.samples {
		d.samples[i].TimeStamp = lastSeen + uint64(i+1)*benchPeriod
	}
	return nvml.VALUE_TYPE_UNSIGNED_INT, d.samples, nvml.SUCCESS
}

// denseNode is the dense node of the spec: 8 GPUs, 1,000 processes, five
// samples per process per one-second cycle.
func denseNode() *mock.Interface {
	const gpus, procsPerGPU = 8, 125
	devs := make([]*benchDevice, gpus)
	for g := range devs {
		d := &benchDevice{uuid: fmt.Sprintf("GPU-%08d-0000-4000-8000-000000000000", g)}
		for p := range procsPerGPU {
			pid := uint32(10000 + g*procsPerGPU + p)
			d.procs = append(d.procs, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: 512 << 20})
			for range 5 {
				d.util = append(d.util, nvml.ProcessUtilizationSample{Pid: pid, SmUtil: 12})
			}
		}
		for range 5 {
			d.samples = append(d.samples, uintSample(0, 90))
		}
		devs[g] = d
	}
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return gpus, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devs[i], nvml.SUCCESS
		},
	}
}

func BenchmarkReadDenseNode(b *testing.B) {
	s := New(denseNode(), nil)
	ctx := context.Background()
	if err := s.Init(ctx); err != nil {
		b.Fatal(err)
	}
	now := t0
	if _, err := s.Read(ctx, now); err != nil { // baseline
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Second)
		r, err := s.Read(ctx, now)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Samples) != 5000 || len(r.Processes) != 1000 {
			b.Fatalf("read %d samples and %d processes, want 5000 and 1000", len(r.Samples), len(r.Processes))
		}
	}
}

// TestDenseNodeReading checks the benchmark's fixture reads what it should,
// so the benchmark measures the real path.
func TestDenseNodeReading(t *testing.T) {
	s := New(denseNode(), nil)
	ctx := context.Background()
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r, err := s.Read(ctx, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantSamples, wantDev := 5000, 5
		if i == 0 {
			wantSamples, wantDev = 0, 0
		}
		if len(r.Samples) != wantSamples || len(r.GPUs) != 8 || len(r.GPUs[7].DeviceSamples) != wantDev || len(r.Errors) != 0 {
			t.Fatalf("Read %d: %d samples, %d GPUs, %d device samples on GPU 7, errors %v",
				i, len(r.Samples), len(r.GPUs), len(r.GPUs[7].DeviceSamples), r.Errors)
		}
		if i > 0 && r.GPUs[0].SamplePeriod != benchPeriod*time.Microsecond {
			t.Fatalf("period %v", r.GPUs[0].SamplePeriod)
		}
	}
}
