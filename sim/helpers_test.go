package sim

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const (
	gpu0 = "GPU-00000000-0000-4000-8000-000000000000"
	gpu1 = "GPU-11111111-0000-4000-8000-000000000000"
	mig0 = "MIG-00000000-0000-4000-8000-0000000000a0"
	mig1 = "MIG-00000000-0000-4000-8000-0000000000a1"
)

const ms = time.Millisecond

// baseScenario is a one-GPU node with no pods; tests add what they need.
func baseScenario(mode string, dur time.Duration) *scenario.Scenario {
	return &scenario.Scenario{
		APIVersion: "gpuledger/v1", Kind: "Scenario", Name: "unit",
		Start: t0, Duration: dur, PollInterval: time.Second, LedgerInterval: time.Minute,
		DriverSamplePeriod: 200 * ms,
		Node:               scenario.Node{Name: "sim-node", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
		GPUs: []scenario.GPU{{
			Index: 0, UUID: gpu0, Model: "A100-SXM4-80GB", Mode: mode, IdleWatts: 60, MaxWatts: 400,
		}},
	}
}

// addPod adds a one-container pod running the given processes.
func addPod(sc *scenario.Scenario, uid, name string, start, end time.Duration, procs ...scenario.Process) {
	sc.Pods = append(sc.Pods, scenario.Pod{
		UID: uid, Namespace: "team-a", Name: name, Start: start, End: end,
		Labels: map[string]string{"app": name}, Annotations: map[string]string{},
		Containers: []scenario.Container{{
			Name: "main", ID: hexID(name),
			Devices:   []scenario.DeviceRequest{{Resource: "nvidia.com/gpu", IDs: []string{gpu0 + "::0"}}},
			Processes: procs,
		}},
	})
}

// hexID pads a short name into a 64-character container ID.
func hexID(name string) string {
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 64)
	for i := range b {
		b[i] = hexdigits[(int(name[i%len(name)])+i)%16]
	}
	return string(b)
}

func proc1(pid uint32, dev string, mem uint64, busy ...scenario.Segment) scenario.Process {
	return scenario.Process{PID: pid, Device: dev, MemoryMiB: mem, Busy: busy}
}

func seg(from, to time.Duration, f float64) scenario.Segment {
	return scenario.Segment{From: from, To: to, Fraction: f}
}

func newNode(t testing.TB, sc *scenario.Scenario) *Node {
	t.Helper()
	n, err := New(context.Background(), sc, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

func advance(t testing.TB, n *Node, off time.Duration) {
	t.Helper()
	if err := n.Advance(t0.Add(off)); err != nil {
		t.Fatalf("Advance(%v): %v", off, err)
	}
}

func handle(t testing.TB, n *Node, i int) nvml.Device {
	t.Helper()
	d, ret := n.NVML().DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		t.Fatalf("DeviceGetHandleByIndex(%d): %v", i, ret)
	}
	return d
}

// micros is the NVML timestamp of t0+off.
func micros(off time.Duration) uint64 { return uint64(t0.Add(off).UnixMicro()) }

// deviceSamples decodes GetSamples into percentages by timestamp order.
func deviceSamples(t testing.TB, d nvml.Device, lastSeen uint64) ([]uint64, []uint32, nvml.Return) {
	t.Helper()
	vt, s, ret := d.GetSamples(nvml.GPU_UTILIZATION_SAMPLES, lastSeen)
	if ret != nvml.SUCCESS {
		return nil, nil, ret
	}
	if vt != nvml.VALUE_TYPE_UNSIGNED_INT {
		t.Fatalf("value type %v, want unsigned int", vt)
	}
	var ts []uint64
	var v []uint32
	for _, x := range s {
		ts = append(ts, x.TimeStamp)
		v = append(v, uint32(x.SampleValue[0])|uint32(x.SampleValue[1])<<8|uint32(x.SampleValue[2])<<16|uint32(x.SampleValue[3])<<24)
	}
	return ts, v, ret
}
