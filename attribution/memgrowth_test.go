package attribution

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// memTenant is a pod whose memory is a function of the cycle's end
// (seconds since t0).
type memTenant struct {
	pod string
	mem func(t float64) uint64
}

// leak grows 10 MiB every 6 s: 100 MiB/min.
func leak(base uint64) func(float64) uint64 {
	return func(t float64) uint64 { return base + 10*uint64(math.Floor(t/6)) }
}

// memObs is one time-sliced A100 (four replicas) and one MIG A100 with a
// 1g.10gb instance.
func memObs(prev, now float64, shared []memTenant, migTenant *memTenant) Observation {
	o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "4")
	g, mg := gpuID(1), gpuID(2)
	o.wholeGPU(g, rep(10, int(now-prev))...)
	// DCGM reports the instance's framebuffer (the whole GPU has none).
	var fb uint64
	if migTenant != nil {
		fb = migTenant.mem(now)
	}
	o.gpu(GPU{UUID: mg, MIGEnabled: true, MIG: []MIGInstance{{UUID: migID(1), Profile: "1g.10gb", Slices: 1, GPUInstanceID: 1,
		DCGM: &DCGMValues{GrEngineActive: 0.1, FBUsedMiB: fb}}}})
	for i, tn := range shared {
		uid := "00000000-0000-4000-8000-00000000000" + string(rune('1'+i))
		o.pod("ns", tn.pod, uid, at(-60), nil, nil, "main").alloc("ns", tn.pod, "main", "nvidia.com/gpu", g+"::"+string(rune('0'+i)))
		o.proc(uint32(100+i), g, g, tn.mem(now), uid, "main", "python")
	}
	if migTenant != nil {
		uid := "00000000-0000-4000-8000-000000000009"
		o.pod("ns", migTenant.pod, uid, at(-60), nil, nil, "main").alloc("ns", migTenant.pod, "main", "nvidia.com/mig-1g.10gb", migID(1))
		o.proc(200, mg, migID(1), migTenant.mem(now), uid, "main", "python")
	}
	return o.Observation
}

// runMemory runs cycles of 1 s up to end seconds and returns the findings
// active after the last cycle and every finding after Flush.
func runMemory(t *testing.T, cfg Config, end int, shared []memTenant, migTenant *memTenant) (active, all []Finding) {
	t.Helper()
	e := NewEngine(cfg)
	base := memObs(0, 0, shared, migTenant)
	e.Observe(base)
	for s := 1; s <= end; s++ {
		res := e.Observe(memObs(float64(s-1), float64(s), shared, migTenant))
		all = append(all, res.Findings...)
		active = res.Active
	}
	all = append(all, e.Flush(at(float64(end))).Findings...)
	return active, all
}

func memFindings(fs []Finding) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range fs {
		if f.Kind == FindingMemoryGrowth {
			out[f.Pod] = f
		}
	}
	return out
}

