package advise

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/advisor/whatif"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/gpu"
)

// Kind is what a recommendation proposes.
type Kind string

// Recommendation kinds.
const (
	Reclaim     Kind = "reclaim"
	RightSize   Kind = "right-size"
	Consolidate Kind = "consolidate"
	Keep        Kind = "keep"
)

// Contention is the replay of the observed per-minute usage on the
// proposed layout: minutes where demand exceeded the capacity it would
// get, and by how much (GPUs).
type Contention struct {
	Minutes, Of           int
	MaxExcess, MeanExcess float64
}

// Latency is what whatif predicts on the proposed layout for a workload
// that declares its service time.
type Latency struct {
	Mode           whatif.Mode
	ServiceTime    time.Duration
	RatePerReplica float64 // requests per second, estimated from activity
	Tenants        int     // simulated on the busiest GPU of the layout
	P50, P99       float64 // seconds, means over the runs; NaN when none served
	ServedFraction float64
	// Simulated is the simulated time of each run: latencyDuration, or
	// less where the requests it would take exceed the cap (Capped).
	Simulated time.Duration
	Capped    bool
	// Requests is the requests simulated, every run together.
	Requests int64
}

// The latency simulation: latencyRuns runs of latencyDuration, each
// expected to simulate at most maxLatencyRequests requests. Rates come
// from a tenant-written annotation (a 1µs service time makes a busy
// replica send half a million requests a second), so the cap is what
// bounds advise's cost: 2 million requests per recommendation, about
// 0.2 s of one core, whatever the annotation says.
const (
	latencyRuns        = 10
	latencyDuration    = 10 * time.Minute
	maxLatencyRequests = 200_000
)

// Recommendation is one proposal for one workload or one team's group.
type Recommendation struct {
	Kind      Kind
	Team      string
	Namespace string
	Workloads []string // namespace/name, sorted
	Model     string
	Modes     []string // sharing modes observed
	Replicas  int      // concurrent replicas, on average
	// Before and After describe the layouts; BeforeGPUs is the mean GPUs
	// held while the workloads ran, AfterGPUs what the proposal holds.
	Before, After         string
	BeforeGPUs, AfterGPUs float64
	// HeldHours is the GPU-hours the workloads were allocated in the
	// period (as charged); AfterHours what the proposal would have held
	// over the same minutes; SavedHours the difference.
	HeldHours, AfterHours, SavedHours *big.Rat
	Rate                              pricebook.Rate
	Saving                            *big.Rat // exact
	SavingMinor                       int64    // rounded once, half away from zero
	Contention                        Contention
	Latency                           *Latency
	LatencyNote                       string
	Evidence                          []string
	// Incomplete says why the figures are not the whole answer (an
	// unpriced model, an unknown profile table, a malformed annotation).
	Incomplete []string
}

// MIGPacking is how the MIG instances proposed for one model (across
// teams: hardware walls make that safe) pack onto GPUs.
type MIGPacking struct {
	Model             string
	Instances, Slices int
	GPUs              int
}

// Plan is the period's recommendations.
type Plan struct {
	From, To        time.Time
	Currency        pricebook.Currency
	Recommendations []Recommendation // largest saving first
	// SavingMinor is the sum of the recommendations' rounded savings.
	SavingMinor int64
	// HeldHours and ChargedMinor are every workload's allocated GPU-hours
	// and their cost at the book's rates (rounded once): under the
	// allocation policy, what the report's charge lines add up to.
	HeldHours    *big.Rat
	ChargedMinor int64
	MIG          []MIGPacking
	Rows         int64
	Problems     []string
}

// minor is x in the currency's minor units, rounded half away from zero
// (big.Rat.FloatString's rounding, as the report's).
func minor(x *big.Rat, unit int) (int64, error) {
	scaled := new(big.Rat).Mul(x, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(unit)), nil)))
	v, err := strconv.ParseInt(scaled.FloatString(0), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %s too large", x.FloatString(unit))
	}
	return v, nil
}

