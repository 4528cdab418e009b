package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

func TestProcessUtilizationSamples(t *testing.T) {
	sc := baseScenario(scenario.ModeExclusive, 10*time.Second)
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, gpu0, 1024, seg(0, time.Second, 0.5)))
	n := newNode(t, sc)
	d := handle(t, n, 0)

	if _, ret := d.GetProcessUtilization(0); ret != nvml.ERROR_NOT_FOUND {
		t.Fatalf("at start: ret %v, want ERROR_NOT_FOUND", ret)
	}
	advance(t, n, 2*time.Second)
	got, ret := d.GetProcessUtilization(0)
	if ret != nvml.SUCCESS {
		t.Fatalf("GetProcessUtilization: %v", ret)
	}
	// Periods of 200ms: the first five carry 50% each, the next five are idle.
	var want []nvml.ProcessUtilizationSample
	for k := 1; k <= 5; k++ {
		want = append(want, nvml.ProcessUtilizationSample{Pid: 100, TimeStamp: micros(time.Duration(k) * 200 * ms), SmUtil: 50})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("samples:\n got %+v\nwant %+v", got, want)
	}

	got, ret = d.GetProcessUtilization(micros(600 * ms))
	if ret != nvml.SUCCESS || len(got) != 2 || got[0].TimeStamp != micros(800*ms) || got[1].TimeStamp != micros(time.Second) {
		t.Fatalf("after lastSeen 600ms: %+v %v, want the 800ms and 1s samples", got, ret)
	}
	if _, ret := d.GetProcessUtilization(micros(time.Second)); ret != nvml.ERROR_NOT_FOUND {
		t.Fatalf("after lastSeen 1s: ret %v, want ERROR_NOT_FOUND", ret)
	}

	ts, v, ret := deviceSamples(t, d, 0)
	if ret != nvml.SUCCESS || len(v) != 10 {
		t.Fatalf("device samples: %v %v, want 10", v, ret)
	}
	for k := range 10 {
		wantV := uint32(50)
		if k >= 5 {
			wantV = 0
		}
		if v[k] != wantV || ts[k] != micros(time.Duration(k+1)*200*ms) {
			t.Errorf("device sample %d: %d%% at %d, want %d%% at %d", k, v[k], ts[k], wantV, micros(time.Duration(k+1)*200*ms))
		}
	}
	if _, _, ret := deviceSamples(t, d, micros(2*time.Second)); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("device samples after lastSeen=now: %v, want ERROR_NOT_FOUND", ret)
	}
	if u, ret := d.GetUtilizationRates(); ret != nvml.SUCCESS || u.Gpu != 0 {
		t.Errorf("utilization rates: %+v %v, want 0%% (last period idle)", u, ret)
	}
}

func TestProcessSamplesAreMeansOverThePeriod(t *testing.T) {
	sc := baseScenario(scenario.ModeTimeslicing, 10*time.Second)
	// 100% from 100ms to 300ms straddles periods 0 and 1; 0.3 over 250..350ms.
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, gpu0, 1, seg(100*ms, 300*ms, 1)))
	addPod(sc, "uid-b", "b", 0, 10*time.Second, proc1(200, gpu0, 1, seg(300*ms, 500*ms, 0.3)))
	n := newNode(t, sc)
	advance(t, n, 600*ms)
	got, ret := handle(t, n, 0).GetProcessUtilization(0)
	if ret != nvml.SUCCESS {
		t.Fatalf("GetProcessUtilization: %v", ret)
	}
	want := []nvml.ProcessUtilizationSample{
		{Pid: 100, TimeStamp: micros(200 * ms), SmUtil: 50},
		{Pid: 100, TimeStamp: micros(400 * ms), SmUtil: 50},
		{Pid: 200, TimeStamp: micros(400 * ms), SmUtil: 15}, // 0.3 x 100ms / 200ms
		{Pid: 200, TimeStamp: micros(600 * ms), SmUtil: 15},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("samples:\n got %+v\nwant %+v", got, want)
	}
	_, v, _ := deviceSamples(t, handle(t, n, 0), 0)
	if !slices.Equal(v, []uint32{50, 65, 15}) {
		t.Errorf("device samples %v, want [50 65 15]", v)
	}
}

