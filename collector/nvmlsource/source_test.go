package nvmlsource

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuledger/gpuledger/attribution"
)

// t0 is the first cycle; us(d) is t0+d in NVML's µs timestamps.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const us0 = uint64(1740830400000000) // t0 in µs since the epoch, by hand

func us(d time.Duration) uint64 { return us0 + uint64(d/time.Microsecond) }

func start(t *testing.T, gpus ...*fakeGPU) (*Source, *mock.Interface) {
	t.Helper()
	lib := newLib(gpus...)
	s := New(lib, nil)
	if err := s.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return s, lib
}

func read(t *testing.T, s *Source, at time.Duration) Reading {
	t.Helper()
	r, err := s.Read(context.Background(), t0.Add(at))
	if err != nil {
		t.Fatalf("Read at +%v: %v", at, err)
	}
	return r
}

func plainGPU(uuid string) *fakeGPU {
	return &fakeGPU{uuid: uuid, name: "NVIDIA A100-SXM4-80GB", memBytes: 80 << 30}
}

func TestMicrosMatchesHandValue(t *testing.T) {
	if got := micros(t0); got != us0 {
		t.Fatalf("micros(t0) = %d, want %d", got, us0)
	}
}

func TestProcessUtilisationLastSeenTracking(t *testing.T) {
	g := plainGPU("GPU-a")
	g.util = func(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		// Two cycles' worth of history; the driver filters by lastSeen.
		all := []nvml.ProcessUtilizationSample{
			{Pid: 10, TimeStamp: us(200 * time.Millisecond), SmUtil: 30},
			{Pid: 10, TimeStamp: us(600 * time.Millisecond), SmUtil: 40},
			{Pid: 11, TimeStamp: us(400 * time.Millisecond), SmUtil: 50},
			{Pid: 10, TimeStamp: us(1400 * time.Millisecond), SmUtil: 60},
		}
		var out []nvml.ProcessUtilizationSample
		for _, x := range all {
			if x.TimeStamp > lastSeen {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return out, nvml.SUCCESS
	}
	s, _ := start(t, g)

	r := read(t, s, 0)
	if len(r.Samples) != 0 {
		t.Fatalf("baseline Read returned %d samples, want 0", len(r.Samples))
	}
	if n := len(g.dev.GetProcessUtilizationCalls()); n != 0 {
		t.Fatalf("baseline Read called GetProcessUtilization %d times, want 0", n)
	}

	r = read(t, s, time.Second)
	want := []attribution.ProcessSample{
		{GPU: "GPU-a", PID: 10, At: t0.Add(200 * time.Millisecond), SMUtil: 30},
		{GPU: "GPU-a", PID: 11, At: t0.Add(400 * time.Millisecond), SMUtil: 50},
		{GPU: "GPU-a", PID: 10, At: t0.Add(600 * time.Millisecond), SMUtil: 40},
	}
	if !reflect.DeepEqual(r.Samples, want) {
		t.Fatalf("second Read samples:\n got %+v\nwant %+v", r.Samples, want)
	}

	r = read(t, s, 2*time.Second)
	want = []attribution.ProcessSample{{GPU: "GPU-a", PID: 10, At: t0.Add(1400 * time.Millisecond), SMUtil: 60}}
	if !reflect.DeepEqual(r.Samples, want) {
		t.Fatalf("third Read samples:\n got %+v\nwant %+v", r.Samples, want)
	}

	r = read(t, s, 3*time.Second) // NOT_FOUND: nothing new, not an error
	if len(r.Samples) != 0 || len(r.Errors) != 0 {
		t.Fatalf("fourth Read: samples %v errors %v, want none", r.Samples, r.Errors)
	}

	calls := g.dev.GetProcessUtilizationCalls()
	wantArgs := []uint64{us0, us(600 * time.Millisecond), us(1400 * time.Millisecond)}
	if len(calls) != len(wantArgs) {
		t.Fatalf("GetProcessUtilization called %d times, want %d", len(calls), len(wantArgs))
	}
	for i, c := range calls {
		if c.V != wantArgs[i] {
			t.Errorf("call %d asked since %d, want %d", i, c.V, wantArgs[i])
		}
	}
}

func TestProcessUtilisationKeepsEverySampleOnce(t *testing.T) {
	g := plainGPU("GPU-a")
	var reply []nvml.ProcessUtilizationSample
	g.util = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return reply, nvml.SUCCESS }
	s, _ := start(t, g)
	read(t, s, 0)

	reply = []nvml.ProcessUtilizationSample{
		{Pid: 10, TimeStamp: us(100 * time.Millisecond), SmUtil: 20},
		{Pid: 10, TimeStamp: us(266 * time.Millisecond), SmUtil: 25},
		{Pid: 10, TimeStamp: us(100 * time.Millisecond), SmUtil: 20}, // duplicate
		{Pid: 11, TimeStamp: us(100 * time.Millisecond), SmUtil: 70}, // same time, other PID
		{Pid: 11, TimeStamp: us(100 * time.Millisecond), SmUtil: 70}, // duplicate
		{Pid: 12, TimeStamp: us0 - 5, SmUtil: 99},                    // before the baseline
		{Pid: 12, TimeStamp: us0, SmUtil: 99},                        // at lastSeen: not newer
		{Pid: 0, TimeStamp: us(300 * time.Millisecond), SmUtil: 99},  // no PID
		{Pid: 13, TimeStamp: us(1100 * time.Millisecond), SmUtil: 5}, // after now: next cycle
	}
	r := read(t, s, time.Second)
	want := []attribution.ProcessSample{
		{GPU: "GPU-a", PID: 10, At: t0.Add(100 * time.Millisecond), SMUtil: 20},
		{GPU: "GPU-a", PID: 11, At: t0.Add(100 * time.Millisecond), SMUtil: 70},
		{GPU: "GPU-a", PID: 10, At: t0.Add(266 * time.Millisecond), SMUtil: 25},
	}
	if !reflect.DeepEqual(r.Samples, want) {
		t.Fatalf("samples:\n got %+v\nwant %+v", r.Samples, want)
	}

	// The same reply again: everything is now old except the deferred one.
	r = read(t, s, 2*time.Second)
	want = []attribution.ProcessSample{{GPU: "GPU-a", PID: 13, At: t0.Add(1100 * time.Millisecond), SMUtil: 5}}
	if !reflect.DeepEqual(r.Samples, want) {
		t.Fatalf("samples of the next Read:\n got %+v\nwant %+v", r.Samples, want)
	}
	calls := g.dev.GetProcessUtilizationCalls()
	if got, want := calls[len(calls)-1].V, us(266*time.Millisecond); got != want {
		t.Fatalf("second call asked since %d, want %d (newest sample kept, not the deferred one)", got, want)
	}
}

func TestProcessUtilisationPerDeviceLastSeen(t *testing.T) {
	a, b := plainGPU("GPU-a"), plainGPU("GPU-b")
	a.util = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		return []nvml.ProcessUtilizationSample{{Pid: 1, TimeStamp: us(900 * time.Millisecond), SmUtil: 10}}, nvml.SUCCESS
	}
	b.util = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		return []nvml.ProcessUtilizationSample{{Pid: 2, TimeStamp: us(300 * time.Millisecond), SmUtil: 10}}, nvml.SUCCESS
	}
	s, _ := start(t, a, b)
	read(t, s, 0)
	read(t, s, time.Second)
	read(t, s, 2*time.Second)
	ca, cb := a.dev.GetProcessUtilizationCalls(), b.dev.GetProcessUtilizationCalls()
	if ca[1].V != us(900*time.Millisecond) || cb[1].V != us(300*time.Millisecond) {
		t.Fatalf("lastSeen not per device: GPU-a asked %d, GPU-b asked %d", ca[1].V, cb[1].V)
	}
}

