package attribution

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// detectors runs the idle-allocation and noisy-neighbour detectors
// (ARCHITECTURE.md, "Detectors"). Cycles are summed into time buckets
// aligned to the Unix epoch, bucket = clamp(window/10, poll interval,
// window); at each bucket end the trailing window of buckets is
// evaluated. Consecutive flagged evaluations form one episode, from the
// start of its first window to the end of its last; an episode ends at
// the first evaluation that does not flag it, when its container
// vanishes, or at Flush.
type detectors struct {
	cfg      Config
	poll     int64
	idle     ringSpec
	noisy    ringSpec
	memR     ringSpec // memory growth (memgrowth.go)
	stamp    int64    // cycle counter
	seen     []*detEnt
	idleP    []piece
	noisyP   []piece
	ents     map[detKey]*detEnt
	gpus     map[string]*detGPU
	episodes map[epKey]*episode

	// The memory detector's view of the cycle (nil outside observe), the
	// bucket this cycle's sample goes to, and scratch.
	cy         *cycle
	memK       int64
	memEnv     []float64
	memSpread  []float64
	memScratch []float64
}

// ringSpec is one detector's bucket size and window length in buckets.
type ringSpec struct {
	b int64 // bucket length, ns
	n int   // buckets per window
}

func (r ringSpec) window() int64 { return r.b * int64(r.n) }

// slots is the length of a ring of buckets: the window's n buckets plus
// two. A cycle is added to the buckets before the windows ending inside it
// are evaluated, so a cycle that straddles bucket boundaries (polls not
// aligned to the epoch-aligned buckets, as with a scenario starting at a
// fractional second, or a poll that jitters past a boundary) has already
// written the buckets after the boundary: with only n slots, bucket k
// overwrote bucket k-n, the oldest of the window ending at k, so that
// window never held a whole window's capacity and nothing was flagged.
func (r ringSpec) slots() int { return r.n + 2 }

// detKey is one container on one GPU.
type detKey struct {
	gpu string
	ctr ctrID
}

// detEnt is what the detectors know about one container on one GPU.
type detEnt struct {
	key      detKey
	team     string
	mode     tenancy.Mode // sharing mode of its first slice this cycle
	share    float64      // summed shares of its slices this cycle
	lastSeen int64        // cycle stamp
	lastTime int64
	held     float64 // seconds it held an allocation this cycle
	alloc    float64
	used     float64
	running  bool
	dead     bool // forgotten by gc
	idle     []ctrBucket
	noisy    []ctrBucket
	mem      memEnt // memgrowth.go

	// evaluation scratch
	wUsed    float64
	wRunning bool
}

type ctrBucket struct {
	k                 int64
	alloc, used, held float64
	running           bool
}

// detGPU is one GPU's busy time per noisy-neighbour bucket.
type detGPU struct {
	uuid     string
	lastTime int64
	noisy    []gpuBucket
	ents     []*detEnt // evaluation scratch
	hint     []*detEnt // entry of each container row last cycle
}

type gpuBucket struct {
	k         int64
	cap, busy float64
}

type epKey struct {
	kind     string
	ent      detKey
	noisyPod string
}

// episode is one open finding.
type episode struct {
	f        Finding
	lastEnd  int64 // end of the last window that flagged it
	maxRatio float64
	starved  []string // noisy: the pods it starved, sorted
}

func (d *detectors) init(cfg Config) {
	d.cfg = cfg
	d.poll = int64(cfg.PollInterval)
	d.ents = map[detKey]*detEnt{}
	d.gpus = map[string]*detGPU{}
	d.episodes = map[epKey]*episode{}
}

// spec sizes a detector's buckets: a tenth of the window, at least one
// poll interval, at most the window.
func (d *detectors) spec(window time.Duration) ringSpec { return d.specN(window, 10) }

// specN sizes buckets as a window cut into n, at least one poll interval
// each, at most the window.
func (d *detectors) specN(window time.Duration, n int) ringSpec {
	w := int64(window)
	b := min(max(w/int64(n), d.poll), w)
	if b <= 0 {
		b = 1
	}
	return ringSpec{b: b, n: int((w + b - 1) / b)}
}