func TestSampleBufferIsCapped(t *testing.T) {
	sc := baseScenario(scenario.ModeExclusive, time.Minute)
	addPod(sc, "uid-a", "a", 0, time.Minute, proc1(100, gpu0, 1, seg(0, time.Minute, 0.25)))
	n := newNode(t, sc)
	advance(t, n, 30*time.Second)
	d := handle(t, n, 0)
	ts, v, ret := deviceSamples(t, d, 0)
	// 10s of 200ms periods: the ones ending at 20.2s .. 30s.
	if ret != nvml.SUCCESS || len(v) != 50 || ts[0] != micros(20200*ms) || ts[49] != micros(30*time.Second) {
		t.Fatalf("got %d samples (%v), first %v, want 50 from 20.2s to 30s", len(v), ret, ts[:min(1, len(ts))])
	}
	p, _ := d.GetProcessUtilization(0)
	if len(p) != 50 || p[0].SmUtil != 25 {
		t.Fatalf("got %d process samples, want 50 of 25%%", len(p))
	}
}

// A collector polling every 15 s (more than the 10 s minimum) must find
// every sample of the last 30 s (twice its poll interval) in the buffer.
func TestSampleBufferCoversTwoPolls(t *testing.T) {
	sc := baseScenario(scenario.ModeExclusive, time.Minute)
	sc.PollInterval = 15 * time.Second
	addPod(sc, "uid-a", "a", 0, time.Minute, proc1(100, gpu0, 1, seg(0, time.Minute, 0.5)))
	n := newNode(t, sc)
	advance(t, n, 40*time.Second)
	d := handle(t, n, 0)
	ts, v, ret := deviceSamples(t, d, 0)
	// 30s of 200ms periods: 150, the ones ending at 10.2s .. 40s.
	if ret != nvml.SUCCESS || len(v) != 150 || ts[0] != micros(10200*ms) || ts[149] != micros(40*time.Second) {
		t.Fatalf("got %d samples (%v), first %v, want 150 from 10.2s to 40s", len(v), ret, ts[:min(1, len(ts))])
	}
	// Since the poll at 15 s: 25 s = 125 periods, none lost.
	_, v, _ = deviceSamples(t, d, micros(15*time.Second))
	if len(v) != 125 {
		t.Fatalf("got %d samples after 15s, want 125", len(v))
	}
}

func TestBufferSpanBounds(t *testing.T) {
	for _, tc := range []struct{ poll, want time.Duration }{
		{time.Second, 10 * time.Second},
		{5 * time.Second, 10 * time.Second},
		{7 * time.Second, 14 * time.Second},
		{time.Minute, 2 * time.Minute},
		{time.Hour, 10 * time.Minute},
	} {
		if got := bufferSpanFor(tc.poll); got != tc.want {
			t.Errorf("bufferSpanFor(%v) = %v, want %v", tc.poll, got, tc.want)
		}
	}
}

func TestMPSOverlap(t *testing.T) {
	sc := baseScenario(scenario.ModeMPS, 10*time.Second)
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, gpu0, 1, seg(0, time.Second, 0.8)))
	addPod(sc, "uid-b", "b", 0, 10*time.Second, proc1(200, gpu0, 1, seg(0, time.Second, 0.8)))
	n := newNode(t, sc)
	advance(t, n, time.Second)
	d := handle(t, n, 0)
	_, v, _ := deviceSamples(t, d, 0)
	if !slices.Equal(v, []uint32{100, 100, 100, 100, 100}) {
		t.Errorf("device samples %v, want five of 100", v)
	}
	got, _ := d.GetProcessUtilization(0)
	if len(got) != 10 {
		t.Fatalf("got %d process samples, want 10", len(got))
	}
	for _, s := range got {
		if s.SmUtil != 80 {
			t.Errorf("pid %d at %d: %d%%, want 80 (MPS clients are not clamped)", s.Pid, s.TimeStamp, s.SmUtil)
		}
	}
	mps, ret := d.GetMPSComputeRunningProcesses()
	if ret != nvml.SUCCESS || len(mps) != 2 {
		t.Errorf("MPS running processes %+v %v, want 2", mps, ret)
	}
}

func TestMPSPartialOverlapSweep(t *testing.T) {
	sc := baseScenario(scenario.ModeMPS, 10*time.Second)
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, gpu0, 1, seg(0, time.Second, 0.8)))
	addPod(sc, "uid-b", "b", 0, 10*time.Second, proc1(200, gpu0, 1, seg(500*ms, 1500*ms, 0.8)))
	n := newNode(t, sc)
	advance(t, n, 2*time.Second)
	_, v, _ := deviceSamples(t, handle(t, n, 0), 0)
	// S = 0.8 on [0,.5), 1.6 -> 1 on [.5,1), 0.8 on [1,1.5).
	want := []uint32{80, 80, 90, 100, 100, 80, 80, 40, 0, 0}
	if !slices.Equal(v, want) {
		t.Errorf("device samples %v, want %v", v, want)
	}
	// Busy = 0.4 + 0.5 + 0.4 = 1.3 s over 2 s: 60 x 2 + 340 x 1.3 = 562 J.
	e, ret := handle(t, n, 0).GetTotalEnergyConsumption()
	if ret != nvml.SUCCESS || e != 562000 {
		t.Errorf("energy %d mJ (%v), want 562000", e, ret)
	}
}