// TestMemoryGrowthFlagsOnlyTheLeaks: a leak beside a flat large
// allocation, a training loop's sawtooth and a one-off late allocation on
// a time-sliced GPU, and a leak alone on a MIG instance. Only the leaks
// are flagged; the figures are worked out by hand below.
func TestMemoryGrowthFlagsOnlyTheLeaks(t *testing.T) {
	cfg := Config{MemoryGrowth: MemoryGrowthConfig{Window: 5 * time.Minute}}
	shared := []memTenant{
		{"leaker", leak(4000)},
		{"flat", func(float64) uint64 { return 20000 }},
		// Frees what it took every 40 s: 20000 .. 23000.
		{"sawtooth", func(t float64) uint64 { return 20000 + uint64(3000*math.Mod(t, 40)/40) }},
		{"late-alloc", func(t float64) uint64 {
			if t < 200 {
				return 1000
			}
			return 9000
		}},
	}
	migLeak := memTenant{"mig-leaker", leak(1000)}
	const end = 480
	active, all := runMemory(t, cfg, end, shared, &migLeak)

	got := memFindings(active)
	if len(got) != 2 {
		t.Fatalf("active memory findings %v, want leaker and mig-leaker", got)
	}
	for _, pod := range []string{"flat", "sawtooth", "late-alloc"} {
		if f, ok := memFindings(all)[pod]; ok {
			t.Errorf("%s flagged: %+v", pod, f)
		}
	}
	// Both leak 100 MiB/min. Buckets are 30 s; each bucket's lowest
	// sample is its first, taken 1 s after the bucket starts, and
	// floor((30k+1)/6) = 5k: exactly 50 MiB per bucket.
	lk, ml := got["leaker"].Memory, got["mig-leaker"].Memory
	if lk == nil || ml == nil {
		t.Fatalf("findings without their figures: %+v", got)
	}
	if math.Abs(lk.RateMiBPerMin-100) > 1e-9 {
		t.Errorf("leaker rate %v MiB/min, want 100", lk.RateMiBPerMin)
	}
	// At 480 s: leaker 4000+800, flat 20000, sawtooth 20000 (480 mod 40
	// = 0), late-alloc 9000: 53800 used of 81920, 28120 MiB free at
	// 100 MiB/min: 281.2 min.
	if lk.Scope != MemoryScopeGPU || lk.Severity != SeverityWarning || lk.Device != gpuID(1) ||
		lk.DeviceMiB != 81920 || lk.UsedMiB != 53800 || math.Abs(lk.ExhaustionSeconds-281.2*60) > 1e-6 {
		t.Errorf("leaker figures %+v", lk)
	}
	if d := got["leaker"].Detail; !strings.Contains(d, "rate_mib_per_min=100.0") || !strings.Contains(d, "exhausted_in=4h41m12s") ||
		!strings.Contains(d, "at_risk=every_tenant_of_the_gpu") || !strings.Contains(d, "severity=warning") {
		t.Errorf("leaker detail %q", d)
	}
	// The MIG leak: 1000+800 of the instance's 10240 MiB (DCGM's
	// framebuffer figure): 8440 free, 84.4 min.
	if ml.Scope != MemoryScopeMIGInstance || ml.Severity != SeverityInfo || ml.Device != migID(1) ||
		ml.DeviceMiB != 10240 || ml.UsedMiB != 1800 || math.Abs(ml.ExhaustionSeconds-84.4*60) > 1e-6 {
		t.Errorf("MIG leaker figures %+v", ml)
	}
	if d := got["mig-leaker"].Detail; !strings.Contains(d, "at_risk=own_mig_instance_only") || !strings.Contains(d, "severity=info") {
		t.Errorf("MIG leaker detail %q", d)
	}
	// The episode starts with its first full window, the one ending at
	// 300 s: its ten buckets all hold samples (the first cycle ends at
	// 1 s, inside bucket (0,30]).
	ended := memFindings(all)["leaker"]
	if !ended.Start.Equal(at(0)) || !ended.End.Equal(at(end)) {
		t.Errorf("leaker episode [%v, %v], want [%v, %v]", ended.Start, ended.End, at(0), at(end))
	}
}

// TestMemoryGrowthModes: only modes where a neighbour shares the leaker's
// memory unfenced are at risk (warning), MIG alone at its own instance's
// risk (info); scopes and severities as docs/ARCHITECTURE.md lists them.
func TestMemoryGrowthModes(t *testing.T) {
	type risk struct {
		scope, severity string
		ok              bool
	}
	for mode, want := range map[tenancy.Mode]risk{
		tenancy.Timeslicing:    {MemoryScopeGPU, SeverityWarning, true},
		tenancy.MPS:            {MemoryScopeGPU, SeverityWarning, true},
		tenancy.MIG:            {MemoryScopeMIGInstance, SeverityInfo, true},
		tenancy.MIGTimeslicing: {MemoryScopeMIGInstance, SeverityWarning, true},
		tenancy.MIGMPS:         {MemoryScopeMIGInstance, SeverityWarning, true},
		tenancy.Exclusive:      {}, tenancy.HAMi: {}, tenancy.DRA: {}, "no-such-mode": {},
	} {
		var got risk
		got.scope, got.severity, got.ok = memoryRisk(mode)
		if got != want {
			t.Errorf("mode %s: risk %+v, want %+v", mode, got, want)
		}
	}
}