// observe feeds one cycle's GPUs to the detectors and returns the
// episodes that ended with it.
func (d *detectors) observe(prev, now int64, node string, gpus []GPUCycle, cy *cycle, out []Finding) []Finding {
	if d.idle.b == 0 {
		if d.poll <= 0 {
			d.poll = now - prev
		}
		d.idle, d.noisy = d.spec(d.cfg.IdleWindow), d.spec(d.cfg.NoisyWindow)
		d.memR = d.specN(d.cfg.MemoryGrowth.Window, d.cfg.MemoryGrowth.Buckets)
	}
	d.cy = cy
	d.memPiece(now)
	d.stamp++
	d.idleP = d.idle.pieces(prev, now, d.idleP[:0])
	d.noisyP = d.noisy.pieces(prev, now, d.noisyP[:0])
	for gi := range gpus {
		d.ingest(prev, now, &gpus[gi])
	}
	out = d.evaluate(prev, now, node, d.idle, d.evalIdle, out)
	out = d.evaluate(prev, now, node, d.noisy, d.evalNoisy, out)
	out = d.evaluate(prev, now, node, d.memR, d.evalMemory, out)
	out = d.endVanished(out)
	// Forgetting can wait for the largest bucket to end: the horizon has
	// two buckets of slack, and walking every container each cycle cost
	// more than the memory detector adds.
	if gcb := max(d.idle.b, d.noisy.b, d.memR.b); floorDiv(prev, gcb) != floorDiv(now, gcb) {
		d.gc(now)
	}
	d.cy = nil // not this cycle's any more
	return out
}

// ingest adds one GPU's cycle to the buckets.
func (d *detectors) ingest(prev, now int64, gc *GPUCycle) {
	g := d.gpus[gc.UUID]
	if g == nil {
		g = &detGPU{uuid: gc.UUID, noisy: make([]gpuBucket, d.noisy.slots())}
		for i := range g.noisy {
			g.noisy[i].k = noBucket
		}
		d.gpus[gc.UUID] = g
	}
	g.lastTime = now
	busy := max(gc.Capacity-gc.Idle, 0)
	for _, p := range d.noisyP {
		b := &g.noisy[mod(p.k, d.noisy.slots())]
		if b.k != p.k {
			*b = gpuBucket{k: p.k}
		}
		b.cap += p.f * gc.Capacity
		b.busy += p.f * busy
	}

	// Sum the container's rows (one per slice) first, then bucket once.
	seen := d.seen[:0]
	for len(g.hint) < len(gc.Containers) {
		g.hint = append(g.hint, nil)
	}
	for ci := range gc.Containers {
		cc := &gc.Containers[ci]
		ent := g.hint[ci]
		if ent == nil || ent.dead || !ent.key.ctr.is(cc) {
			ent = d.ent(detKey{gc.UUID, ctrID{cc.Namespace, cc.Pod, cc.PodUID, cc.Container}})
			g.hint[ci] = ent
		}
		if ent.lastSeen != d.stamp {
			ent.lastSeen, ent.lastTime = d.stamp, now
			ent.share, ent.held, ent.alloc, ent.used, ent.running = 0, 0, 0, 0, false
			ent.mode, ent.team = tenancy.Mode(cc.SharingMode), cc.Team
			ent.mem.cur = 0
			seen = append(seen, ent)
		}
		ent.mem.cur += cc.MemoryMiB
		ent.share += cc.Share
		ent.alloc += cc.Allocated
		ent.used += cc.Used
		ent.running = ent.running || cc.Running
		if cc.Share > 0 {
			ent.held = max(ent.held, cc.Allocated/cc.Share)
		}
	}
	for _, ent := range seen {
		for _, p := range d.idleP {
			ent.idle[mod(p.k, d.idle.slots())].add(p.k, p.f, ent)
		}
		for _, p := range d.noisyP {
			ent.noisy[mod(p.k, d.noisy.slots())].add(p.k, p.f, ent)
		}
		ent.mem.sample(d.memK, d.memR, now-heldNs(ent.held, now-prev), now)
	}
	d.seen = seen[:0]
}

// heldNs converts a cycle's held seconds to ns, at most the cycle's span.
func heldNs(held float64, span int64) int64 {
	return min(int64(math.Round(held*1e9)), span)
}

// noBucket marks a bucket slot that holds nothing yet.
const noBucket = -1 << 62

func (k *ctrID) is(cc *ContainerCycle) bool {
	return k.podUID == cc.PodUID && k.container == cc.Container && k.pod == cc.Pod && k.ns == cc.Namespace
}

func (b *ctrBucket) add(k int64, f float64, e *detEnt) {
	if b.k != k {
		*b = ctrBucket{k: k}
	}
	b.alloc += f * e.alloc
	b.used += f * e.used
	b.held += f * e.held
	b.running = b.running || e.running
}

