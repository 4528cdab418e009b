package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"strconv"
)

// The YAML model mirrors docs/scenario-format.md field for field; it
// is this generator's own so that the files are written the way a person
// would write them, independent of how the parser reads them.

type fileY struct {
	APIVersion         string     `yaml:"apiVersion"`
	Kind               string     `yaml:"kind"`
	Name               string     `yaml:"name"`
	Start              string     `yaml:"start"`
	Duration           string     `yaml:"duration"`
	PollInterval       string     `yaml:"pollInterval"`
	LedgerInterval     string     `yaml:"ledgerInterval"`
	DriverSamplePeriod string     `yaml:"driverSamplePeriod"`
	Detection          detectionY `yaml:"detection"`
	Node               nodeY      `yaml:"node"`
	Namespaces         []nsY      `yaml:"namespaces"`
	GPUs               []*gpuY    `yaml:"gpus"`
	Pods               []*podY    `yaml:"pods"`
	HostProcesses      []*procY   `yaml:"hostProcesses,omitempty"`
}

type detectionY struct {
	IdleWindow    string  `yaml:"idleWindow"`
	IdleThreshold float64 `yaml:"idleThreshold"`
	NoisyWindow   string  `yaml:"noisyWindow"`
	MemoryWindow  string  `yaml:"memoryWindow,omitempty"`
}

type nodeY struct {
	Name           string            `yaml:"name"`
	Labels         map[string]string `yaml:"labels"`
	ResourceSlices []*sliceY         `yaml:"resourceSlices,omitempty"`
}

// sliceY is one resource.k8s.io ResourceSlice a DRA driver publishes.
type sliceY struct {
	Driver  string         `yaml:"driver"`
	Pool    string         `yaml:"pool"`
	Devices []sliceDeviceY `yaml:"devices"`
}

type sliceDeviceY struct {
	Name       string            `yaml:"name"`
	Attributes map[string]string `yaml:"attributes,omitempty"`
}

type nsY struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type gpuY struct {
	Index        int     `yaml:"index"`
	Minor        *int    `yaml:"minor,omitempty"`
	UUID         string  `yaml:"uuid"`
	Model        string  `yaml:"model"`
	Mode         string  `yaml:"mode"`
	MPS          *mpsY   `yaml:"mps,omitempty"`
	Power        powerY  `yaml:"power"`
	MIGInstances []*migY `yaml:"migInstances,omitempty"`
}

type mpsY struct {
	ProcessView string `yaml:"processView"`
}

type powerY struct {
	IdleWatts float64 `yaml:"idleWatts"`
	MaxWatts  float64 `yaml:"maxWatts"`
}

type migY struct {
	UUID    string `yaml:"uuid"`
	Profile string `yaml:"profile"`
	GI      *int   `yaml:"gi,omitempty"`
}

type podY struct {
	UID         string            `yaml:"uid"`
	Namespace   string            `yaml:"namespace"`
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
	Start       string            `yaml:"start,omitempty"`
	End         string            `yaml:"end,omitempty"`
	// AnnotationChanges are edits of the annotations while the pod runs.
	AnnotationChanges []annotationChangeY `yaml:"annotationChanges,omitempty"`
	InitContainers    []*ctrY             `yaml:"initContainers,omitempty"`
	Containers        []*ctrY             `yaml:"containers"`

	start, end float64 // seconds, for placing processes
	turn       float64 // where the next init container (or the containers' processes) starts
}

type annotationChangeY struct {
	At          string            `yaml:"at"`
	Annotations map[string]string `yaml:"annotations"`
}

type ctrY struct {
	Name          string   `yaml:"name"`
	RestartPolicy string   `yaml:"restartPolicy,omitempty"`
	End           string   `yaml:"end,omitempty"`
	Devices       []devY   `yaml:"devices,omitempty"`
	Claims        []claimY `yaml:"claims,omitempty"`
	Processes     []*procY `yaml:"processes,omitempty"`
	// Limits are the container's extended-resource limits (pod spec).
	Limits map[string]string `yaml:"limits,omitempty"`

	pod        *podY
	start, end float64 // seconds: where its processes start and end by default
}

// claimY is one DRA claim device kubelet lists for a container.
type claimY struct {
	Claim   string `yaml:"claim"`
	Request string `yaml:"request,omitempty"`
	Driver  string `yaml:"driver"`
	Pool    string `yaml:"pool"`
	Device  string `yaml:"device"`
}

type devY struct {
	Resource string   `yaml:"resource"`
	IDs      []string `yaml:"ids,flow"`
}

type procY struct {
	PID       int    `yaml:"pid"`
	Device    string `yaml:"device"`
	MemoryMiB int    `yaml:"memoryMiB"`
	Start     string `yaml:"start,omitempty"`
	End       string `yaml:"end,omitempty"`
	Busy      []segY `yaml:"busy,flow"`
	Memory    []memY `yaml:"memory,flow,omitempty"`
}

// memY is one interval of memory over time.
type memY struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
	MiB  int    `yaml:"mib"`
}

type segY struct {
	From     string  `yaml:"from"`
	To       string  `yaml:"to"`
	Fraction float64 `yaml:"fraction"`
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
	f     *fileY
	flags flagsY
	rng   *rand.Rand
	dur   float64 // seconds
}