func TestMIGMemoryFromProfile(t *testing.T) {
	for _, c := range []struct {
		profile string
		gpu     uint64
		want    float64
	}{
		{"1g.10gb", 81920, 10240}, {"3g.40gb", 81920, 40960}, {"1g.10gb+me", 81920, 10240},
		{"7g.141gb", 143771, 143771}, {"1c.3g.40gb", 81920, 40960}, {"x", 81920, 0}, {"1g.gb", 81920, 0}, {"1g.0gb", 81920, 0},
	} {
		if got := migMemoryMiB(c.profile, c.gpu); got != c.want {
			t.Errorf("migMemoryMiB(%q, %d) = %v, want %v", c.profile, c.gpu, got, c.want)
		}
	}
}

// TestMemoryGrowthNotBeforeThePodStarted: a leaker whose pod starts 3
// minutes into the run on a time-sliced GPU, with the default 30-minute
// window (3-minute buckets aligned to t0). Its first whole window is
// (3:00, 33:00]: the episode must start at 3:00, never at 0:00, where the
// sample taken at the pod's first instant (the cycle ending at 3:00, of
// which it held nothing) used to file the bucket (0:00, 3:00] as held.
func TestMemoryGrowthNotBeforeThePodStarted(t *testing.T) {
	const podStart, end = 180, 2340
	g := gpuID(1)
	uid := "00000000-0000-4000-8000-000000000001"
	obs := func(prev, now float64) Observation {
		o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "4")
		o.wholeGPU(g, rep(10, int(now-prev))...)
		if now >= podStart {
			o.pod("ns", "late-leaker", uid, at(podStart), nil, nil, "main").alloc("ns", "late-leaker", "main", "nvidia.com/gpu", g+"::0")
			o.proc(100, g, g, leak(4000)(now-podStart), uid, "main", "python")
		}
		return o.Observation
	}
	e := NewEngine(Config{})
	e.Observe(obs(0, 0))
	var all []Finding
	firstFlag := -1
	for s := 1; s <= end; s++ {
		res := e.Observe(obs(float64(s-1), float64(s)))
		all = append(all, res.Findings...)
		if firstFlag < 0 && len(memFindings(res.Active)) > 0 {
			firstFlag = s
		}
	}
	all = append(all, e.Flush(at(end)).Findings...)
	f, ok := memFindings(all)["late-leaker"]
	if !ok {
		t.Fatalf("the leak was not flagged: %+v", all)
	}
	if f.Start.Before(at(podStart)) {
		t.Errorf("episode starts at %v, before its pod started at %v", f.Start, at(podStart))
	}
	if !f.Start.Equal(at(podStart)) || !f.End.Equal(at(end)) {
		t.Errorf("episode [%v, %v], want [%v, %v]", f.Start, f.End, at(podStart), at(end))
	}
	// Flagged at the end of its first whole window, 30 minutes after the
	// pod started, not 27.
	if want := podStart + 1800; firstFlag != want {
		t.Errorf("first flagged at %d s, want %d s", firstFlag, want)
	}
}

// TestMemoryGrowthNeedsWholeBuckets: a pod starting half a bucket in
// (1:30) holds the device for half of (0:00, 3:00] only, so its first
// window is (3:00, 33:00], not (0:00, 30:00].
func TestMemoryGrowthNeedsWholeBuckets(t *testing.T) {
	const podStart, end = 90, 2100
	g := gpuID(1)
	uid := "00000000-0000-4000-8000-000000000001"
	obs := func(prev, now float64) Observation {
		o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "4")
		o.wholeGPU(g, rep(10, int(now-prev))...)
		if now >= podStart {
			o.pod("ns", "late-leaker", uid, at(podStart), nil, nil, "main").alloc("ns", "late-leaker", "main", "nvidia.com/gpu", g+"::0")
			o.proc(100, g, g, leak(4000)(now-podStart), uid, "main", "python")
		}
		return o.Observation
	}
	e := NewEngine(Config{})
	e.Observe(obs(0, 0))
	var all []Finding
	for s := 1; s <= end; s++ {
		all = append(all, e.Observe(obs(float64(s-1), float64(s))).Findings...)
	}
	all = append(all, e.Flush(at(end)).Findings...)
	f, ok := memFindings(all)["late-leaker"]
	if !ok {
		t.Fatalf("the leak was not flagged: %+v", all)
	}
	if !f.Start.Equal(at(180)) {
		t.Errorf("episode starts at %v, want %v (the first bucket it held whole)", f.Start, at(180))
	}
}