func TestMIGGPUReportsNoUtilisationWithoutErrors(t *testing.T) {
	g := migGPU()
	g.util = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	g.samples = func(uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) { return 0, nil, nvml.ERROR_NOT_SUPPORTED }
	s, _ := start(t, g)
	for i := range 3 {
		r := read(t, s, time.Duration(i)*time.Second)
		if len(r.Errors) != 0 {
			t.Fatalf("Read %d: errors %v, want none", i, r.Errors)
		}
		if r.GPUs[0].DeviceSamplesOK || len(r.GPUs[0].DeviceSamples) != 0 || len(r.Samples) != 0 {
			t.Fatalf("Read %d: DeviceSamplesOK=%v device samples %v process samples %v, want false/none/none",
				i, r.GPUs[0].DeviceSamplesOK, r.GPUs[0].DeviceSamples, r.Samples)
		}
	}
}

// migGPU is an 80 GB A100 with MIG devices at indexes 0, 3 and 4, holes at
// 1 and 2 (NOT_FOUND) and 5 (INVALID_ARGUMENT), one of them named without
// a profile and one without attributes.
func migGPU() *fakeGPU {
	return &fakeGPU{
		uuid: "GPU-m", name: "NVIDIA A100-SXM4-80GB", memBytes: 81920 << 20, mig: true,
		migs: []*fakeMIG{
			{uuid: "MIG-3g", name: "NVIDIA A100-SXM4-80GB MIG 3g.40gb", gi: 2,
				attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 3, MemorySizeMB: 40192}},
			nil,
			nil,
			{uuid: "MIG-2g", name: "NVIDIA A100-SXM4-80GB", gi: 5, // no profile in the name
				attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 2, MemorySizeMB: 19968}},
			{uuid: "MIG-1g", name: "NVIDIA A100-SXM4-80GB MIG 1g.10gb", gi: 9,
				attrsRet: nvml.ERROR_NOT_SUPPORTED}, // slices from the name
		},
	}
}