func TestMPSServerView(t *testing.T) {
	sc := baseScenario(scenario.ModeMPS, 10*time.Second)
	sc.GPUs[0].MPSProcessView = "server"
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, gpu0, 1000, seg(0, time.Second, 0.8)))
	addPod(sc, "uid-b", "b", 0, 10*time.Second, proc1(200, gpu0, 2000, seg(0, 400*ms, 0.1)))
	n := newNode(t, sc)
	advance(t, n, time.Second)
	d := handle(t, n, 0)
	got, ret := d.GetProcessUtilization(0)
	if ret != nvml.SUCCESS {
		t.Fatalf("GetProcessUtilization: %v", ret)
	}
	want := []uint32{90, 90, 80, 80, 80}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %d server samples", got, len(want))
	}
	for i, s := range got {
		if s.Pid != 4000000 || s.SmUtil != want[i] {
			t.Errorf("sample %d: pid %d %d%%, want pid 4000000 %d%%", i, s.Pid, s.SmUtil, want[i])
		}
	}
	procs, _ := d.GetComputeRunningProcesses()
	if len(procs) != 2 || procs[0].Pid != 100 || procs[0].UsedGpuMemory != 1000<<20 || procs[1].Pid != 200 {
		t.Errorf("running processes %+v, want the two clients", procs)
	}
	if name, ret := n.NVML().SystemGetProcessName(4000000); ret != nvml.SUCCESS || name != "nvidia-cuda-mps-server" {
		t.Errorf("server process name %q %v", name, ret)
	}
}

func migScenario() *scenario.Scenario {
	sc := baseScenario(scenario.ModeMIG, 10*time.Second)
	sc.GPUs[0].MIGInstances = []scenario.MIGInstance{{UUID: mig0, Profile: "3g.40gb", GI: 1}, {UUID: mig1, Profile: "1g.10gb", GI: 2}}
	sc.GPUs = append(sc.GPUs, scenario.GPU{Index: 1, UUID: gpu1, Model: "H100-SXM5-80GB", Mode: scenario.ModeExclusive, IdleWatts: 70, MaxWatts: 700})
	addPod(sc, "uid-a", "a", 0, 10*time.Second, proc1(100, mig0, 3000, seg(0, 7*time.Second, 1)))
	addPod(sc, "uid-b", "b", 0, 10*time.Second, proc1(200, mig1, 500, seg(0, 7*time.Second, 0.7)))
	sc.HostProcesses = []scenario.Process{proc1(50, mig1, 100, seg(7*time.Second, 8*time.Second, 0.2))}
	return sc
}