func newBuilder(name string, duration float64, labels map[string]string) *builder {
	h := fnv.New64a()
	h.Write([]byte(name))
	b := &builder{rng: rand.New(rand.NewSource(int64(h.Sum64()))), dur: duration}
	b.f = &fileY{
		APIVersion: "gpuledger/v1", Kind: "Scenario", Name: name,
		Start: "2026-11-03T00:00:00Z", Duration: secs(duration),
		PollInterval: "1s", LedgerInterval: "60s", DriverSamplePeriod: "200ms",
		Detection: detectionY{IdleWindow: "5m", IdleThreshold: 0.05, NoisyWindow: "1m"},
		Node:      nodeY{Name: "sim-" + name, Labels: labels},
	}
	return b
}

// secs writes seconds as a Go duration, exactly ("46.3s").
func secs(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64) + "s"
}

// round2 keeps fractions short and their sums exact enough to read.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

// roundT rounds a time to a hundredth of a second.
func roundT(t float64) float64 { return math.Round(t*100) / 100 }

func (b *builder) uuid() string {
	r := b.rng
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.Intn(1<<16), r.Intn(1<<12), r.Intn(1<<12), r.Int63n(1<<48))
}

func (b *builder) namespace(name string, labels map[string]string) {
	b.f.Namespaces = append(b.f.Namespaces, nsY{Name: name, Labels: labels})
}

func (b *builder) gpu(model, mode string) *gpuY {
	g := &gpuY{Index: len(b.f.GPUs), UUID: "GPU-" + b.uuid(), Model: model, Mode: mode,
		Power: powerY{IdleWatts: 70, MaxWatts: 700}}
	if model[:4] == "A100" {
		g.Power = powerY{IdleWatts: 60, MaxWatts: 400}
	}
	b.f.GPUs = append(b.f.GPUs, g)
	return g
}

func (b *builder) mig(g *gpuY, profile string) string {
	m := &migY{UUID: "MIG-" + b.uuid(), Profile: profile}
	g.MIGInstances = append(g.MIGInstances, m)
	return m.UUID
}

// migGI adds a MIG instance with the GPU-instance ID NVML reports.
func (b *builder) migGI(g *gpuY, profile string, gi int) string {
	u := b.mig(g, profile)
	g.MIGInstances[len(g.MIGInstances)-1].GI = &gi
	return u
}

// pod adds a pod living [start, end) seconds; end 0 means to the end.
func (b *builder) pod(ns, name string, start, end float64) *podY {
	p := &podY{UID: b.uuid(), Namespace: ns, Name: name, start: start, end: end, turn: start}
	if start > 0 {
		p.Start = secs(start)
	}
	if end > 0 {
		p.End = secs(end)
	} else {
		p.end = b.dur
	}
	b.f.Pods = append(b.f.Pods, p)
	return p
}

// container adds a regular container holding ids of resource (none when
// resource is ""); its processes start once the plain init containers are
// done.
func (p *podY) container(name, resource string, ids ...string) *ctrY {
	c := &ctrY{Name: name, pod: p, start: p.turn, end: p.end}
	if resource != "" {
		c.Devices = []devY{{Resource: resource, IDs: ids}}
	}
	p.Containers = append(p.Containers, c)
	return c
}

// initContainer adds a plain init container running from its turn to end
// (seconds); add them before the regular containers.
func (p *podY) initContainer(name string, end float64, resource string, ids ...string) *ctrY {
	c := &ctrY{Name: name, End: secs(end), pod: p, start: p.turn, end: end}
	if resource != "" {
		c.Devices = []devY{{Resource: resource, IDs: ids}}
	}
	p.turn = end
	p.InitContainers = append(p.InitContainers, c)
	return c
}

// sidecar adds an init container with restartPolicy Always: from its turn
// to the pod's end.
func (p *podY) sidecar(name string) *ctrY {
	c := &ctrY{Name: name, RestartPolicy: "Always", pod: p, start: p.turn, end: p.end}
	p.InitContainers = append(p.InitContainers, c)
	return c
}

// claim lists one DRA claim device for the container.
func (c *ctrY) claim(claim, driver, pool, device string) *ctrY {
	c.Claims = append(c.Claims, claimY{Claim: claim, Request: "gpu", Driver: driver, Pool: pool, Device: device})
	return c
}

// annotate changes the pod's annotations at offset at (seconds).
func (p *podY) annotate(at float64, kv map[string]string) {
	p.AnnotationChanges = append(p.AnnotationChanges, annotationChangeY{At: secs(at), Annotations: kv})
}

// resourceSlice publishes a DRA driver's devices on the node.
func (b *builder) resourceSlice(driver, pool string, devices ...sliceDeviceY) {
	b.f.Node.ResourceSlices = append(b.f.Node.ResourceSlices, &sliceY{Driver: driver, Pool: pool, Devices: devices})
}

// process adds a GPU process living [start, end) with the given activity;
// zero start and end mean the container's own.
func (c *ctrY) process(pid int, device string, memMiB int, start, end float64, busy []segY) *procY {
	pr := &procY{PID: pid, Device: device, MemoryMiB: memMiB, Busy: busy}
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
	b.f.HostProcesses = append(b.f.HostProcesses, &procY{PID: pid, Device: device, MemoryMiB: memMiB, Busy: busy})
}

func seg(from, to, f float64) segY { return segY{From: secs(from), To: secs(to), Fraction: f} }

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