func TestMIGTopology(t *testing.T) {
	s, _ := start(t, plainGPU("GPU-a"), migGPU())
	r := read(t, s, 0)
	if len(r.Errors) != 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	if len(r.GPUs) != 2 {
		t.Fatalf("got %d GPUs, want 2", len(r.GPUs))
	}
	if g := r.GPUs[0]; g.MIGEnabled || g.MIG != nil || g.Index != 0 || g.Model != "A100-SXM4-80GB" || g.MemoryMiB != 81920 {
		t.Fatalf("GPU 0 = %+v", g)
	}
	g := r.GPUs[1]
	if !g.MIGEnabled || g.Index != 1 || g.UUID != "GPU-m" {
		t.Fatalf("GPU 1 = %+v", g)
	}
	want := []attribution.MIGInstance{
		{UUID: "MIG-3g", Profile: "3g.40gb", Slices: 3, GPUInstanceID: 2},
		{UUID: "MIG-2g", Profile: "2g.20gb", Slices: 2, GPUInstanceID: 5},
		{UUID: "MIG-1g", Profile: "1g.10gb", Slices: 1, GPUInstanceID: 9},
	}
	if !reflect.DeepEqual(g.MIG, want) {
		t.Fatalf("MIG instances:\n got %+v\nwant %+v", g.MIG, want)
	}

	// The reading's MIG slice is a copy: writing into it (the DCGM join
	// does) must not change the next Reading.
	g.MIG[0].DCGM = &attribution.DCGMValues{SMActive: 1}
	if r2 := read(t, s, time.Second); r2.GPUs[1].MIG[0].DCGM != nil {
		t.Fatal("MIG slice shared between Readings")
	}
}