func (d *detectors) ent(k detKey) *detEnt {
	e := d.ents[k]
	if e == nil {
		e = &detEnt{key: k, idle: make([]ctrBucket, d.idle.slots()), noisy: make([]ctrBucket, d.noisy.slots()), mem: memEnt{openK: noBucket}}
		for i := range e.idle {
			e.idle[i].k = noBucket
		}
		for i := range e.noisy {
			e.noisy[i].k = noBucket
		}
		d.ents[k] = e
	}
	return e
}

// piece is the part of a cycle that falls in bucket k: fraction f of it.
type piece struct {
	k int64
	f float64
}

// pieces appends the buckets (prev, now] overlaps with the fraction of
// the cycle in each.
func (r ringSpec) pieces(prev, now int64, buf []piece) []piece {
	span := float64(now - prev)
	start := prev
	// Only the last window's worth of buckets can ever be read.
	if lo := now - r.window() - r.b; start < lo {
		start = lo
	}
	for a := start; a < now; {
		k := floorDiv(a, r.b)
		b := min((k+1)*r.b, now)
		buf = append(buf, piece{k, float64(b-a) / span})
		a = b
	}
	return buf
}

// evaluate runs eval at every bucket end in (prev, now], oldest first
// (at most a window's worth: older ones would see empty buckets).
func (d *detectors) evaluate(prev, now int64, node string, r ringSpec, eval func(end int64, node string, out []Finding) []Finding, out []Finding) []Finding {
	first := floorDiv(prev, r.b) + 1
	last := floorDiv(now, r.b)
	first = max(first, last-int64(r.n))
	for k := first; k <= last; k++ {
		out = eval(k*r.b, node, out)
	}
	return out
}

// evalIdle flags containers that held an allocation for the whole
// trailing idle window and used less than IdleThreshold of it.
func (d *detectors) evalIdle(end int64, node string, out []Finding) []Finding {
	r := d.idle
	kEnd := end / r.b
	window := float64(r.window()) / 1e9
	for _, e := range d.ents {
		var alloc, used, held float64
		for j := int64(1); j <= int64(r.n); j++ {
			if b := &e.idle[mod(kEnd-j, r.slots())]; b.k == kEnd-j {
				alloc, used, held = alloc+b.alloc, used+b.used, held+b.held
			}
		}
		if held < 0.99*window || !(alloc > 0) {
			continue
		}
		ratio := used / alloc
		if ratio >= d.cfg.IdleThreshold {
			continue
		}
		ep := d.flag(epKey{FindingIdleAllocation, e.key, ""}, e, node, end, r)
		ep.maxRatio = max(ep.maxRatio, ratio)
		ep.f.Detail = "max_used_ratio=" + strconv.FormatFloat(ep.maxRatio, 'f', 4, 64)
	}
	return d.endUnflagged(out, FindingIdleAllocation, end)
}

// noisyMode reports whether a sharing mode has no hardware isolation, the
// only modes where one tenant can starve another.
func noisyMode(m tenancy.Mode) bool { return m.Props().NoisyNeighbours }

// evalNoisy flags, per GPU shared without isolation and at least 90%
// busy over the trailing noisy window, containers that used at least
// twice their share while another container with running processes got
// less than its share; those get starved findings naming the noisy pod.
func (d *detectors) evalNoisy(end int64, node string, out []Finding) []Finding {
	r := d.noisy
	kEnd := end / r.b
	window := float64(r.window()) / 1e9
	for _, g := range d.gpus {
		g.ents = g.ents[:0]
	}
	for _, e := range d.ents {
		if !noisyMode(e.mode) {
			continue
		}
		e.wUsed, e.wRunning = 0, false
		for j := int64(1); j <= int64(r.n); j++ {
			if b := &e.noisy[mod(kEnd-j, r.slots())]; b.k == kEnd-j {
				e.wUsed += b.used
				e.wRunning = e.wRunning || b.running
			}
		}
		if g := d.gpus[e.key.gpu]; g != nil {
			g.ents = append(g.ents, e)
		}
	}
	for _, g := range d.gpus {
		if len(g.ents) < 2 {
			continue
		}
		var capSec, busy float64
		for j := int64(1); j <= int64(r.n); j++ {
			if b := &g.noisy[mod(kEnd-j, r.slots())]; b.k == kEnd-j {
				capSec, busy = capSec+b.cap, busy+b.busy
			}
		}
		if capSec < 0.99*window || busy < 0.9*capSec {
			continue
		}
		d.flagNoisyGPU(g, capSec, end, node, r)
	}
	out = d.endUnflagged(out, FindingNoisyNeighbour, end)
	return d.endUnflagged(out, FindingStarved, end)
}