// stats are one unit's derived figures.
type stats struct {
	u          *unit
	active     int     // slots with an allocation
	beforeGPUs float64 // mean GPUs held over active slots
	share      float64 // mean share per replica
	replicas   int
	p99        float64 // per-replica usage, GPUs
	meanUse    float64 // per-replica mean usage, GPUs
	idleFrac   float64
	heldHours  *big.Rat
	team       string
}

func (a *Advisor) stats(u *unit) stats {
	s := stats{u: u, team: u.team}
	var held float64
	for _, h := range u.held {
		if h > 0 {
			s.active++
			held += float64(h)
		}
	}
	if s.active > 0 {
		s.beforeGPUs = held / float64(s.active)
	}
	if u.repMinutes > 0 {
		s.share = u.shareSum / float64(u.repMinutes)
		s.idleFrac = float64(u.idleMin) / float64(u.repMinutes)
	}
	if s.share > 0 {
		s.replicas = max(1, int(math.Round(s.beforeGPUs/s.share)))
	}
	if u.repSeconds > 0 {
		s.meanUse = float64(u.usedUS) / 1e6 / u.repSeconds
	}
	s.p99 = histQuantile(&u.hist, u.repMinutes, a.opt.Percentile)
	s.heldHours = big.NewRat(u.allocUS, 3600*1_000_000)
	return s
}

// histQuantile is the q-quantile of a usage histogram, the upper edge of
// its bin (sizing errs towards more capacity).
func histQuantile(h *[usageBins + 1]uint32, n int64, q float64) float64 {
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q*float64(n))) - 1
	var seen int64
	for i, c := range h {
		seen += int64(c)
		if seen > rank {
			return min(1, (float64(i)+0.5)/usageBins)
		}
	}
	return 1
}

// Plan applies the rules (docs/advisor.md) to what was collected; it is
// PlanContext without a way to stop it.
func (a *Advisor) Plan(book *pricebook.Book) (*Plan, error) {
	return a.PlanContext(context.Background(), book)
}

// PlanContext applies the rules (docs/advisor.md) to what was collected.
// When ctx ends it stops within the latency simulation's next chunk of
// requests and returns ctx's error.
func (a *Advisor) PlanContext(ctx context.Context, book *pricebook.Book) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if book == nil {
		return nil, fmt.Errorf("cannot advise: no price book")
	}
	if len(a.units) == 0 {
		return nil, fmt.Errorf("cannot advise on %s to %s: %w", a.from.Format(time.RFC3339), a.to.Format(time.RFC3339), errEmpty)
	}
	a.applyFindings()
	p := &Plan{From: a.from, To: a.to, Currency: book.Currency, HeldHours: new(big.Rat), Rows: a.rows, Problems: slices.Clone(a.problems)}
	keys := make([]unitKey, 0, len(a.units))
	for k := range a.units {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y unitKey) int {
		return cmp.Or(cmp.Compare(x.model, y.model), cmp.Compare(x.namespace, y.namespace), cmp.Compare(x.workload, y.workload))
	})
	charged := new(big.Rat)
	// Per (team, model): the units that may share a GPU under MPS.
	type group struct{ team, model string }
	pool := map[group][]stats{}
	var groups []group
	for _, k := range keys {
		u := a.units[k]
		s := a.stats(u)
		rate, _ := book.RateFor(k.model)
		p.HeldHours.Add(p.HeldHours, s.heldHours)
		charged.Add(charged, new(big.Rat).Mul(s.heldHours, rate.Rat()))
		if len(u.teams) > 1 {
			p.Problems = append(p.Problems, fmt.Sprintf("workload %s/%s is charged to several teams (%s): advised as team %s",
				k.namespace, k.workload, strings.Join(sortedSet(u.teams), ", "), u.team))
		}
		switch {
		case s.idleFrac >= a.opt.ReclaimFraction:
			p.Recommendations = append(p.Recommendations, a.reclaim(s, book))
		case s.p99 >= a.opt.Saturated*s.share:
			p.Recommendations = append(p.Recommendations, a.keep(s, book,
				fmt.Sprintf("p%g per-replica usage %.3f GPU is %.0f%% of the %.3f GPU each replica holds: no smaller layout fits", a.opt.Percentile*100, s.p99, 100*s.p99/s.share, s.share)))
		case u.noisy:
			// Never MPS with others: only a MIG wall, or as it is.
			if r, ok := a.rightSize(ctx, s, book, true); ok {
				r.Evidence = append(r.Evidence, "flagged noisy neighbour in this period: never packed under MPS or time-slicing with other workloads")
				p.Recommendations = append(p.Recommendations, r)
			} else {
				p.Recommendations = append(p.Recommendations, a.keep(s, book, "flagged noisy neighbour in this period and no smaller MIG profile fits: stays on its own GPU"))
			}
		default:
			g := group{s.team, k.model}
			if _, seen := pool[g]; !seen {
				groups = append(groups, g)
			}
			pool[g] = append(pool[g], s)
		}
	}
	for _, g := range groups {
		p.Recommendations = append(p.Recommendations, a.teamGroup(ctx, pool[g], book)...)
	}
	// A latency simulation cut short by ctx left a note, not a figure:
	// no plan rather than a plan with holes.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var err error
	if p.ChargedMinor, err = minor(charged, book.Currency.MinorUnit); err != nil {
		return nil, fmt.Errorf("cannot advise: %w", err)
	}
	for i := range p.Recommendations {
		r := &p.Recommendations[i]
		if r.SavingMinor, err = minor(r.Saving, book.Currency.MinorUnit); err != nil {
			return nil, fmt.Errorf("cannot advise: %w", err)
		}
		p.SavingMinor += r.SavingMinor
	}
	sort.SliceStable(p.Recommendations, func(i, j int) bool {
		return p.Recommendations[i].Saving.Cmp(p.Recommendations[j].Saving) > 0
	})
	p.MIG = migPacking(p.Recommendations)
	return p, nil
}