func TestProcessesMapToMIGInstances(t *testing.T) {
	g := migGPU()
	const mib = 1 << 20
	g.procs = []nvml.ProcessInfo{
		{Pid: 100, UsedGpuMemory: 500 * mib, GpuInstanceId: 2},        // also in MIG-3g's own list
		{Pid: 200, UsedGpuMemory: 300 * mib, GpuInstanceId: 5},        // only here: mapped by GI
		{Pid: 300, UsedGpuMemory: 100 * mib, GpuInstanceId: 77},       // unknown GI: the GPU
		{Pid: 0, UsedGpuMemory: 1 * mib},                              // no PID: dropped
		{Pid: 500, UsedGpuMemory: 8 * mib, GpuInstanceId: ^uint32(0)}, // GI not carried
	}
	g.mpsRet = nvml.ERROR_NOT_SUPPORTED
	g.migs[0].procs = []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 500 * mib}}
	g.migs[3].procs = []nvml.ProcessInfo{{Pid: 500, UsedGpuMemory: 8 * mib}}
	g.migs[4].procs = []nvml.ProcessInfo{{Pid: 400, UsedGpuMemory: 1000*mib + 12345}}
	g.migs[4].mpsProcs = []nvml.ProcessInfo{
		{Pid: 400, UsedGpuMemory: 1200 * mib}, // same client in the MPS list: merged
		{Pid: 401, UsedGpuMemory: ^uint64(0)}, // memory not available
	}
	s, _ := start(t, g)
	r := read(t, s, 0)
	if len(r.Errors) != 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	want := []attribution.Process{
		{PID: 100, GPU: "GPU-m", Device: "MIG-3g", MemoryMiB: 500},
		{PID: 200, GPU: "GPU-m", Device: "MIG-2g", MemoryMiB: 300},
		{PID: 300, GPU: "GPU-m", Device: "GPU-m", MemoryMiB: 100},
		{PID: 400, GPU: "GPU-m", Device: "MIG-1g", MemoryMiB: 1200},
		{PID: 401, GPU: "GPU-m", Device: "MIG-1g", MemoryMiB: 0},
		{PID: 500, GPU: "GPU-m", Device: "MIG-2g", MemoryMiB: 8},
	}
	if !reflect.DeepEqual(r.Processes, want) {
		t.Fatalf("processes:\n got %+v\nwant %+v", r.Processes, want)
	}
}

func TestProcessesMergeComputeAndMPSLists(t *testing.T) {
	g := plainGPU("GPU-a")
	g.procs = []nvml.ProcessInfo{{Pid: 7, UsedGpuMemory: 2 << 20}, {Pid: 5, UsedGpuMemory: 64 << 20}}
	g.mpsProcs = []nvml.ProcessInfo{{Pid: 5, UsedGpuMemory: 64 << 20}, {Pid: 9, UsedGpuMemory: 3 << 20}}
	g.procs = append(g.procs, nvml.ProcessInfo{Pid: 7, UsedGpuMemory: 2 << 20}) // listed twice
	s, _ := start(t, g)
	r := read(t, s, 0)
	want := []attribution.Process{
		{PID: 5, GPU: "GPU-a", Device: "GPU-a", MemoryMiB: 64},
		{PID: 7, GPU: "GPU-a", Device: "GPU-a", MemoryMiB: 2},
		{PID: 9, GPU: "GPU-a", Device: "GPU-a", MemoryMiB: 3},
	}
	if !reflect.DeepEqual(r.Processes, want) {
		t.Fatalf("processes:\n got %+v\nwant %+v", r.Processes, want)
	}
}

