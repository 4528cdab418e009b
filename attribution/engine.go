package attribution

import (
	"math"
	"time"
)

// Engine attributes one node's GPU time cycle by cycle. It keeps what must
// outlive a cycle: energy baselines, the replica and HAMi IDs seen so far,
// the previous cycle's PID owners, the open ledger intervals and the
// detector state. It is not safe for concurrent use.
type Engine struct {
	cfg Config

	started  bool
	lastTime int64 // Unix ns of the previous cycle's Time

	seenReplicas map[string]map[int]struct{} // device UUID -> ::<n> seen
	seenHAMi     map[string]map[int]struct{} // GPU UUID -> HAMi -<n> seen
	// allocatable is the AllocatableIDs slice last recorded as seen
	// (identity only: first element and length), so an unchanged list
	// costs nothing per cycle.
	allocatableAt  *string
	allocatableLen int
	hamiCache      map[string]hamiParse // annotation value -> parse
	pins           map[pinKey]pinVal    // annotation values in force (pins.go)
	firstSeen      map[string]string    // pod UID -> HAMi annotation when the pod was first listed (pins.go)

	energy   map[string]energyBase // GPU UUID -> counters at lastTime
	lastGPUs []GPU                 // last GPUs NVML listed, for degraded cycles

	// owners are this cycle's process owners, prevOwners last cycle's
	// (indexed lazily in prevIdx).
	owners, prevOwners []ownerRec
	prevIdx            map[ownerKey]int32
	prevBuilt          bool
	ownerCtrs          []ownerCtr // containers owners refer to
	prevOwnerCtrs      []ownerCtr

	// lastPods indexes lastPodBuf, last cycle's pods, by UID (departed.go).
	lastPods   map[string]int32
	lastPodBuf []PodMeta

	// carries are the sample seconds each whole GPU's samples reported
	// beyond the last cycle's window (usage.go).
	carries []gpuCarry

	cy     cycle
	ledger ledger
	det    detectors
}

// NewEngine returns an engine with cfg's zero fields set to the defaults.
func NewEngine(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg:          cfg,
		lastPods:     map[string]int32{},
		seenReplicas: map[string]map[int]struct{}{},
		seenHAMi:     map[string]map[int]struct{}{},
		hamiCache:    map[string]hamiParse{},
		energy:       map[string]energyBase{},
		prevIdx:      map[ownerKey]int32{},
	}
	e.cy.init()
	e.ledger.init(cfg.LedgerInterval)
	e.det.init(cfg)
	return e
}

// Observe attributes the window (obs.Prev, obs.Time]. An observation with
// an empty window (Prev equal to Time, or zero Prev), as the collector's
// first one is, only sets baselines (energy counters, PID owners) and
// returns GPUs with zero capacity. A window that does not start where the
// previous one ended first closes the open ledger rows, so no row claims
// the gap. Observe keeps no reference to obs's slices or maps, except the
// identity of obs.AllocatableIDs (to skip it while it is unchanged).
func (e *Engine) Observe(obs Observation) CycleResult {
	prev, now := unixNanos(obs.Prev), unixNanos(obs.Time)
	res := CycleResult{Start: obs.Prev.UTC(), End: obs.Time.UTC()}
	if obs.Prev.IsZero() {
		prev = now
	}
	if now < prev {
		res.Anomalies = append(res.Anomalies, Anomaly{Kind: AnomalyBadWindow,
			Key: "time_backwards", Detail: "cycle Time " + obs.Time.UTC().Format(time.RFC3339Nano) +
				" is before Prev " + obs.Prev.UTC().Format(time.RFC3339Nano) + "; window treated as empty"})
		prev = now
	}
	if e.started && prev != e.lastTime {
		// A gap (missed cycles, clock jump): nothing may pretend to cover
		// it, so open ledger rows end where the data ended.
		res.Rows = e.ledger.closeAll(res.Rows)
	}
	contiguous := e.started && prev == e.lastTime
	if !contiguous {
		e.dropCarries()
	}

	listed := len(obs.Metadata.Pods)
	obs = e.withDeparted(obs)
	departed := make(map[string]bool, len(obs.Metadata.Pods)-listed)
	for _, pm := range obs.Metadata.Pods[listed:] {
		departed[pm.UID] = true
	}

	cy := &e.cy
	cy.reset(e, &obs, prev, now)
	e.noteFirstSeen()
	e.buildSlices()
	e.recordAllocatable()
	e.computeShares()
	e.resolveProcesses()
	e.attributeUsage()
	e.floorHAMiUse()
	e.distribute()
	e.splitEnergy(contiguous)
	res.GPUs = e.assemble()
	res.Anomalies = append(res.Anomalies, cy.anomalies...)
	res.NewPins = cy.newPins
	e.prunePins()

	if now > prev {
		res.Rows = e.ledger.add(prev, now, e.node(&obs), res.GPUs, cy.gpuModes(), res.Rows)
		res.Rows = e.ledger.closeBefore(now, res.Rows)
		res.Findings = e.det.observe(prev, now, e.node(&obs), res.GPUs, &e.cy, res.Findings)
	}
	res.Active = e.det.active()

	e.started = true
	e.lastTime = now
	e.rememberGPUs()
	e.rememberPods(&obs, departed)
	e.owners, e.prevOwners = e.prevOwners[:0], e.owners
	e.prevBuilt = false
	e.ownerCtrs, e.prevOwnerCtrs = e.prevOwnerCtrs[:0], e.ownerCtrs
	cy.release()
	return res
}

// Flush closes the open ledger intervals (their rows end at the last
// cycle's Time, never at end: no time is invented) and ends every open
// detector episode. The result spans from the last cycle to end.
func (e *Engine) Flush(end time.Time) CycleResult {
	res := CycleResult{Start: time.Unix(0, e.lastTime).UTC(), End: end.UTC()}
	if !e.started {
		res.Start = res.End
	}
	res.Rows = e.ledger.closeAll(nil)
	res.Findings = e.det.endAll(nil)
	return res
}

func (e *Engine) node(obs *Observation) string {
	if e.cfg.Node != "" {
		return e.cfg.Node
	}
	return obs.Node
}

// rememberGPUs keeps the static part of the GPUs NVML listed, so a cycle
// where NVML fails still closes the partitions of GPUs that did not go
// away (their whole window becomes unattributed).
func (e *Engine) rememberGPUs() {
	if e.cy.obs.Degraded["nvml"] && len(e.cy.obs.GPUs) == 0 {
		return
	}
	e.lastGPUs = e.lastGPUs[:0]
	for _, g := range e.cy.obs.GPUs {
		e.lastGPUs = append(e.lastGPUs, staticGPU(g))
	}
}

func staticGPU(g GPU) GPU {
	s := GPU{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB,
		MIGEnabled: g.MIGEnabled, SamplePeriod: g.SamplePeriod}
	if len(g.MIG) > 0 {
		s.MIG = make([]MIGInstance, len(g.MIG))
		for i, m := range g.MIG {
			m.DCGM = nil
			s.MIG[i] = m
		}
	}
	return s
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// clamp01 keeps a ratio from a source inside [0, 1]; NaN counts as 0.
func clamp01(x float64) float64 {
	switch {
	case !(x > 0):
		return 0
	case x > 1:
		return 1
	}
	return x
}

// finite turns NaN and infinities from a source into 0.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
