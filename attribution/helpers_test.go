package attribution

import (
	"crypto/sha256"
	"fmt"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func gpuID(n int) string { return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", n, n) }
func migID(n int) string { return fmt.Sprintf("MIG-%08x-0000-4000-8000-%012x", n, n) }

// cid is the runtime container ID the test pods use.
func cid(uid, name string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(uid+"/"+name)))
}

// tobs builds an Observation for a test.
type tobs struct{ Observation }

func newObs(prev, now time.Time) *tobs {
	o := &tobs{Observation{Node: "n1", Prev: prev, Time: now,
		Metadata: Metadata{NodeLabels: map[string]string{}, Namespaces: map[string]map[string]string{}}}}
	return o
}

func (o *tobs) label(k, v string) *tobs { o.Metadata.NodeLabels[k] = v; return o }

func (o *tobs) ns(name string, labels map[string]string) *tobs {
	o.Metadata.Namespaces[name] = labels
	return o
}

func (o *tobs) gpu(g GPU) *GPU {
	if g.Model == "" {
		g.Model = "A100-SXM4-80GB"
	}
	if g.MemoryMiB == 0 {
		g.MemoryMiB = 81920
	}
	o.GPUs = append(o.GPUs, g)
	return &o.GPUs[len(o.GPUs)-1]
}

// wholeGPU adds a non-MIG GPU with a 1 s sample period and device
// samples at pcts, one per second ending at Prev+1s, Prev+2s...
func (o *tobs) wholeGPU(uuid string, pcts ...float64) *GPU {
	g := GPU{UUID: uuid, SamplePeriod: time.Second, DeviceSamplesOK: true}
	for i, p := range pcts {
		g.DeviceSamples = append(g.DeviceSamples, UtilSample{At: o.Prev.Add(time.Duration(i+1) * time.Second), Percent: p})
	}
	return o.gpu(g)
}

func (o *tobs) pod(ns, name, uid string, start time.Time, labels, ann map[string]string, ctrs ...string) *tobs {
	p := PodMeta{UID: uid, Namespace: ns, Name: name, Labels: labels, Annotations: ann, StartTime: start}
	for _, c := range ctrs {
		p.Containers = append(p.Containers, ContainerMeta{Name: c, ID: cid(uid, c)})
	}
	o.Metadata.Pods = append(o.Metadata.Pods, p)
	return o
}

func (o *tobs) alloc(ns, pod, ctr, resource string, ids ...string) *tobs {
	o.Allocations = append(o.Allocations, Allocation{Namespace: ns, Pod: pod, Container: ctr, Resource: resource, DeviceIDs: ids})
	return o
}

// proc adds a running process of container ctr of the pod with uid
// (uid "" makes a host process named comm).
func (o *tobs) proc(pid uint32, gpu, device string, memMiB uint64, uid, ctr, comm string) *tobs {
	owner := Owner{Resolved: true, Comm: comm}
	if uid != "" {
		owner.PodUID, owner.ContainerID = uid, cid(uid, ctr)
	}
	o.Processes = append(o.Processes, Process{PID: pid, GPU: gpu, Device: device, MemoryMiB: memMiB, Owner: owner})
	return o
}

// samples adds per-process samples at pcts, one per second from Prev+1s.
func (o *tobs) samples(gpu string, pid uint32, pcts ...float64) *tobs {
	for i, p := range pcts {
		o.Samples = append(o.Samples, ProcessSample{GPU: gpu, PID: pid, At: o.Prev.Add(time.Duration(i+1) * time.Second), SMUtil: p})
	}
	return o
}

