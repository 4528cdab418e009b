package advise

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// Options are the rules' thresholds; zero values take the defaults.
type Options struct {
	// IdleThreshold: a replica's minute is idle when it used less than
	// this fraction of what it held (the idle detector's default).
	IdleThreshold float64
	// ReclaimFraction: a workload is reclaimed when at least this
	// fraction of its replica-minutes were idle.
	ReclaimFraction float64
	// Headroom is added to the observed p99 demand before sizing.
	Headroom float64
	// Saturated: a workload whose p99 per-replica usage is at least this
	// fraction of its per-replica allocation is left as it is.
	Saturated float64
	// Percentile of the per-minute usage that sizing covers.
	Percentile float64
}

// Defaults of Options.
const (
	DefaultIdleThreshold   = attribution.DefaultIdleThreshold // 0.05
	DefaultReclaimFraction = 0.9
	DefaultHeadroom        = 0.25
	DefaultSaturated       = 0.8
	DefaultPercentile      = 0.99
)

func (o Options) withDefaults() Options {
	if o.IdleThreshold <= 0 {
		o.IdleThreshold = DefaultIdleThreshold
	}
	if o.ReclaimFraction <= 0 {
		o.ReclaimFraction = DefaultReclaimFraction
	}
	if o.Headroom <= 0 {
		o.Headroom = DefaultHeadroom
	}
	if o.Saturated <= 0 {
		o.Saturated = DefaultSaturated
	}
	if o.Percentile <= 0 || o.Percentile > 1 {
		o.Percentile = DefaultPercentile
	}
	return o
}

// slot is the replay granularity: the ledger's default interval.
const slot = time.Minute

// usageBins is the resolution of per-replica usage histograms: 0.1% of a
// GPU.
const usageBins = 1000

// unitKey is one workload on one GPU model: a workload on two models is
// sized on each separately.
type unitKey struct{ namespace, workload, model string }

// unit accumulates one workload's rows.
type unit struct {
	key        unitKey
	team       string
	teams      map[string]bool
	modes      map[string]bool
	pods       map[string]bool // pod names
	replicas   map[repKey]bool
	allocUS    int64 // allocated GPU-micro-seconds, each row fixed once
	usedUS     int64
	joint      []float32             // per slot: GPUs used, replicas summed
	maxRep     []float32             // per slot: the busiest replica's GPUs used
	held       []float32             // per slot: GPUs held
	hist       [usageBins + 1]uint32 // per-replica per-interval usage, GPUs
	repMinutes int64
	repSeconds float64 // replica-seconds held (sum of row lengths)
	idleMin    int64
	shareSum   float64 // sum over replica-intervals of the share held
	memPeakMiB float64 // the largest replica-interval mean framebuffer use
	noisy      bool
	idleFlagS  float64 // seconds of idle_allocation findings
}

type repKey struct{ node, gpu, slice, podUID, container string }

type podModel struct{ namespace, pod, model, team string }

// Advisor collects a period's ledger rows and findings.
type Advisor struct {
	opt      Options
	from, to time.Time
	slots    int
	pods     map[string]*Pod // "namespace/pod"
	units    map[unitKey]*unit
	byPod    map[string][]*unit // "namespace/pod" -> its units, for findings
	// cache resolves a row's pod to its unit without building strings or
	// running the name heuristic per row.
	cache    map[podModel]*unit
	rows     int64
	findings []attribution.Finding
	problems []string
}

// maxSlots bounds a period: a year of minutes.
const maxSlots = 366 * 24 * 60

// MaxPeriod is the longest period New accepts.
const MaxPeriod = maxSlots * slot