func TestDeviceSamples(t *testing.T) {
	g := plainGPU("GPU-a")
	const p = 166667 // µs
	history := []nvml.Sample{uintSample(us0-2*p, 10), uintSample(us0-p, 10)}
	var reply []nvml.Sample
	g.samples = func(lastSeen uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		if lastSeen == 0 {
			return nvml.VALUE_TYPE_UNSIGNED_INT, history, nvml.SUCCESS
		}
		if len(reply) == 0 {
			return nvml.VALUE_TYPE_UNSIGNED_INT, nil, nvml.ERROR_NOT_FOUND
		}
		return nvml.VALUE_TYPE_UNSIGNED_INT, reply, nvml.SUCCESS
	}
	s, _ := start(t, g)

	r := read(t, s, 0)
	if gpu := r.GPUs[0]; !gpu.DeviceSamplesOK || len(gpu.DeviceSamples) != 0 || gpu.SamplePeriod != p*time.Microsecond {
		t.Fatalf("baseline: OK=%v samples=%v period=%v, want true/none/%v", gpu.DeviceSamplesOK, gpu.DeviceSamples, gpu.SamplePeriod, time.Duration(p)*time.Microsecond)
	}

	reply = []nvml.Sample{
		uintSample(us0+3*p, 80), // two periods after the previous: a gap
		uintSample(us0+p, 40),
		uintSample(us0+p, 40),    // duplicate
		uintSample(us0-p, 10),    // old
		uintSample(us0+7*p, 100), // after now (1 s): next cycle
	}
	r = read(t, s, time.Second)
	gpu := r.GPUs[0]
	want := []attribution.UtilSample{
		{At: t0.Add(p * time.Microsecond), Percent: 40},
		{At: t0.Add(3 * p * time.Microsecond), Percent: 80},
	}
	if !gpu.DeviceSamplesOK || !reflect.DeepEqual(gpu.DeviceSamples, want) {
		t.Fatalf("OK=%v samples:\n got %+v\nwant %+v", gpu.DeviceSamplesOK, gpu.DeviceSamples, want)
	}
	if gpu.SamplePeriod != p*time.Microsecond {
		t.Fatalf("period %v, want %v", gpu.SamplePeriod, time.Duration(p)*time.Microsecond)
	}

	reply = nil // NOT_FOUND: nothing new, still OK
	r = read(t, s, 2*time.Second)
	if gpu := r.GPUs[0]; !gpu.DeviceSamplesOK || len(gpu.DeviceSamples) != 0 || len(r.Errors) != 0 {
		t.Fatalf("NOT_FOUND: OK=%v samples=%v errors=%v", gpu.DeviceSamplesOK, gpu.DeviceSamples, r.Errors)
	}
	calls := g.dev.GetSamplesCalls()
	wantSince := []uint64{0, us0, us0 + 3*p}
	for i, c := range calls {
		if c.V != wantSince[i] {
			t.Errorf("GetSamples call %d asked since %d, want %d", i, c.V, wantSince[i])
		}
	}
}

func TestDeviceSamplesUnknownValueType(t *testing.T) {
	g := plainGPU("GPU-a")
	g.samples = func(uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		return nvml.VALUE_TYPE_COUNT, []nvml.Sample{uintSample(us(500*time.Millisecond), 5)}, nvml.SUCCESS
	}
	s, _ := start(t, g)
	read(t, s, 0)
	r := read(t, s, time.Second)
	if r.GPUs[0].DeviceSamplesOK || len(r.GPUs[0].DeviceSamples) != 0 {
		t.Fatalf("OK=%v samples=%v, want false/none", r.GPUs[0].DeviceSamplesOK, r.GPUs[0].DeviceSamples)
	}
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Error(), "GPU 0 (GPU-a)") {
		t.Fatalf("errors %v, want one naming GPU 0 (GPU-a)", r.Errors)
	}
}

func TestEnergy(t *testing.T) {
	a, b := plainGPU("GPU-a"), plainGPU("GPU-b")
	a.energy = 123456789
	b.energyRet = nvml.ERROR_NOT_SUPPORTED
	s, _ := start(t, a, b)
	r := read(t, s, 0)
	if !r.GPUs[0].EnergyOK || r.GPUs[0].EnergyMilliJoules != 123456789 {
		t.Fatalf("GPU-a energy %d ok=%v", r.GPUs[0].EnergyMilliJoules, r.GPUs[0].EnergyOK)
	}
	if r.GPUs[1].EnergyOK || len(r.Errors) != 0 {
		t.Fatalf("GPU-b EnergyOK=%v errors=%v, want false and none", r.GPUs[1].EnergyOK, r.Errors)
	}
}

func lostGPU(uuid string) *fakeGPU {
	g := plainGPU(uuid)
	lost := nvml.ERROR_GPU_IS_LOST
	g.procsRet, g.mpsRet, g.energyRet = lost, lost, lost
	g.util = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return nil, lost }
	g.samples = func(uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) { return 0, nil, lost }
	return g
}