// base fills what every recommendation of units says.
func (a *Advisor) base(kind Kind, ss []stats, book *pricebook.Book) Recommendation {
	r := Recommendation{Kind: kind, Team: ss[0].team, Namespace: ss[0].u.key.namespace, Model: ss[0].u.key.model, HeldHours: new(big.Rat)}
	modes := map[string]bool{}
	for _, s := range ss {
		r.Workloads = append(r.Workloads, s.u.key.namespace+"/"+s.u.key.workload)
		r.Replicas += s.replicas
		r.BeforeGPUs += s.beforeGPUs
		r.HeldHours.Add(r.HeldHours, s.heldHours)
		for m := range s.u.modes {
			modes[m] = true
		}
		if s.u.key.namespace != r.Namespace {
			r.Namespace = ""
		}
	}
	slices.Sort(r.Workloads)
	r.Modes = sortedSet(modes)
	rate, known := book.RateFor(r.Model)
	r.Rate = rate
	if !known {
		r.Incomplete = append(r.Incomplete, fmt.Sprintf("GPU model %s is not in the price book: priced at its defaultRate %s", r.Model, rate.Format(book.Currency.MinorUnit)))
	}
	r.Before = fmt.Sprintf("%d replica(s), %s GPU held on average (%s)", r.Replicas, gpus(r.BeforeGPUs), strings.Join(r.Modes, ", "))
	return r
}

// finish sets the after-hours and money from AfterGPUs: the proposal
// holds AfterGPUs over the same minutes the workloads ran.
func finish(r *Recommendation, ss []stats, after *big.Rat) {
	f, _ := after.Float64()
	r.AfterGPUs = f
	// The minutes the group ran: the union of its units' active slots.
	minutes := activeSlots(ss)
	r.AfterHours = new(big.Rat).Mul(after, big.NewRat(int64(minutes)*int64(slot/time.Second), 3600))
	r.SavedHours = new(big.Rat).Sub(r.HeldHours, r.AfterHours)
	if r.SavedHours.Sign() < 0 {
		r.SavedHours.SetInt64(0)
	}
	r.Saving = new(big.Rat).Mul(r.SavedHours, r.Rate.Rat())
}