// New starts an advisor for [from, to). pods may be nil.
func New(from, to time.Time, pods []Pod, opt Options) (*Advisor, error) {
	if !from.Before(to) {
		return nil, fmt.Errorf("cannot advise: period start %s is not before its end %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	n := int((to.Sub(from) + slot - 1) / slot)
	if n > maxSlots {
		return nil, fmt.Errorf("cannot advise: period of %s is longer than a year", to.Sub(from))
	}
	a := &Advisor{opt: opt.withDefaults(), from: from, to: to, slots: n, pods: map[string]*Pod{},
		units: map[unitKey]*unit{}, byPod: map[string][]*unit{}, cache: map[podModel]*unit{}}
	for i := range pods {
		p := &pods[i]
		a.pods[p.Namespace+"/"+p.Name] = p
	}
	return a, nil
}

// AddRow takes one ledger row (rows of any kind; only container rows
// count).
func (a *Advisor) AddRow(r attribution.Row) error {
	if r.Kind != attribution.KindContainer {
		return nil
	}
	length := r.IntervalEnd.Sub(r.IntervalStart).Seconds()
	if !(length > 0) {
		return fmt.Errorf("ledger row %s/%s at %s: interval end is not after its start", r.Namespace, r.Pod, r.IntervalStart.Format(time.RFC3339))
	}
	for _, x := range []float64{r.AllocatedGPUSeconds, r.UsedGPUSeconds, r.MemoryMiBSeconds} {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1e12 {
			return fmt.Errorf("ledger row %s/%s at %s: value %v out of range", r.Namespace, r.Pod, r.IntervalStart.Format(time.RFC3339), x)
		}
	}
	if r.IntervalStart.Before(a.from) || !r.IntervalStart.Before(a.to) {
		return nil
	}
	if r.GPUModel == "" {
		a.problem(fmt.Sprintf("rows of %s/%s carry no GPU model: left out", r.Namespace, r.Pod))
		return nil
	}
	a.rows++
	u := a.cache[podModel{r.Namespace, r.Pod, r.GPUModel, r.Team}]
	if u == nil {
		u = a.unitOf(r)
	}
	u.modes[r.SharingMode] = true
	u.replicas[repKey{r.Node, r.GPUUUID, r.SliceID, r.PodUID, r.Container}] = true
	u.allocUS += int64(math.Round(r.AllocatedGPUSeconds * 1e6))
	u.usedUS += int64(math.Round(r.UsedGPUSeconds * 1e6))
	// The row's fractions of a GPU over its interval, spread over the
	// minutes it covers: the ledger's interval is a minute by default but
	// may be longer (hourly rows) or shorter (sub-minute rows add up).
	used, share := r.UsedGPUSeconds/length, r.AllocatedGPUSeconds/length
	start, end := r.IntervalStart.Sub(a.from), min(r.IntervalEnd.Sub(a.from), a.to.Sub(a.from))
	for s := int(start / slot); s < a.slots && time.Duration(s)*slot < end; s++ {
		lo, hi := max(start, time.Duration(s)*slot), min(end, time.Duration(s+1)*slot)
		f := float32((hi - lo).Seconds() / slot.Seconds())
		u.joint[s] += float32(used) * f
		u.held[s] += float32(share) * f
		u.maxRep[s] = max(u.maxRep[s], float32(used))
	}
	// Per-replica figures count minutes (at least one per row).
	k := max(1, int64(math.Round(length/slot.Seconds())))
	u.hist[min(int(used*usageBins+0.5), usageBins)] += uint32(k)
	u.repMinutes += k
	u.repSeconds += length
	u.shareSum += share * float64(k)
	if r.UsedGPUSeconds < a.opt.IdleThreshold*r.AllocatedGPUSeconds {
		u.idleMin += k
	}
	u.memPeakMiB = max(u.memPeakMiB, r.MemoryMiBSeconds/length)
	return nil
}

// unitOf finds or makes the unit of a row's pod, the first time the pod
// (on that model, charged to that team) is seen.
func (a *Advisor) unitOf(r attribution.Row) *unit {
	podKey := r.Namespace + "/" + r.Pod
	k := unitKey{r.Namespace, WorkloadName(r.Pod, a.pods[podKey]), r.GPUModel}
	u := a.units[k]
	if u == nil {
		u = &unit{key: k, team: r.Team, teams: map[string]bool{}, modes: map[string]bool{}, pods: map[string]bool{},
			replicas: map[repKey]bool{}, joint: make([]float32, a.slots), maxRep: make([]float32, a.slots), held: make([]float32, a.slots)}
		a.units[k] = u
	}
	if !u.pods[r.Pod] {
		u.pods[r.Pod] = true
		a.byPod[podKey] = append(a.byPod[podKey], u)
	}
	u.teams[r.Team] = true
	a.cache[podModel{r.Namespace, r.Pod, r.GPUModel, r.Team}] = u
	return u
}

// AddFinding takes one detector finding of the period (before, after or
// between the rows: findings are applied when the plan is made).
func (a *Advisor) AddFinding(f attribution.Finding) error {
	if len(a.findings) >= maxFindings {
		a.problem(fmt.Sprintf("more than %d findings in the period: the rest are not used as evidence", maxFindings))
		return nil
	}
	a.findings = append(a.findings, f)
	return nil
}

// maxFindings bounds what the advisor keeps.
const maxFindings = 1_000_000

// applyFindings marks noisy workloads and adds up idle-flagged time.
func (a *Advisor) applyFindings() {
	for _, u := range a.units {
		u.noisy, u.idleFlagS = false, 0
	}
	for _, f := range a.findings {
		a.applyFinding(f)
	}
}

func (a *Advisor) applyFinding(f attribution.Finding) {
	units := a.byPod[f.Namespace+"/"+f.Pod]
	switch f.Kind {
	case attribution.FindingNoisyNeighbour:
		for _, u := range units {
			u.noisy = true
		}
	case attribution.FindingIdleAllocation:
		start, end := maxTime(f.Start, a.from), minTime(f.End, a.to)
		if end.After(start) {
			for _, u := range units {
				u.idleFlagS += end.Sub(start).Seconds()
			}
		}
	}
}

func (a *Advisor) problem(s string) {
	for _, p := range a.problems {
		if p == s {
			return
		}
	}
	if len(a.problems) < 100 {
		a.problems = append(a.problems, s)
	}
}

func maxTime(x, y time.Time) time.Time {
	if x.After(y) {
		return x
	}
	return y
}

func minTime(x, y time.Time) time.Time {
	if x.Before(y) {
		return x
	}
	return y
}

// errEmpty is returned by Plan when the period has no container rows.
var errEmpty = errors.New("no GPU allocations in this period")
