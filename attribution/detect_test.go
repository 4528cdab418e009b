package attribution

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// runCycles feeds obs(prev, now) for now = step, 2 step, ... end seconds
// after a baseline at 0, then flushes at end, and returns every finding
// and the Active list after each cycle.
func runCycles(t *testing.T, cfg Config, step, end float64, obs func(prev, now float64) Observation) (found []Finding, active map[float64][]Finding) {
	t.Helper()
	e := NewEngine(cfg)
	e.Observe(obs(0, 0))
	active = map[float64][]Finding{}
	for now := step; now <= end+1e-9; now += step {
		res := e.Observe(obs(now-step, now))
		checkCycle(t, res)
		found = append(found, res.Findings...)
		active[now] = res.Active
	}
	found = append(found, e.Flush(at(end)).Findings...)
	return found, active
}

func TestIdleAllocationEpisode(t *testing.T) {
	g := gpuID(1)
	// Idle for the first 12 minutes, then fully busy until 20 minutes.
	obs := func(prev, now float64) Observation {
		o := newObs(at(prev), at(now))
		pct := 0.0
		if prev >= 12*60 {
			pct = 100
		}
		gp := o.gpu(GPU{UUID: g, SamplePeriod: 10 * time.Second, DeviceSamplesOK: true})
		o.pod("nb", "idle", uidA, time.Time{}, nil, nil, "c").
			alloc("nb", "idle", "c", "nvidia.com/gpu", g).proc(1, g, g, 0, uidA, "c", "x")
		if now > prev {
			gp.DeviceSamples = []UtilSample{{At: at(now), Percent: pct}}
			o.Samples = []ProcessSample{{GPU: g, PID: 1, At: at(now), SMUtil: pct}}
		}
		return o.Observation
	}
	found, active := runCycles(t, Config{IdleWindow: 10 * time.Minute, IdleThreshold: 0.05}, 10, 20*60, obs)
	if len(found) != 1 {
		t.Fatalf("want one idle episode, got %+v", found)
	}
	f := found[0]
	// First flagged window [0, 10m]; last flagged [2m, 12m]; the window
	// [3m, 13m] holds 60 s of use in 600 s allocated (0.1): not idle.
	if f.Kind != FindingIdleAllocation || !f.Start.Equal(at(0)) || !f.End.Equal(at(12*60)) ||
		f.Namespace != "nb" || f.Pod != "idle" || f.Container != "c" || f.GPUUUID != g || f.Team != "nb" || f.Node != "n1" {
		t.Errorf("episode %+v", f)
	}
	if len(active[590]) != 0 || len(active[600]) != 1 || len(active[720]) != 1 || len(active[780]) != 0 {
		t.Errorf("active at 590/600/720/780 s: %d %d %d %d", len(active[590]), len(active[600]), len(active[720]), len(active[780]))
	}
}

// sharedLoad is one cycle of four tenants on one GPU: tenant 0 keeps the
// GPU hostile% busy, the others other% each. With mig the GPU is a MIG
// GPU whose 7g instance the four share by replicas (the same load as DCGM
// sees it).
func sharedLoad(hostile, other float64, mig bool) func(prev, now float64) Observation {
	g := gpuID(1)
	inst := migID(1)
	return func(prev, now float64) Observation {
		o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "4")
		busy := hostile + 3*other
		if mig {
			m := MIGInstance{UUID: inst, Profile: "7g.80gb", Slices: 7, GPUInstanceID: 0, DCGM: &DCGMValues{GrEngineActive: busy / 100}}
			o.gpu(GPU{UUID: g, MIGEnabled: true, MIG: []MIGInstance{m}})
		} else {
			gp := o.gpu(GPU{UUID: g, SamplePeriod: time.Second, DeviceSamplesOK: true})
			if now > prev {
				gp.DeviceSamples = []UtilSample{{At: at(now), Percent: busy}}
			}
		}
		for i, uid := range []string{uidA, uidB, uidC, "dddddddd-0000-4000-8000-00000000000d"} {
			ns, pod := "t"+string(rune('0'+i)), "p"+string(rune('0'+i))
			dev, id := g, g+"::"+string(rune('0'+i))
			if mig {
				dev, id = inst, inst+"::"+string(rune('0'+i))
			}
			pct := other
			if i == 0 {
				pct = hostile
			}
			o.pod(ns, pod, uid, time.Time{}, nil, nil, "c").alloc(ns, pod, "c", "nvidia.com/gpu", id).
				proc(uint32(100+i), g, dev, 0, uid, "c", "x")
			if now > prev && !mig {
				o.Samples = append(o.Samples, ProcessSample{GPU: g, PID: uint32(100 + i), At: at(now), SMUtil: pct})
			}
		}
		return o.Observation
	}
}

func TestNoisyNeighbourTimeslicing(t *testing.T) {
	found, active := runCycles(t, Config{NoisyWindow: time.Minute}, 1, 180, sharedLoad(70, 10, false))
	var noisy []Finding
	starved := map[string]Finding{}
	for _, f := range found {
		switch f.Kind {
		case FindingNoisyNeighbour:
			noisy = append(noisy, f)
		case FindingStarved:
			starved[f.Pod] = f
		default:
			t.Errorf("unexpected %+v", f)
		}
	}
	// Device 100% busy; tenant 0 uses 0.7 >= 2 x 0.25; the others 0.1 <
	// 0.25 with processes running: flagged from the first full window
	// [0, 60 s] to the end.
	if len(noisy) != 1 || noisy[0].Pod != "p0" || !noisy[0].Start.Equal(at(0)) || !noisy[0].End.Equal(at(180)) ||
		noisy[0].Detail != "starved=t1/p1,t2/p2,t3/p3" {
		t.Fatalf("noisy findings %+v", noisy)
	}
	if len(starved) != 3 {
		t.Fatalf("starved findings %+v", starved)
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		f := starved[p]
		if f.NoisyPod != "t0/p0" || f.Detail != "noisy_neighbour=t0/p0" || !f.Start.Equal(at(0)) || !f.End.Equal(at(180)) {
			t.Errorf("starved %s: %+v", p, f)
		}
	}
	if len(active[59]) != 0 || len(active[60]) != 4 {
		t.Errorf("active at 59 s: %+v; at 60 s: %d", active[59], len(active[60]))
	}
}