func activeSlots(ss []stats) int {
	if len(ss) == 1 {
		return ss[0].active
	}
	n := 0
	for i := range ss[0].u.held {
		for _, s := range ss {
			if s.u.held[i] > 0 {
				n++
				break
			}
		}
	}
	return n
}

func (a *Advisor) reclaim(s stats, book *pricebook.Book) Recommendation {
	r := a.base(Reclaim, []stats{s}, book)
	r.After = "released"
	finish(&r, []stats{s}, new(big.Rat))
	r.Contention = replay([][]float32{s.u.joint}, [][]float32{s.u.held}, 0)
	r.Evidence = append(r.Evidence, fmt.Sprintf("%.1f%% of its replica-minutes used under %.0f%% of what they held (threshold %.0f%%); used %.4f of %.4f GPU-hours held",
		100*s.idleFrac, 100*a.opt.IdleThreshold, 100*a.opt.ReclaimFraction, float64(s.u.usedUS)/3.6e9, float64(s.u.allocUS)/3.6e9))
	if s.u.idleFlagS > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("idle_allocation findings cover %.1f h of its pods", s.u.idleFlagS/3600))
	}
	r.LatencyNote = "released: no latency to predict"
	return r
}

func (a *Advisor) keep(s stats, book *pricebook.Book, why string) Recommendation {
	r := a.base(Keep, []stats{s}, book)
	r.After = "unchanged"
	r.AfterHours, r.SavedHours, r.Saving = new(big.Rat).Set(r.HeldHours), new(big.Rat), new(big.Rat)
	r.AfterGPUs = r.BeforeGPUs
	r.Evidence = append(r.Evidence, why)
	r.LatencyNote = "unchanged layout"
	return r
}

// migProfile is the smallest profile of model with at least need GPUs of
// compute and memMiB of memory.
func migProfile(model string, need, memMiB float64) (gpu.MIGProfile, bool, error) {
	profiles, err := gpu.MIGProfiles(model)
	if err != nil {
		return gpu.MIGProfile{}, false, err
	}
	for _, pr := range profiles { // ordered by size
		if float64(pr.Slices)/gpu.TotalSlices+1e-12 >= need && float64(pr.MemoryMiB) >= memMiB {
			return pr, true, nil
		}
	}
	return gpu.MIGProfile{}, false, nil
}

