package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"strconv"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// The files are written from sim/scenario's File, the one scenario
// schema, which the parser reads too. The truth is still computed
// independently (internal/groundtruth), from the file as the parser reads
// it. The short names below are the schema's types, not copies.
type (
	gpuY         = scenario.FileGPU
	mpsY         = scenario.FileMPS
	segY         = scenario.FileSegment
	memY         = scenario.FileMemorySegment
	sliceDeviceY = scenario.FileSliceDevice
)

// podY is a pod being built: the file's pod and where its processes go.
type podY struct {
	*scenario.FilePod
	start, end float64 // seconds, for placing processes
	turn       float64 // where the next init container (or the containers' processes) starts
}

// ctrY is a regular or init container being built: the file's
// container and where its processes start and end by default (seconds).
type ctrY struct {
	*scenario.FileContainerSpec
	start, end float64
}

// flagsY is the flags.yaml sidecar.
type flagsY struct {
	Expect []map[string]string `yaml:"expect_flags"`
	Forbid []map[string]string `yaml:"forbid_flags"`
}

// builder assembles one scenario with identifiers drawn from a generator
// seeded by the scenario's name, so that each file is reproducible on its
// own and adding a scenario changes no other.
type builder struct {
	f     *scenario.File
	flags flagsY
	rng   *rand.Rand
	dur   float64 // seconds
}

func newBuilder(name string, duration float64, labels map[string]string) *builder {
	h := fnv.New64a()
	h.Write([]byte(name))
	b := &builder{rng: rand.New(rand.NewSource(int64(h.Sum64()))), dur: duration}
	idleThreshold := 0.05
	b.f = &scenario.File{
		APIVersion: "gpuledger/v1", Kind: "Scenario", Name: name,
		Start: text("2026-11-03T00:00:00Z"), Duration: secs(duration),
		PollInterval: text("1s"), LedgerInterval: text("60s"), DriverSamplePeriod: text("200ms"),
		Detection: scenario.FileDetection{IdleWindow: text("5m"), IdleThreshold: &idleThreshold, NoisyWindow: text("1m")},
		Node:      scenario.FileNode{Name: "sim-" + name, Labels: labels},
	}
	return b
}

// secs writes seconds as a Go duration, exactly ("46.3s").
func secs(s float64) scenario.Value {
	return text(strconv.FormatFloat(s, 'f', -1, 64) + "s")
}

var text = scenario.TextValue

// watts is a GPU's power figure.
func watts(w float64) *float64 { return &w }

// round2 keeps fractions short and their sums exact enough to read.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

// roundT rounds a time to a hundredth of a second.
func roundT(t float64) float64 { return math.Round(t*100) / 100 }

func (b *builder) uuid() string {
	r := b.rng
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.Intn(1<<16), r.Intn(1<<12), r.Intn(1<<12), r.Int63n(1<<48))
}

func (b *builder) namespace(name string, labels map[string]string) {
	b.f.Namespaces = append(b.f.Namespaces, scenario.FileNamespace{Name: name, Labels: labels})
}

func (b *builder) gpu(model, mode string) *gpuY {
	g := &gpuY{Index: scenario.IntValue(len(b.f.GPUs)), UUID: "GPU-" + b.uuid(), Model: model, Mode: mode,
		Power: scenario.FilePower{IdleWatts: watts(70), MaxWatts: watts(700)}}
	if model[:4] == "A100" {
		g.Power = scenario.FilePower{IdleWatts: watts(60), MaxWatts: watts(400)}
	}
	b.f.GPUs = append(b.f.GPUs, g)
	return g
}

func (b *builder) mig(g *gpuY, profile string) string {
	m := &scenario.FileMIG{UUID: "MIG-" + b.uuid(), Profile: profile}
	g.MIGInstances = append(g.MIGInstances, m)
	return m.UUID
}

// migGI adds a MIG instance with the GPU-instance ID NVML reports.
func (b *builder) migGI(g *gpuY, profile string, gi int) string {
	u := b.mig(g, profile)
	g.MIGInstances[len(g.MIGInstances)-1].GI = scenario.IntValue(gi)
	return u
}

// pod adds a pod living [start, end) seconds; end 0 means to the end.
func (b *builder) pod(ns, name string, start, end float64) *podY {
	p := &podY{FilePod: &scenario.FilePod{UID: b.uuid(), Namespace: ns, Name: name}, start: start, end: end, turn: start}
	if start > 0 {
		p.Start = secs(start)
	}
	if end > 0 {
		p.End = secs(end)
	} else {
		p.end = b.dur
	}
	b.f.Pods = append(b.f.Pods, p.FilePod)
	return p
}