func rep(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// attributeOnce runs a baseline observation at obs.Prev (no samples,
// energy counters 0) and then obs, returning obs's result.
func attributeOnce(t *testing.T, cfg Config, obs *tobs) CycleResult {
	t.Helper()
	e := NewEngine(cfg)
	base := obs.Observation
	base.Time = base.Prev
	base.Samples = nil
	base.GPUs = make([]GPU, len(obs.GPUs))
	for i, g := range obs.GPUs {
		g.DeviceSamples = nil
		g.EnergyMilliJoules = 0
		base.GPUs[i] = g
	}
	e.Observe(base)
	res := e.Observe(obs.Observation)
	checkCycle(t, res)
	return res
}

const eps = 1e-9

func near(a, b float64) bool {
	return math.Abs(a-b) <= eps*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func wantNear(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// checkCycle asserts both partitions and the energy split of every GPU.
func checkCycle(t *testing.T, res CycleResult) {
	t.Helper()
	for _, g := range res.GPUs {
		var alloc, used, energy float64
		for _, c := range g.Containers {
			alloc += c.Allocated
			used += c.Used
			energy += c.Energy
			for _, v := range []float64{c.Allocated, c.Used, c.Energy, c.MemoryMiB, c.Share} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("GPU %s container %s/%s: bad value %v in %+v", g.UUID, c.Pod, c.Container, v, c)
				}
			}
		}
		for _, v := range []float64{g.Unallocated, g.Unattributed, g.Idle, g.EnergyJoules, g.UnattributedEnergy, g.IdleEnergy} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("GPU %s: bad residual %v in %+v", g.UUID, v, g)
			}
		}
		if !near(alloc+g.Unallocated, g.Capacity) {
			t.Errorf("GPU %s: allocation partition %v + %v != %v", g.UUID, alloc, g.Unallocated, g.Capacity)
		}
		if !near(used+g.Unattributed+g.Idle, g.Capacity) {
			t.Errorf("GPU %s: usage partition %v + %v + %v != %v", g.UUID, used, g.Unattributed, g.Idle, g.Capacity)
		}
		if !near(energy+g.UnattributedEnergy+g.IdleEnergy+g.UnallocatedEnergy, g.EnergyJoules) {
			t.Errorf("GPU %s: energy %v+%v+%v != %v", g.UUID, energy, g.UnattributedEnergy, g.IdleEnergy, g.EnergyJoules)
		}
	}
}

func gpuOf(t *testing.T, res CycleResult, uuid string) GPUCycle {
	t.Helper()
	for _, g := range res.GPUs {
		if g.UUID == uuid {
			return g
		}
	}
	t.Fatalf("no GPU %s in result", uuid)
	return GPUCycle{}
}

func ctrOf(t *testing.T, g GPUCycle, pod, ctr, slice string) ContainerCycle {
	t.Helper()
	for _, c := range g.Containers {
		if c.Pod == pod && c.Container == ctr && (slice == "" || c.SliceID == slice) {
			return c
		}
	}
	t.Fatalf("no row for %s/%s slice %q on %s in %+v", pod, ctr, slice, g.UUID, g.Containers)
	return ContainerCycle{}
}

// wantRow checks a container cycle's headline numbers.
func wantRow(t *testing.T, c ContainerCycle, mode, method string, share, alloc, used float64) {
	t.Helper()
	if c.SharingMode != mode || c.Method != method {
		t.Errorf("%s/%s %s: mode %q method %q, want %q %q", c.Pod, c.Container, c.SliceID, c.SharingMode, c.Method, mode, method)
	}
	wantNear(t, c.Pod+" share", c.Share, share)
	wantNear(t, c.Pod+" allocated", c.Allocated, alloc)
	wantNear(t, c.Pod+" used", c.Used, used)
}

func wantResiduals(t *testing.T, g GPUCycle, unalloc, unattr, idle float64) {
	t.Helper()
	wantNear(t, "unallocated", g.Unallocated, unalloc)
	wantNear(t, "unattributed", g.Unattributed, unattr)
	wantNear(t, "idle", g.Idle, idle)
}

func hasAnomaly(res CycleResult, kind, key string) bool {
	for _, a := range res.Anomalies {
		if a.Kind == kind && a.Key == key {
			return true
		}
	}
	return false
}