// rightSize proposes per-replica MIG instances (or, on a model without
// MIG and when allowed, time-slicing fractions 1/k) sized to the p99 usage
// with headroom. ok is false when nothing smaller fits.
func (a *Advisor) rightSize(ctx context.Context, s stats, book *pricebook.Book, migOnly bool) (Recommendation, bool) {
	need := s.p99 * (1 + a.opt.Headroom)
	r := a.base(RightSize, []stats{s}, book)
	pr, found, err := migProfile(s.u.key.model, need, s.u.memPeakMiB)
	switch {
	case err == nil && found:
		after := big.NewRat(int64(s.replicas*pr.Slices), gpu.TotalSlices)
		if f, _ := after.Float64(); !smaller(f, s.beforeGPUs) {
			return r, false
		}
		r.After = fmt.Sprintf("%d × MIG %s (%d/7 GPU each, %s GPU)", s.replicas, pr.Name, pr.Slices, after.FloatString(3))
		finish(&r, []stats{s}, after)
		c := float32(float64(pr.Slices) / gpu.TotalSlices)
		r.Contention = replay([][]float32{s.u.maxRep}, [][]float32{s.u.held}, c)
		r.Evidence = append(r.Evidence, fmt.Sprintf("p%g per-replica usage %.3f GPU + %.0f%% headroom fits %s (%d/7 GPU, %d MiB); peak memory %.0f MiB",
			a.opt.Percentile*100, s.p99, a.opt.Headroom*100, pr.Name, pr.Slices, pr.MemoryMiB, s.u.memPeakMiB))
		a.latency(ctx, &r, []stats{s}, whatif.MIG, float64(pr.Slices)/gpu.TotalSlices, min(s.replicas, gpu.TotalSlices/pr.Slices))
		return r, true
	case err == nil || migOnly:
		return r, false
	}
	// No MIG on this model: a fraction 1/k of a time-sliced GPU.
	k := min(8, int(math.Floor(1/max(need, 1e-9))))
	if k < 2 || !smaller(1/float64(k), s.share) {
		return r, false
	}
	if mem, err := gpu.ModelMemoryMiB(s.u.key.model); err == nil && float64(k)*s.u.memPeakMiB > float64(mem) {
		return r, false
	} else if err != nil {
		r.Incomplete = append(r.Incomplete, fmt.Sprintf("GPU model %s has no known memory size: memory fit of %d replicas per GPU not checked", s.u.key.model, k))
	}
	after := big.NewRat(int64(s.replicas), int64(k))
	r.After = fmt.Sprintf("%d × 1/%d GPU (time-slicing, %d replicas per GPU, this team only)", s.replicas, k, k)
	finish(&r, []stats{s}, after)
	r.Contention = replay([][]float32{s.u.maxRep}, [][]float32{s.u.held}, float32(1/float64(k)))
	r.Evidence = append(r.Evidence, fmt.Sprintf("model %s has no MIG profiles; p%g per-replica usage %.3f GPU + %.0f%% headroom fits 1/%d GPU",
		s.u.key.model, a.opt.Percentile*100, s.p99, a.opt.Headroom*100, k))
	a.latency(ctx, &r, []stats{s}, whatif.TimeSlicing, 1, k)
	return r, true
}

// teamGroup decides between right-sizing each of one team's units on one
// model and consolidating them onto fewer whole GPUs under MPS.
func (a *Advisor) teamGroup(ctx context.Context, ss []stats, book *pricebook.Book) []Recommendation {
	var individual []Recommendation
	indivGPUs := 0.0
	for _, s := range ss {
		if r, ok := a.rightSize(ctx, s, book, false); ok {
			individual = append(individual, r)
			indivGPUs += r.AfterGPUs
		} else {
			indivGPUs += s.beforeGPUs
		}
	}
	before, replicas := 0.0, 0
	for _, s := range ss {
		before += s.beforeGPUs
		replicas += s.replicas
	}
	// MPS: the team's joint per-minute usage, p99 plus headroom, in whole
	// GPUs, and enough memory for every replica's peak.
	joint := make([]float64, 0, len(ss[0].u.joint))
	series, helds := make([][]float32, len(ss)), make([][]float32, len(ss))
	for i, s := range ss {
		series[i], helds[i] = s.u.joint, s.u.held
	}
	var memNeed float64
	for _, s := range ss {
		memNeed += float64(s.replicas) * s.u.memPeakMiB
	}
	for i := range ss[0].u.joint {
		var sum, held float64
		for _, s := range ss {
			sum += float64(s.u.joint[i])
			held += float64(s.u.held[i])
		}
		if held > 0 {
			joint = append(joint, sum)
		}
	}
	slices.Sort(joint)
	p99 := 0.0
	if len(joint) > 0 {
		p99 = joint[max(0, int(math.Ceil(a.opt.Percentile*float64(len(joint))))-1)]
	}
	g := max(1, int(math.Ceil(p99*(1+a.opt.Headroom)-1e-9)))
	var memNote string
	if mem, err := gpu.ModelMemoryMiB(ss[0].u.key.model); err == nil {
		if m := int(math.Ceil(memNeed / float64(mem))); m > g {
			g, memNote = m, fmt.Sprintf("; memory: %d replicas at their peak need %.0f MiB, %d GPU(s)", replicas, memNeed, m)
		}
	} else {
		memNote = "; memory fit not checked (model memory unknown)"
	}
	if replicas >= 2 && smaller(float64(g), before) && !smaller(indivGPUs, float64(g)) {
		r := a.base(Consolidate, ss, book)
		r.After = fmt.Sprintf("%d GPU(s) shared under MPS by %d replica(s) of team %s", g, replicas, r.Team)
		finish(&r, ss, big.NewRat(int64(g), 1))
		r.Contention = replay(series, helds, float32(g))
		r.Evidence = append(r.Evidence, fmt.Sprintf("joint p%g usage %.3f GPU + %.0f%% headroom fits %d GPU(s)%s; one team, one trust boundary: MPS (time-slicing if latency jitter is acceptable)",
			a.opt.Percentile*100, p99, a.opt.Headroom*100, g, memNote))
		if len(individual) > 0 && !smaller(float64(g), indivGPUs) {
			r.Evidence = append(r.Evidence, fmt.Sprintf("alternative with hardware isolation: right-size each replica to MIG, %s GPU", gpus(indivGPUs)))
		}
		perGPU := (replicas + g - 1) / g
		a.latency(ctx, &r, ss, whatif.MPS, 1, perGPU)
		return []Recommendation{r}
	}
	out := individual
	// Units with no right-size are kept.
	done := map[*unit]bool{}
	for _, r := range individual {
		for _, s := range ss {
			if slices.Contains(r.Workloads, s.u.key.namespace+"/"+s.u.key.workload) {
				done[s.u] = true
			}
		}
	}
	for _, s := range ss {
		if !done[s.u] {
			out = append(out, a.keep(s, book, fmt.Sprintf("p%g per-replica usage %.3f GPU + %.0f%% headroom: no smaller MIG profile, fraction or MPS packing holds fewer GPUs than the %s held",
				a.opt.Percentile*100, s.p99, a.opt.Headroom*100, gpus(s.beforeGPUs))))
		}
	}
	return out
}

