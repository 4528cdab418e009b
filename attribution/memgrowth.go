package attribution

import (
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/gpu"
	"github.com/gpuledger/gpuledger/tenancy"
)

// FindingMemoryGrowth is a container whose GPU memory keeps growing on a
// device it shares without memory isolation.
const FindingMemoryGrowth = "memory_growth"

// Scopes and severities of a memory_growth finding.
const (
	// MemoryScopeGPU: a whole GPU shared by time-slicing or MPS; when it
	// is full every tenant's next allocation fails.
	MemoryScopeGPU = "gpu"
	// MemoryScopeMIGInstance: MIG fences memory per instance, so only the
	// instance the container runs on can fill up.
	MemoryScopeMIGInstance = "mig_instance"

	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// MemoryGrowth is what a memory_growth finding says.
type MemoryGrowth struct {
	Scope    string // MemoryScopeGPU or MemoryScopeMIGInstance
	Severity string // SeverityWarning, or SeverityInfo for a MIG instance only the container uses
	Device   string // the GPU or MIG UUID that fills up
	// RateMiBPerMin is the fitted growth of the container's lowest memory.
	RateMiBPerMin float64
	// DeviceMiB is the device's framebuffer (0: unknown), UsedMiB what
	// all its processes hold now.
	DeviceMiB, UsedMiB float64
	// ExhaustionSeconds is when the device is full if the growth goes on
	// and nothing else changes; -1 when its size is unknown.
	ExhaustionSeconds float64
}

// memoryRisk says who a leak in a container of this sharing mode can
// hurt (which modes are watched, and why the others are not:
// tenancy.Props.MemoryGrowth). Replicas share their device's memory, so a
// leak starves them (warning); a MIG instance alone has only its own
// memory to exhaust (info).
func memoryRisk(mode tenancy.Mode) (scope, severity string, ok bool) {
	p := mode.Props()
	if !p.MemoryGrowth {
		return "", "", false
	}
	scope, severity = MemoryScopeGPU, SeverityInfo
	if p.MIG {
		scope = MemoryScopeMIGInstance
	}
	if p.Replicated {
		severity = SeverityWarning
	}
	return scope, severity, true
}

// memEnt is what the memory detector keeps about one container on one
// GPU. The bucket being filled lives inline (open*), next to the fields
// every cycle touches anyway; the ring of past buckets is written once a
// bucket, when the next one opens.
type memEnt struct {
	cur              float64 // MiB its rows hold this cycle
	openMin, openMax float64
	openK            int64 // noBucket until the first sample
	openHeld         int64 // ns of the open bucket the container held the device
	env              []memBucket
}

// memBucket is the lowest and highest memory sampled in bucket k, and how
// long (ns) the container held the device within it.
type memBucket struct {
	k        int64
	min, max float64
	held     int64
}

// memPiece finds the bucket the memory read at the end of the cycle
// ending at now belongs to ((k b, (k+1) b]), once for every container.
func (d *detectors) memPiece(now int64) {
	d.memK = floorDiv(now-1, d.memR.b)
}

// sample records this cycle's memory in bucket k of ring r, and that the
// container held the device over (heldFrom, now]: the end of the cycle,
// as the allocation's overlap is the window clipped to the pod's start.
// A cycle straddling a bucket boundary gives each bucket its part.
func (m *memEnt) sample(k int64, r ringSpec, heldFrom, now int64) {
	if m.openK == k {
		m.openMin, m.openMax = min(m.openMin, m.cur), max(m.openMax, m.cur)
		m.openHeld += heldIn(heldFrom, now, k, r.b)
		return
	}
	if len(m.env) != r.n {
		m.env = make([]memBucket, r.n)
		for i := range m.env {
			m.env[i].k = noBucket
		}
	}
	if m.openK != noBucket {
		m.env[mod(m.openK, r.n)] = memBucket{k: m.openK, min: m.openMin, max: m.openMax,
			held: m.openHeld + heldIn(heldFrom, now, m.openK, r.b)}
	}
	m.openK, m.openMin, m.openMax = k, m.cur, m.cur
	m.openHeld = heldIn(heldFrom, now, k, r.b)
}

// heldIn is how much of (from, to] falls in bucket k of length b (ns).
func heldIn(from, to, k, b int64) int64 {
	return max(min(to, (k+1)*b)-max(from, k*b), 0)
}

// bucket returns bucket k, open or past; false when it holds nothing or
// the container did not hold the device for all of it. A partly held
// bucket would let a window start before the pod existed: a sample taken
// at the pod's first instant lands in the bucket ending then.
func (m *memEnt) bucket(k int64, r ringSpec) (memBucket, bool) {
	b := memBucket{k: k, min: m.openMin, max: m.openMax, held: m.openHeld}
	if m.openK != k {
		if len(m.env) != r.n {
			return memBucket{}, false
		}
		b = m.env[mod(k, r.n)]
	}
	return b, b.k == k && b.held >= r.b-heldSlack(r.b)
}

// heldSlack is what the held time of a whole bucket may miss by: the
// allocation's overlap reaches the detector as float seconds, so a
// bucket held throughout may sum to a few ns short.
func heldSlack(b int64) int64 { return max(b/1_000_000, 1_000) }

// rose reports whether the lowest memory of the last bucket before end is
// at least minGrowth above that of the window's first, both present.
func (m *memEnt) rose(end int64, r ringSpec, minGrowth float64) bool {
	kEnd := floorDiv(end, r.b)
	first, ok1 := m.bucket(kEnd-int64(r.n), r)
	last, ok2 := m.bucket(kEnd-1, r)
	return ok1 && ok2 && last.min-first.min >= minGrowth
}

// envelope fills env with the lowest memory of the n buckets before the
// one ending at end, oldest first, and spread with their highest minus
// lowest; false when one of them holds nothing (the container did not
// hold the device for the whole window).
func (m *memEnt) envelope(end int64, r ringSpec, env, spread []float64) ([]float64, []float64, bool) {
	env, spread = env[:0], spread[:0]
	kEnd := floorDiv(end, r.b)
	for j := int64(r.n); j >= 1; j-- {
		b, ok := m.bucket(kEnd-j, r)
		if !ok {
			return env, spread, false
		}
		env, spread = append(env, b.min), append(spread, b.max-b.min)
	}
	return env, spread, true
}

// evalMemory flags the containers whose lower envelope over the trailing
// memory window keeps growing (judgeTrend) on a device without memory
// isolation between them and a neighbour.
func (d *detectors) evalMemory(end int64, node string, out []Finding) []Finding {
	r := d.memR
	bucketSec := float64(r.b) / 1e9
	if cap(d.memScratch) < r.n {
		d.memScratch = make([]float64, 0, r.n)
	}
	for _, e := range d.ents {
		scope, severity, ok := memoryRisk(e.mode)
		if !ok {
			continue
		}
		if !e.mem.rose(end, r, d.cfg.MemoryGrowth.MinGrowthMiB) {
			continue // the common case, decided without building the envelope
		}
		var full bool
		d.memEnv, d.memSpread, full = e.mem.envelope(end, r, d.memEnv, d.memSpread)
		if !full {
			continue
		}
		tr := judgeTrend(d.memEnv, d.memSpread, bucketSec, d.cfg.MemoryGrowth, d.memScratch)
		if !tr.growing {
			continue
		}
		ep := d.flag(epKey{FindingMemoryGrowth, e.key, ""}, e, node, end, r)
		mg := d.memoryFigures(e, tr, scope, severity)
		ep.f.Memory = &mg
		ep.f.Detail = ep.f.Memory.detail()
	}
	return d.endUnflagged(out, FindingMemoryGrowth, end)
}

// memoryFigures projects when the container's device is full: its free
// memory now over the container's growth rate. The device and its use
// come from the cycle being observed.
func (d *detectors) memoryFigures(e *detEnt, tr memTrend, scope, severity string) MemoryGrowth {
	mg := MemoryGrowth{Scope: scope, Severity: severity, Device: e.key.gpu, RateMiBPerMin: tr.slope * 60, ExhaustionSeconds: -1}
	if d.cy == nil {
		return mg
	}
	gi, ok := d.cy.gpuByUUID(e.key.gpu)
	if !ok {
		return mg
	}
	g := &d.cy.gpus[gi]
	inst := d.cy.instOf(gi, e.key.ctr)
	var dcgm *DCGMValues
	if inst >= 0 {
		m := &g.MIG[inst]
		mg.Device, mg.DeviceMiB, dcgm = m.UUID, migMemoryMiB(m.Profile, g.MemoryMiB), m.DCGM
	} else {
		mg.DeviceMiB, dcgm = float64(g.MemoryMiB), g.DCGM
	}
	if dcgm != nil {
		mg.UsedMiB = float64(dcgm.FBUsedMiB) // host processes included
	} else {
		mg.UsedMiB = d.cy.deviceMemory(gi, inst)
	}
	if mg.DeviceMiB > 0 {
		mg.ExhaustionSeconds = max(mg.DeviceMiB-mg.UsedMiB, 0) / tr.slope
	}
	return mg
}

// instOf is the MIG instance (index into the GPU's MIG list) a container
// holds memory on, or -1 for the whole GPU: the instance of its group with
// the most memory this cycle.
func (c *cycle) instOf(gi int, ctr ctrID) int {
	inst, most := -1, -1.0
	for i := range c.groups {
		g := &c.groups[i]
		if g.gpu == gi && g.ctr == ctr && g.inst >= 0 && g.mem > most {
			inst, most = g.inst, g.mem
		}
	}
	return inst
}

// deviceMemory sums what the containers' processes hold on one device
// this cycle (NVML's per-process memory, host processes left out).
func (c *cycle) deviceMemory(gi, inst int) float64 {
	var sum float64
	for i := range c.groups {
		if g := &c.groups[i]; g.gpu == gi && g.inst == inst {
			sum += g.mem
		}
	}
	return sum
}

// migMemoryMiB reads an instance's framebuffer from its profile name
// ("3g.40gb" and "1c.3g.40gb": 40 GiB, the compute instances of a GPU
// instance sharing its memory), capped at the GPU's: NVML names profiles
// by their rounded size, so this may be a few percent above the
// instance's real size on some models (1g.18gb of an H200 holds 17,971
// MiB, not 18,432). 0 when the name does not say.
func migMemoryMiB(profile string, gpuMiB uint64) float64 {
	p, err := gpu.ParseProfile(profile)
	if err != nil {
		return 0
	}
	size := float64(p.MemoryGB) * 1024
	if gpuMiB > 0 {
		size = min(size, float64(gpuMiB))
	}
	return size
}

// maxDurationSeconds keeps a projection printable as a time.Duration.
const maxDurationSeconds = 100 * 365 * 24 * 3600

// detail is the finding's text for people (flags.csv, the report).
func (m MemoryGrowth) detail() string {
	var b strings.Builder
	b.WriteString("rate_mib_per_min=")
	b.WriteString(strconv.FormatFloat(m.RateMiBPerMin, 'f', 1, 64))
	b.WriteString(" exhausted_in=")
	switch {
	case m.ExhaustionSeconds < 0:
		b.WriteString("unknown")
	case m.ExhaustionSeconds > maxDurationSeconds:
		b.WriteString(">100y")
	default:
		b.WriteString(time.Duration(m.ExhaustionSeconds * 1e9).Round(time.Second).String())
	}
	b.WriteString(" used_mib=")
	b.WriteString(strconv.FormatFloat(m.UsedMiB, 'f', 0, 64))
	b.WriteString(" device_mib=")
	b.WriteString(strconv.FormatFloat(m.DeviceMiB, 'f', 0, 64))
	b.WriteString(" at_risk=")
	switch {
	case m.Scope == MemoryScopeGPU:
		b.WriteString("every_tenant_of_the_gpu")
	case m.Severity == SeverityInfo:
		b.WriteString("own_mig_instance_only")
	default:
		b.WriteString("tenants_of_its_mig_instance_only")
	}
	b.WriteString(" device=")
	b.WriteString(m.Device)
	b.WriteString(" severity=")
	b.WriteString(m.Severity)
	return b.String()
}