func TestNoisyNeighbourNeverOnMIG(t *testing.T) {
	found, _ := runCycles(t, Config{NoisyWindow: time.Minute}, 1, 180, sharedLoad(70, 10, true))
	for _, f := range found {
		if f.Kind != FindingIdleAllocation {
			t.Errorf("MIG flagged: %+v", f)
		}
	}
}

func TestNoisyNeighbourNeedsBusyDevice(t *testing.T) {
	// 60 + 3 x 8 = 84% busy: tenant 0 still uses >= 2 x its share and the
	// others less than theirs, but the device is below 90%.
	found, _ := runCycles(t, Config{NoisyWindow: time.Minute}, 1, 180, sharedLoad(60, 8, false))
	if len(found) != 0 {
		t.Errorf("flagged below 90%% busy: %+v", found)
	}
}

// TestDetectorModes feeds the detectors the same numbers under every
// sharing mode: only modes without hardware isolation may be flagged.
func TestDetectorModes(t *testing.T) {
	for mode, want := range map[string]bool{
		string(tenancy.Timeslicing): true, string(tenancy.MPS): true, string(tenancy.HAMi): true,
		string(tenancy.Exclusive): false, string(tenancy.MIG): false, string(tenancy.MIGTimeslicing): false, string(tenancy.MIGMPS): false,
	} {
		var d detectors
		d.init(Config{NoisyWindow: time.Minute, IdleWindow: time.Hour}.withDefaults())
		var found []Finding
		for s := int64(1); s <= 120; s++ {
			gc := GPUCycle{UUID: "g", Capacity: 1, Idle: 0}
			for i, used := range []float64{0.7, 0.1, 0.1, 0.1} {
				gc.Containers = append(gc.Containers, ContainerCycle{SliceID: "s", SharingMode: mode,
					Namespace: "ns", Pod: "p" + string(rune('0'+i)), Container: "c",
					Share: 0.25, Allocated: 0.25, Used: used, Running: true})
			}
			found = d.observe(unixNanos(at(float64(s-1))), unixNanos(at(float64(s))), "n", []GPUCycle{gc}, nil, found)
		}
		found = d.endAll(found)
		if got := len(found) > 0; got != want {
			t.Errorf("mode %s: flagged %v, want %v (%+v)", mode, got, want, found)
		}
		if want && (len(found) != 4 || !strings.HasPrefix(found[0].Kind, "noisy")) {
			t.Errorf("mode %s: findings %+v", mode, found)
		}
	}
}

// Polls that do not fall on the epoch-aligned bucket boundaries (a node
// whose clock started at a fractional second) straddle them: each cycle
// fills the bucket after a boundary before the window ending there is
// evaluated. That must not cost the window its oldest bucket: with the
// polls half a second off, the same load is flagged as when aligned.
func TestDetectorsWithPollsOffTheBuckets(t *testing.T) {
	load := sharedLoad(70, 10, false)
	shifted := func(prev, now float64) Observation { return load(prev+0.5, now+0.5) }
	found, active := runCycles(t, Config{NoisyWindow: time.Minute}, 1, 180, shifted)
	kinds := map[string]int{}
	for _, f := range found {
		kinds[f.Kind]++
		if f.Kind == FindingNoisyNeighbour && (f.Pod != "p0" || f.Detail != "starved=t1/p1,t2/p2,t3/p3") {
			t.Errorf("noisy %+v", f)
		}
	}
	if kinds[FindingNoisyNeighbour] != 1 || kinds[FindingStarved] != 3 {
		t.Fatalf("findings %+v, want p0 noisy and three starved", found)
	}
	// The window [0, 60 s] holds 59.5 s of data (>= 99%): flagged at the
	// cycle ending at 60.5 s, not before.
	if len(active[59]) != 0 || len(active[60]) != 4 {
		t.Errorf("active after the cycle to 59.5 s: %+v; to 60.5 s: %d", active[59], len(active[60]))
	}

	g := gpuID(1)
	idle := func(prev, now float64) Observation {
		prev, now = prev+5, now+5 // polls 5 s off the 60 s buckets
		o := newObs(at(prev), at(now))
		gp := o.gpu(GPU{UUID: g, SamplePeriod: 10 * time.Second, DeviceSamplesOK: true})
		o.pod("nb", "idle", uidA, time.Time{}, nil, nil, "c").
			alloc("nb", "idle", "c", "nvidia.com/gpu", g).proc(1, g, g, 0, uidA, "c", "x")
		if now > prev {
			gp.DeviceSamples = []UtilSample{{At: at(now), Percent: 0}}
		}
		return o.Observation
	}
	found, _ = runCycles(t, Config{IdleWindow: 10 * time.Minute, IdleThreshold: 0.05}, 10, 15*60, idle)
	if len(found) != 1 || found[0].Kind != FindingIdleAllocation || !found[0].Start.Equal(at(0)) || !found[0].End.Equal(at(15*60)) {
		t.Errorf("idle findings %+v, want one episode [0, 15 min]", found)
	}
}