// container adds a regular container holding ids of resource (none when
// resource is ""); its processes start once the plain init containers are
// done.
func (p *podY) container(name, resource string, ids ...string) *ctrY {
	fc := &scenario.FileContainer{Name: name, FileContainerSpec: devices(resource, ids)}
	p.Containers = append(p.Containers, fc)
	return &ctrY{FileContainerSpec: &fc.FileContainerSpec, start: p.turn, end: p.end}
}

// devices is a container holding ids of resource (none when resource is
// "").
func devices(resource string, ids []string) scenario.FileContainerSpec {
	if resource == "" {
		return scenario.FileContainerSpec{}
	}
	return scenario.FileContainerSpec{Devices: []scenario.FileDevice{{Resource: resource, IDs: ids}}}
}

// initContainer adds a plain init container running from its turn to end
// (seconds); add them before the regular containers.
func (p *podY) initContainer(name string, end float64, resource string, ids ...string) *ctrY {
	fc := &scenario.FileInitContainer{Name: name, End: secs(end), FileContainerSpec: devices(resource, ids)}
	c := &ctrY{FileContainerSpec: &fc.FileContainerSpec, start: p.turn, end: end}
	p.turn = end
	p.InitContainers = append(p.InitContainers, fc)
	return c
}

// sidecar adds an init container with restartPolicy Always: from its turn
// to the pod's end.
func (p *podY) sidecar(name string) *ctrY {
	fc := &scenario.FileInitContainer{Name: name, RestartPolicy: "Always"}
	p.InitContainers = append(p.InitContainers, fc)
	return &ctrY{FileContainerSpec: &fc.FileContainerSpec, start: p.turn, end: p.end}
}

// claim lists one DRA claim device for the container.
func (c *ctrY) claim(claim, driver, pool, device string) *ctrY {
	c.Claims = append(c.Claims, scenario.FileClaim{Claim: claim, Request: "gpu", Driver: driver, Pool: pool, Device: device})
	return c
}

// annotate changes the pod's annotations at offset at (seconds).
func (p *podY) annotate(at float64, kv map[string]string) {
	p.AnnotationChanges = append(p.AnnotationChanges, scenario.FileAnnotationChange{At: secs(at), Annotations: kv})
}

// resourceSlice publishes a DRA driver's devices on the node.
func (b *builder) resourceSlice(driver, pool string, devices ...sliceDeviceY) {
	b.f.Node.ResourceSlices = append(b.f.Node.ResourceSlices, &scenario.FileResourceSlice{Driver: driver, Pool: pool, Devices: devices})
}

// process adds a GPU process living [start, end) with the given activity;
// zero start and end mean the container's own.
func (c *ctrY) process(pid int, device string, memMiB int, start, end float64, busy []segY) *scenario.FileProcess {
	pr := &scenario.FileProcess{PID: scenario.IntValue(pid), Device: device, MemoryMiB: scenario.IntValue(memMiB), Busy: busy}
	if start > 0 && start != c.start {
		pr.Start = secs(start)
	}
	if end > 0 && end != c.end {
		pr.End = secs(end)
	}
	c.Processes = append(c.Processes, pr)
	return pr
}

func (b *builder) host(pid int, device string, memMiB int, busy []segY) {
	b.f.HostProcesses = append(b.f.HostProcesses, &scenario.FileProcess{PID: scenario.IntValue(pid), Device: device, MemoryMiB: scenario.IntValue(memMiB), Busy: busy})
}

func seg(from, to, f float64) segY { return segY{From: secs(from), To: secs(to), Fraction: &f} }

// pattern is activity over [from, to) that changes every step seconds,
// each stretch drawn uniformly from [lo, hi] and rounded to 0.01.
func (b *builder) pattern(from, to, step, lo, hi float64) []segY {
	var out []segY
	for t := from; t < to; t += step {
		a, z := roundT(t), roundT(min(to, t+step))
		f := round2(lo + b.rng.Float64()*(hi-lo))
		if f > 0 && a < z {
			out = append(out, seg(a, z, f))
		}
	}
	return out
}

func (b *builder) expect(kv ...string) { b.flags.Expect = append(b.flags.Expect, pairs(kv)) }
func (b *builder) forbid(kv ...string) { b.flags.Forbid = append(b.flags.Forbid, pairs(kv)) }

func pairs(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
