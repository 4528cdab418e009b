package attribution

import (
	"strconv"
	"strings"
	"time"
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

// MemoryGrowth is what a memory_growth finding says (zero on other kinds).
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
// hurt. Exclusive GPUs have no neighbour to starve. HAMi is left out on
// purpose: HAMi's in-container library enforces the memory limit of each
// vGPU, so a leak there ends in the leaker's own out-of-memory error, not
// a neighbour's. DRA says nothing about how a device is shared.
func memoryRisk(mode string) (scope, severity string, ok bool) {
	switch mode {
	case ModeTimeslicing, ModeMPS:
		return MemoryScopeGPU, SeverityWarning, true
	case ModeMIGTimeslicing, ModeMIGMPS:
		// Other replicas share the instance's memory with it.
		return MemoryScopeMIGInstance, SeverityWarning, true
	case ModeMIG:
		return MemoryScopeMIGInstance, SeverityInfo, true
	}
	return "", "", false
}

// memEnt is what the memory detector keeps about one container on one GPU.
type memEnt struct {
	cur    float64 // MiB its rows hold this cycle
	device string  // the device its rows are on (GPU or MIG UUID)
	env    []memBucket
}

// memBucket is the lowest and highest memory sampled in bucket k.
type memBucket struct {
	k        int64
	min, max float64
}

// reset starts a cycle's sum.
func (m *memEnt) reset() { m.cur, m.device = 0, "" }

// add sums one of the container's rows.
func (m *memEnt) add(cc *ContainerCycle) {
	m.cur += cc.MemoryMiB
	if cc.Device != "" {
		m.device = cc.Device
	}
}

// sample records the memory read at the end of the cycle ending at now
// in the bucket that instant belongs to ((k b, (k+1) b]).
func (m *memEnt) sample(now int64, r ringSpec) {
	if len(m.env) != r.n {
		m.env = make([]memBucket, r.n)
		for i := range m.env {
			m.env[i].k = noBucket
		}
	}
	k := floorDiv(now-1, r.b)
	b := &m.env[mod(k, r.n)]
	if b.k != k {
		*b = memBucket{k: k, min: m.cur, max: m.cur}
		return
	}
	b.min, b.max = min(b.min, m.cur), max(b.max, m.cur)
}

// envelope fills env with the lowest memory of the n buckets before the
// one ending at end, oldest first, and spread with their highest minus
// lowest; false when one of them holds nothing (the container did not
// hold the device for the whole window).
func (m *memEnt) envelope(end int64, r ringSpec, env, spread []float64) ([]float64, []float64, bool) {
	env, spread = env[:0], spread[:0]
	if len(m.env) != r.n {
		return env, spread, false
	}
	kEnd := floorDiv(end, r.b)
	for j := int64(r.n); j >= 1; j-- {
		b := &m.env[mod(kEnd-j, r.n)]
		if b.k != kEnd-j {
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
		ep.f.Memory = d.memoryFigures(e, tr, scope, severity)
		ep.f.Detail = ep.f.Memory.detail()
	}
	return d.endUnflagged(out, FindingMemoryGrowth, end)
}

// memoryFigures projects when the container's device is full: its free
// memory now over the container's growth rate.
func (d *detectors) memoryFigures(e *detEnt, tr memTrend, scope, severity string) MemoryGrowth {
	dev := e.mem.device
	if dev == "" {
		dev = e.key.gpu
	}
	mg := MemoryGrowth{Scope: scope, Severity: severity, Device: dev, RateMiBPerMin: tr.slope * 60, ExhaustionSeconds: -1}
	size, dcgmUsed, haveDCGM := d.deviceMemory(e.key.gpu, dev)
	mg.DeviceMiB = size
	if haveDCGM {
		mg.UsedMiB = dcgmUsed // includes host processes
	} else {
		mg.UsedMiB = d.rowsMemory(e.key.gpu, dev)
	}
	if size > 0 {
		mg.ExhaustionSeconds = max(size-mg.UsedMiB, 0) / tr.slope
	}
	return mg
}

// deviceMemory finds a device's framebuffer size and, with DCGM, what is
// used on it, in the cycle's observation.
func (d *detectors) deviceMemory(gpu, dev string) (size, used float64, haveDCGM bool) {
	for gi := range d.obsGPUs {
		g := &d.obsGPUs[gi]
		if g.UUID != gpu {
			continue
		}
		if dev == gpu {
			if g.DCGM != nil {
				return float64(g.MemoryMiB), float64(g.DCGM.FBUsedMiB), true
			}
			return float64(g.MemoryMiB), 0, false
		}
		for _, m := range g.MIG {
			if m.UUID != dev {
				continue
			}
			size := migMemoryMiB(m.Profile, g.MemoryMiB)
			if m.DCGM != nil {
				return size, float64(m.DCGM.FBUsedMiB), true
			}
			return size, 0, false
		}
	}
	return 0, 0, false
}

// rowsMemory sums the memory of every container row on the device this
// cycle (what NVML lists per process, without host processes).
func (d *detectors) rowsMemory(gpu, dev string) float64 {
	var sum float64
	for gi := range d.cycleGPUs {
		g := &d.cycleGPUs[gi]
		if g.UUID != gpu {
			continue
		}
		for ci := range g.Containers {
			if cc := &g.Containers[ci]; cc.Device == dev || (cc.Device == "" && dev == gpu) {
				sum += cc.MemoryMiB
			}
		}
	}
	return sum
}

// migMemoryMiB reads an instance's framebuffer from its profile name
// ("3g.40gb": 40 GiB), capped at the GPU's: NVML names profiles by their
// rounded size, so this may be a few percent above the instance's real
// size on some models (1g.18gb of an H200 holds 17,971 MiB, not 18,432).
// 0 when the name does not say.
func migMemoryMiB(profile string, gpuMiB uint64) float64 {
	_, rest, ok := strings.Cut(profile, ".")
	if !ok {
		return 0
	}
	rest, _, _ = strings.Cut(rest, "+")
	gb, ok := strings.CutSuffix(rest, "gb")
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(gb, 10, 32)
	if err != nil || n == 0 {
		return 0
	}
	size := float64(n) * 1024
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

// deviceUUID names the device of a row: its MIG instance's UUID, or the
// GPU's.
func (c *cycle) deviceUUID(gpu, inst int) string {
	g := &c.gpus[gpu]
	if inst >= 0 && inst < len(g.MIG) {
		return g.MIG[inst].UUID
	}
	return g.UUID
}