func TestErroringDeviceDoesNotStopOthers(t *testing.T) {
	bad, good := lostGPU("GPU-bad"), plainGPU("GPU-good")
	good.energy = 42
	good.procs = []nvml.ProcessInfo{{Pid: 9, UsedGpuMemory: 1 << 20}}
	s, lib := start(t, bad, good)
	read(t, s, 0)
	r := read(t, s, time.Second)

	if len(r.GPUs) != 2 || !r.GPUs[1].EnergyOK || r.GPUs[1].EnergyMilliJoules != 42 {
		t.Fatalf("good GPU not read: %+v", r.GPUs)
	}
	if len(r.Processes) != 1 || r.Processes[0].PID != 9 {
		t.Fatalf("processes %+v, want PID 9 of the good GPU", r.Processes)
	}
	if len(r.Errors) != 5 {
		t.Fatalf("got %d errors, want 5 (one per call on the lost GPU): %v", len(r.Errors), r.Errors)
	}
	var sawUtil bool
	for _, err := range r.Errors {
		if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || !strings.Contains(err.Error(), "GPU 0 (GPU-bad)") {
			t.Errorf("error %q does not wrap GPU_IS_LOST and name GPU 0 (GPU-bad)", err)
		}
		if err.Error() == "cannot read process utilisation of GPU 0 (GPU-bad): ERROR_GPU_IS_LOST" {
			sawUtil = true
		}
	}
	if !sawUtil {
		t.Errorf("no process utilisation error among %v", r.Errors)
	}
	// A lost GPU makes the next Read enumerate the devices again.
	before := len(lib.DeviceGetCountCalls())
	read(t, s, 2*time.Second)
	if after := len(lib.DeviceGetCountCalls()); after != before+1 {
		t.Fatalf("DeviceGetCount calls %d -> %d, want a refresh", before, after)
	}
}

func TestReadFailsWhenNothingCanBeRead(t *testing.T) {
	s, _ := start(t, lostGPU("GPU-x"), lostGPU("GPU-y"))
	for i := range 2 { // the baseline Read and a full one
		r, err := s.Read(context.Background(), t0.Add(time.Duration(i)*time.Second))
		if err == nil || !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
			t.Fatalf("Read %d error = %v, want one wrapping GPU_IS_LOST", i, err)
		}
		if len(r.GPUs) != 2 {
			t.Fatalf("Read %d: %d GPUs in the failed Reading, want both listed", i, len(r.GPUs))
		}
	}
}

func TestPanickingDeviceIsAnError(t *testing.T) {
	bad := plainGPU("GPU-bad")
	bad.device().GetMPSComputeRunningProcessesFunc = nil // the mock panics
	good := plainGPU("GPU-good")
	s, _ := start(t, bad, good)
	r := read(t, s, 0)
	if len(r.GPUs) != 2 || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Error(), "panicked") {
		t.Fatalf("GPUs %d errors %v, want 2 GPUs and one panic error", len(r.GPUs), r.Errors)
	}
}

func TestEnumerationErrorsAreReportedAndRetried(t *testing.T) {
	bad, good := plainGPU("GPU-bad"), plainGPU("GPU-good")
	bad.handleRet = nvml.ERROR_UNKNOWN
	s, _ := start(t, bad, good)
	r := read(t, s, 0)
	if len(r.GPUs) != 1 || r.GPUs[0].UUID != "GPU-good" || r.GPUs[0].Index != 1 {
		t.Fatalf("GPUs %+v, want only GPU-good at index 1", r.GPUs)
	}
	if len(r.Errors) != 1 || !errors.Is(r.Errors[0], nvml.ERROR_UNKNOWN) {
		t.Fatalf("errors %v, want the enumeration error", r.Errors)
	}
	bad.handleRet = nvml.SUCCESS
	if r = read(t, s, time.Second); len(r.GPUs) != 2 || len(r.Errors) != 0 {
		t.Fatalf("after recovery: %d GPUs, errors %v", len(r.GPUs), r.Errors)
	}
}

func TestTopologyRefreshKeepsLastSeen(t *testing.T) {
	g := migGPU()
	g.mig = false
	g.util = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		return []nvml.ProcessUtilizationSample{{Pid: 3, TimeStamp: us(700 * time.Millisecond), SmUtil: 1}}, nvml.SUCCESS
	}
	s, _ := start(t, g)
	s.refreshEvery = 2
	if r := read(t, s, 0); r.GPUs[0].MIGEnabled {
		t.Fatal("MIG enabled before reconfiguration")
	}
	g.mig = true // reconfigured; seen at the next periodic refresh
	r := read(t, s, time.Second)
	if !r.GPUs[0].MIGEnabled || len(r.GPUs[0].MIG) != 3 {
		t.Fatalf("after refresh: MIG=%v instances %d, want true and 3", r.GPUs[0].MIGEnabled, len(r.GPUs[0].MIG))
	}
	if len(r.Samples) != 1 {
		t.Fatalf("refresh re-baselined the device: %d samples, want 1", len(r.Samples))
	}
}