// replay counts the slots where the summed series exceed capacity,
// among the slots where any of held is non-zero (the minutes the
// workloads ran).
func replay(series, held [][]float32, capacity float32) Contention {
	var c Contention
	var sum float64
	for i := range series[0] {
		ran := false
		for _, h := range held {
			ran = ran || h[i] > 0
		}
		if !ran {
			continue
		}
		var d float32
		for _, s := range series {
			d += s[i]
		}
		c.Of++
		if ex := float64(d - capacity); ex > 1e-6 {
			c.Minutes++
			sum += ex
			c.MaxExcess = max(c.MaxExcess, ex)
		}
	}
	if c.Minutes > 0 {
		c.MeanExcess = sum / float64(c.Minutes)
	}
	return c
}

// latency runs whatif on the proposed layout when every pod declares its
// service time: tenants replicas with the estimated arrival rate, perGPU
// of them on the busiest GPU, each with fraction of the card under MIG.
func (a *Advisor) latency(ctx context.Context, r *Recommendation, ss []stats, mode whatif.Mode, fraction float64, perGPU int) {
	var svc time.Duration
	var tenants []whatif.Tenant
	for _, s := range ss {
		d, note := a.serviceTime(s.u)
		if note != "" {
			if d < 0 {
				r.Incomplete = append(r.Incomplete, note)
			}
			r.LatencyNote = "utilisation-based only: " + note
			return
		}
		svc = d
		rate := s.meanUse / d.Seconds()
		if !(rate > 0) {
			r.LatencyNote = "utilisation-based only: no activity to estimate an arrival rate from"
			return
		}
		for range s.replicas {
			tenants = append(tenants, whatif.Tenant{Name: s.u.key.workload, Rate: rate, Service: d})
		}
	}
	// Round-robin onto the GPUs: simulate the first, the fullest.
	perGPU = max(1, min(perGPU, len(tenants)))
	onOne := make([]whatif.Tenant, 0, perGPU)
	for i := 0; i < len(tenants) && len(onOne) < perGPU; i++ {
		onOne = append(onOne, tenants[i])
	}
	cfg := whatif.Config{Tenants: onOne, Duration: latencyDuration, Seed: 1}
	if mode == whatif.MIG {
		cfg.Layout.MIGFractions = make([]float64, len(onOne))
		for i := range cfg.Layout.MIGFractions {
			cfg.Layout.MIGFractions[i] = fraction
		}
	}
	cfg, capped := cfg.Capped(maxLatencyRequests)
	sum, err := whatif.Compare(ctx, cfg, latencyRuns, mode)
	if err != nil {
		r.Incomplete = append(r.Incomplete, "latency: "+err.Error())
		return
	}
	s := sum[0]
	r.Latency = &Latency{Mode: mode, ServiceTime: svc, RatePerReplica: onOne[0].Rate, Tenants: len(onOne),
		P50: s.P50.Mean, P99: s.P99.Mean, ServedFraction: s.ServedFraction.Mean,
		Simulated: cfg.Duration, Capped: capped, Requests: s.Requests}
	r.LatencyNote = fmt.Sprintf("whatif %s, %d tenant(s) per GPU at %.2f rps each (from activity / %s service time), %d runs of 10 min",
		mode, len(onOne), onOne[0].Rate, svc, latencyRuns)
	if capped {
		r.LatencyNote = fmt.Sprintf("whatif %s, %d tenant(s) per GPU at %.2f rps each (from activity / %s service time), %d runs of %s each: "+
			"capped at %d requests a run (10 min would be %.3g), same rates and service time",
			mode, len(onOne), onOne[0].Rate, svc, latencyRuns, cfg.Duration.Round(time.Microsecond), maxLatencyRequests,
			cfg.ExpectedRequests()*latencyDuration.Seconds()/cfg.Duration.Seconds())
	}
}