func (d *detectors) flagNoisyGPU(g *detGPU, capSec float64, end int64, node string, r ringSpec) {
	for _, n := range g.ents {
		if !(n.wUsed > 0) || n.wUsed/capSec < 2*n.share {
			continue
		}
		noisyPod := n.key.ctr.ns + "/" + n.key.ctr.pod
		var starved []string
		for _, s := range g.ents {
			if s == n || !s.wRunning || s.wUsed/capSec >= s.share ||
				(s.key.ctr.ns == n.key.ctr.ns && s.key.ctr.pod == n.key.ctr.pod) {
				continue
			}
			sp := d.flag(epKey{FindingStarved, s.key, noisyPod}, s, node, end, r)
			sp.f.NoisyPod = noisyPod
			sp.f.Detail = "noisy_neighbour=" + noisyPod
			starved = append(starved, s.key.ctr.ns+"/"+s.key.ctr.pod)
		}
		if len(starved) == 0 {
			continue
		}
		ep := d.flag(epKey{FindingNoisyNeighbour, n.key, ""}, n, node, end, r)
		for _, p := range starved {
			if i, found := slices.BinarySearch(ep.starved, p); !found {
				ep.starved = slices.Insert(ep.starved, i, p)
			}
		}
		ep.f.Detail = "starved=" + strings.Join(ep.starved, ",")
	}
}

// flag marks an episode flagged at the evaluation ending at end, opening
// it (its start is the start of this first window) if needed.
func (d *detectors) flag(k epKey, e *detEnt, node string, end int64, r ringSpec) *episode {
	ep := d.episodes[k]
	if ep == nil {
		ep = &episode{f: Finding{Start: time.Unix(0, end-r.window()).UTC(), Kind: k.kind, Node: node,
			GPUUUID: k.ent.gpu, Namespace: k.ent.ctr.ns, Pod: k.ent.ctr.pod, Container: k.ent.ctr.container}}
		d.episodes[k] = ep
	}
	ep.f.Team = e.team
	ep.lastEnd = end
	return ep
}

// endUnflagged ends the episodes of kind that the evaluation ending at
// end did not flag.
func (d *detectors) endUnflagged(out []Finding, kind string, end int64) []Finding {
	return d.endWhere(out, func(k epKey, ep *episode) bool {
		return k.kind == kind && ep.lastEnd != end
	})
}

// endVanished ends the episodes of containers absent from this cycle.
func (d *detectors) endVanished(out []Finding) []Finding {
	return d.endWhere(out, func(k epKey, _ *episode) bool {
		e := d.ents[k.ent]
		return e == nil || e.lastSeen != d.stamp
	})
}

// endAll ends every open episode (Flush).
func (d *detectors) endAll(out []Finding) []Finding {
	return d.endWhere(out, func(epKey, *episode) bool { return true })
}

func (d *detectors) endWhere(out []Finding, done func(epKey, *episode) bool) []Finding {
	var ended []Finding
	for k, ep := range d.episodes {
		if done(k, ep) {
			ended = append(ended, ep.finding())
			delete(d.episodes, k)
		}
	}
	sortFindings(ended)
	return append(out, ended...)
}

func (ep *episode) finding() Finding {
	f := ep.f
	f.End = time.Unix(0, ep.lastEnd).UTC()
	return f
}

// active lists the findings flagged right now.
func (d *detectors) active() []Finding {
	var out []Finding
	for _, ep := range d.episodes {
		out = append(out, ep.finding())
	}
	sortFindings(out)
	return out
}

// gc forgets containers and GPUs not seen for longer than any window.
func (d *detectors) gc(now int64) {
	horizon := now - max(d.idle.window(), d.noisy.window(), d.memR.window()) - 2*max(d.idle.b, d.noisy.b, d.memR.b)
	for k, e := range d.ents {
		if e.lastTime < horizon {
			e.dead = true // hints may still point at it
			delete(d.ents, k)
		}
	}
	for k, g := range d.gpus {
		if g.lastTime < horizon {
			delete(d.gpus, k)
		}
	}
}

func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		return cmpStrings(
			[]string{a.Kind, a.GPUUUID, a.Namespace, a.Pod, a.Container, a.NoisyPod},
			[]string{b.Kind, b.GPUUUID, b.Namespace, b.Pod, b.Container, b.NoisyPod})
	})
}

func cmpStrings(a, b []string) int {
	for i := range a {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func mod(k int64, n int) int {
	m := k % int64(n)
	if m < 0 {
		m += int64(n)
	}
	return int(m)
}