func TestInitAndClose(t *testing.T) {
	lib := newLib(plainGPU("GPU-a"))
	lib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	s := New(lib, nil)
	err := s.Init(context.Background())
	if err == nil || !errors.Is(err, nvml.ERROR_LIBRARY_NOT_FOUND) || !strings.HasPrefix(err.Error(), "cannot initialise NVML") {
		t.Fatalf("Init error = %v", err)
	}
	if _, err := s.Read(context.Background(), t0); err == nil {
		t.Fatal("Read before a successful Init did not fail")
	}

	lib = newLib(plainGPU("GPU-a"))
	s = New(lib, nil)
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Fatalf("Shutdown called %d times, want 1", n)
	}
}

func TestInitFailsWhenGPUsCannotBeCounted(t *testing.T) {
	lib := newLib()
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	s := New(lib, nil)
	if err := s.Init(context.Background()); err == nil || !errors.Is(err, nvml.ERROR_UNKNOWN) {
		t.Fatalf("Init error = %v", err)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Fatalf("Shutdown called %d times after failed Init, want 1", n)
	}
}

func TestFailedRefreshKeepsTopologyAndRetries(t *testing.T) {
	g := plainGPU("GPU-a")
	s, lib := start(t, g)
	s.refreshEvery = 2
	read(t, s, 0)
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	r := read(t, s, time.Second) // due: the refresh fails, the old topology stays
	if len(r.GPUs) != 1 || len(r.Errors) != 1 || !errors.Is(r.Errors[0], nvml.ERROR_UNKNOWN) {
		t.Fatalf("GPUs %d errors %v, want 1 GPU and the count error", len(r.GPUs), r.Errors)
	}
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 1, nvml.SUCCESS }
	if r = read(t, s, 2*time.Second); len(r.Errors) != 0 {
		t.Fatalf("refresh not retried at once: errors %v", r.Errors)
	}
}

// TestComputeInstancesReadAsTheirComputeSlices: three compute instances
// of one 3g GPU instance (1c.3g.40gb each, one MIG device apiece): with
// the attributes NVML gives, with a driver that leaves the compute count
// 0 but names the profile, and with no attributes at all. Each is charged
// its one compute slice, so the three add up to their GPU instance's 3/7.
func TestComputeInstancesReadAsTheirComputeSlices(t *testing.T) {
	g := &fakeGPU{
		uuid: "GPU-c", name: "NVIDIA A100-SXM4-80GB", memBytes: 81920 << 20, mig: true,
		migs: []*fakeMIG{
			{uuid: "MIG-c0", name: "NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb", gi: 2,
				attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 1, MemorySizeMB: 40192}},
			{uuid: "MIG-c1", name: "NVIDIA A100-SXM4-80GB", gi: 2, // no profile in the name: built from the attributes
				attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 1, MemorySizeMB: 40192}},
			{uuid: "MIG-c2", name: "NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb", gi: 2,
				attrsRet: nvml.ERROR_NOT_SUPPORTED}, // slices from the name
		},
	}
	s, _ := start(t, g)
	r := read(t, s, 0)
	if len(r.Errors) != 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	want := []attribution.MIGInstance{
		{UUID: "MIG-c0", Profile: "1c.3g.40gb", Slices: 1, GPUInstanceID: 2},
		{UUID: "MIG-c1", Profile: "1c.3g.40gb", Slices: 1, GPUInstanceID: 2},
		{UUID: "MIG-c2", Profile: "1c.3g.40gb", Slices: 1, GPUInstanceID: 2},
	}
	if got := r.GPUs[0].MIG; !reflect.DeepEqual(got, want) {
		t.Fatalf("MIG instances:\n got %+v\nwant %+v", got, want)
	}
}