func TestMIG(t *testing.T) {
	n := newNode(t, migScenario())
	d := handle(t, n, 0)
	if c, p, ret := d.GetMigMode(); ret != nvml.SUCCESS || c != nvml.DEVICE_MIG_ENABLE || p != nvml.DEVICE_MIG_ENABLE {
		t.Errorf("MIG mode %d/%d %v, want enabled", c, p, ret)
	}
	if c, _, ret := handle(t, n, 1).GetMigMode(); ret != nvml.SUCCESS || c != nvml.DEVICE_MIG_DISABLE {
		t.Errorf("GPU 1 MIG mode %d %v, want disabled", c, ret)
	}
	if c, ret := d.GetMaxMigDeviceCount(); c != 7 || ret != nvml.SUCCESS {
		t.Errorf("max MIG devices %d %v, want 7", c, ret)
	}
	advance(t, n, time.Second)
	if _, ret := d.GetProcessUtilization(0); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("GetProcessUtilization on MIG GPU: %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if _, _, ret := d.GetSamples(nvml.GPU_UTILIZATION_SAMPLES, 0); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("GetSamples on MIG GPU: %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if _, ret := d.GetUtilizationRates(); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("GetUtilizationRates on MIG GPU: %v, want ERROR_NOT_SUPPORTED", ret)
	}

	type migWant struct {
		uuid, name string
		gi, slices int
		mem        uint64
		pids       []uint32
		usedMiB    uint64
		totalMiB   uint64
	}
	wants := []migWant{
		{mig0, "NVIDIA A100-SXM4-80GB MIG 3g.40gb", 1, 3, 40960, []uint32{100}, 3000, 40960},
		{mig1, "NVIDIA A100-SXM4-80GB MIG 1g.10gb", 2, 1, 10240, []uint32{50, 200}, 600, 10240},
	}
	for i, w := range wants {
		m, ret := d.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS {
			t.Fatalf("MIG handle %d: %v", i, ret)
		}
		if is, _ := m.IsMigDeviceHandle(); !is {
			t.Errorf("MIG %d: IsMigDeviceHandle false", i)
		}
		if u, _ := m.GetUUID(); u != w.uuid {
			t.Errorf("MIG %d: uuid %s, want %s", i, u, w.uuid)
		}
		if s, _ := m.GetName(); s != w.name {
			t.Errorf("MIG %d: name %q, want %q", i, s, w.name)
		}
		if gi, ret := m.GetGpuInstanceId(); gi != w.gi || ret != nvml.SUCCESS {
			t.Errorf("MIG %d: GI %d %v, want %d", i, gi, ret, w.gi)
		}
		if ci, ret := m.GetComputeInstanceId(); ci != 0 || ret != nvml.SUCCESS {
			t.Errorf("MIG %d: CI %d %v, want 0", i, ci, ret)
		}
		a, _ := m.GetAttributes()
		if int(a.GpuInstanceSliceCount) != w.slices || int(a.ComputeInstanceSliceCount) != w.slices || a.MemorySizeMB != w.mem {
			t.Errorf("MIG %d: attributes %+v, want %d slices %d MB", i, a, w.slices, w.mem)
		}
		if p, ret := m.GetDeviceHandleFromMigDeviceHandle(); ret != nvml.SUCCESS || p != d {
			t.Errorf("MIG %d: parent %v %v, want GPU 0", i, p, ret)
		}
		procs, _ := m.GetComputeRunningProcesses()
		var pids []uint32
		for _, p := range procs {
			pids = append(pids, p.Pid)
			if p.GpuInstanceId != uint32(w.gi) || p.ComputeInstanceId != 0 {
				t.Errorf("MIG %d pid %d: GI/CI %d/%d, want %d/0", i, p.Pid, p.GpuInstanceId, p.ComputeInstanceId, w.gi)
			}
		}
		if !slices.Equal(pids, w.pids) {
			t.Errorf("MIG %d: running %v, want %v", i, pids, w.pids)
		}
		mem, _ := m.GetMemoryInfo()
		if mem.Used != w.usedMiB<<20 || mem.Total != w.totalMiB<<20 {
			t.Errorf("MIG %d: memory %+v, want used %d MiB of %d", i, mem, w.usedMiB, w.totalMiB)
		}
	}
	if _, ret := d.GetMigDeviceHandleByIndex(2); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("MIG handle 2: %v, want ERROR_NOT_FOUND", ret)
	}
	procs, _ := d.GetComputeRunningProcesses()
	if len(procs) != 3 || procs[0].Pid != 50 || procs[0].GpuInstanceId != 2 || procs[2].Pid != 200 {
		t.Errorf("GPU running processes %+v, want pids 50,100,200 with GI ids", procs)
	}
	if mem, _ := d.GetMemoryInfo(); mem.Used != 3600<<20 || mem.Total != 81920<<20 {
		t.Errorf("GPU memory %+v, want 3600 MiB used of 81920", mem)
	}
	if byUUID, ret := n.NVML().DeviceGetHandleByUUID(mig1); ret != nvml.SUCCESS {
		t.Errorf("handle by MIG UUID: %v", ret)
	} else if gi, _ := byUUID.GetGpuInstanceId(); gi != 2 {
		t.Errorf("handle by MIG UUID: GI %d, want 2", gi)
	}
	gi, ret := d.GetGpuInstanceById(1)
	if ret != nvml.SUCCESS {
		t.Fatalf("GetGpuInstanceById(1): %v", ret)
	}
	if info, _ := gi.GetInfo(); info.Id != 1 || info.ProfileId != nvml.GPU_INSTANCE_PROFILE_3_SLICE {
		t.Errorf("GI info %+v, want id 1 profile 3-slice", info)
	}
}