// serviceTime is the workload's declared service time; note says why
// there is none (d < 0: the annotation is malformed or inconsistent).
func (a *Advisor) serviceTime(u *unit) (time.Duration, string) {
	var d time.Duration
	var from string
	for _, pod := range sortedSet(u.pods) {
		meta := a.pods[u.key.namespace+"/"+pod]
		if meta == nil {
			return 0, fmt.Sprintf("no pod metadata for %s/%s (service time annotation %s unknown)", u.key.namespace, pod, ServiceTimeAnnotation)
		}
		v, ok := meta.Annotations[ServiceTimeAnnotation]
		if !ok {
			return 0, fmt.Sprintf("pod %s/%s has no %s annotation", u.key.namespace, pod, ServiceTimeAnnotation)
		}
		x, err := ParseServiceTime(v)
		if err != nil {
			return -1, fmt.Sprintf("pod %s/%s: %v", u.key.namespace, pod, err)
		}
		if d != 0 && x != d {
			return -1, fmt.Sprintf("pods %s and %s of %s/%s declare different service times (%s, %s)", from, pod, u.key.namespace, u.key.workload, d, x)
		}
		d, from = x, pod
	}
	return d, ""
}

func migPacking(rs []Recommendation) []MIGPacking {
	by := map[string]*MIGPacking{}
	for _, r := range rs {
		if r.Kind != RightSize || !strings.Contains(r.After, "MIG") {
			continue
		}
		m := by[r.Model]
		if m == nil {
			m = &MIGPacking{Model: r.Model}
			by[r.Model] = m
		}
		m.Instances += r.Replicas
		m.Slices += int(math.Round(r.AfterGPUs * gpu.TotalSlices))
	}
	var out []MIGPacking
	for _, k := range sortedSet(by) {
		m := by[k]
		// Slices of different profiles pack onto 7-slice GPUs; first-fit
		// is not always exact, the ceiling is the lower bound.
		m.GPUs = (m.Slices + gpu.TotalSlices - 1) / gpu.TotalSlices
		out = append(out, *m)
	}
	return out
}

func sortedSet[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// smaller reports whether x GPUs is less than y by more than the float32
// accumulation of per-minute shares can explain (0.01%): 2/7 held as
// 0.2857143 is not more than a 2g instance.
func smaller(x, y float64) bool { return x < y*(1-1e-4) }

func gpus(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