func TestEnergy(t *testing.T) {
	sc := baseScenario(scenario.ModeExclusive, 20*time.Second)
	addPod(sc, "uid-a", "a", 0, 20*time.Second, proc1(100, gpu0, 1, seg(0, 10*time.Second, 0.5)))
	n := newNode(t, sc)
	d := handle(t, n, 0)
	if p, _ := d.GetPowerUsage(); p != 60000 {
		t.Errorf("power at start %d mW, want idle 60000", p)
	}
	advance(t, n, 3*time.Second)
	advance(t, n, 10100*ms)
	// 60 W x 10.1 s + 340 W x 0.5 x 10 s = 606 + 1700 J.
	if e, _ := d.GetTotalEnergyConsumption(); e != 2306000 {
		t.Errorf("energy at 10.1s %d mJ, want 2306000", e)
	}
	// The last completed period, [9.8s, 10s), is 50% busy: 60 + 170 W.
	if p, _ := d.GetPowerUsage(); p != 230000 {
		t.Errorf("power at 10.1s %d mW, want 230000", p)
	}
	advance(t, n, 20*time.Second)
	if p, _ := d.GetPowerUsage(); p != 60000 {
		t.Errorf("power at 20s %d mW, want idle 60000", p)
	}
	if e, _ := d.GetTotalEnergyConsumption(); e != 2900000 {
		t.Errorf("energy at 20s %d mJ, want 2900000", e)
	}

	m := newNode(t, migScenario())
	advance(t, m, 3*time.Second)
	// 60 W + 340 W x (3/7 x 1 + 1/7 x 0.7) = 239.7142857 W.
	if p, _ := handle(t, m, 0).GetPowerUsage(); p != 239714 {
		t.Errorf("MIG power %d mW, want 239714", p)
	}
	advance(t, m, 7*time.Second)
	// 60 x 7 + 340 x (3/7 x 1 x 7 + 1/7 x 0.7 x 7) = 420 + 1258 J.
	if e, _ := handle(t, m, 0).GetTotalEnergyConsumption(); e != 1678000 {
		t.Errorf("MIG energy %d mJ, want 1678000", e)
	}
	if e, _ := handle(t, m, 1).GetTotalEnergyConsumption(); e != 490000 {
		t.Errorf("idle H100 energy %d mJ, want 70 x 7 = 490000", e)
	}
}

func TestNVMLLibrary(t *testing.T) {
	n := newNode(t, migScenario())
	lib := n.NVML()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Fatalf("Init: %v", ret)
	}
	defer lib.Shutdown()
	if c, ret := lib.DeviceGetCount(); c != 2 || ret != nvml.SUCCESS {
		t.Errorf("count %d %v, want 2", c, ret)
	}
	if v, ret := lib.SystemGetDriverVersion(); v == "" || ret != nvml.SUCCESS {
		t.Errorf("driver version %q %v", v, ret)
	}
	d1 := handle(t, n, 1)
	if name, _ := d1.GetName(); name != "NVIDIA H100-SXM5-80GB" {
		t.Errorf("name %q", name)
	}
	if mem, _ := d1.GetMemoryInfo(); mem.Total != 81920<<20 || mem.Used != 0 {
		t.Errorf("GPU 1 memory %+v", mem)
	}
	// Library wrappers delegate to the handle.
	if u, ret := lib.DeviceGetUUID(d1); u != gpu1 || ret != nvml.SUCCESS {
		t.Errorf("DeviceGetUUID %q %v, want %s", u, ret, gpu1)
	}
	if _, ret := lib.DeviceGetHandleByUUID("GPU-nope"); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("unknown UUID: %v, want ERROR_NOT_FOUND", ret)
	}
	if _, ret := lib.DeviceGetHandleByIndex(5); ret != nvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("index 5: %v, want ERROR_INVALID_ARGUMENT", ret)
	}
	// What the simulator does not model answers NOT_SUPPORTED instead of panicking.
	if _, ret := d1.GetTemperature(nvml.TEMPERATURE_GPU); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("GetTemperature: %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if _, ret := lib.DeviceGetTemperature(d1, nvml.TEMPERATURE_GPU); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("DeviceGetTemperature: %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if _, ret := lib.DeviceGetUUID(nil); ret != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("DeviceGetUUID(nil): %v, want ERROR_NOT_SUPPORTED", ret)
	}
	if mps, ret := d1.GetMPSComputeRunningProcesses(); ret != nvml.SUCCESS || len(mps) != 0 {
		t.Errorf("MPS processes on exclusive GPU %+v %v, want none", mps, ret)
	}
	if s := lib.ErrorString(nvml.ERROR_NOT_FOUND); s != "ERROR_NOT_FOUND" {
		t.Errorf("ErrorString %q", s)
	}
}
