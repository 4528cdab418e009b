package attribution

import (
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/tenancy"
)

// ctrID names one container of one pod.
type ctrID struct{ ns, pod, podUID, container string }

// groupKey is one container on one device: a whole GPU (inst -1) or one
// MIG instance of it.
type groupKey struct {
	gpu, inst int
	ctr       ctrID
}

// rowW is one (GPU, slice, container) in the cycle being attributed.
type rowW struct {
	gpu, inst   int
	group, next int32 // owning group; next row of the same group or -1
	sid         SliceID
	resource    string
	pod         int // index into Metadata.Pods, -1 without metadata
	ctrIndex    int // container's index (containers.go), -1 when unknown
	src         rowSrc
	// base is the share an annotation or claim gives before any division
	// (rowSrc); a HAMi annotation row with base < 0 has no usable size.
	base      float64
	dra       int32 // DRA rows: index of the device's holder count
	mode      tenancy.Mode
	share     float64
	overlap   float64 // seconds of the window the pod held the slice
	allocated float64
	used, mem float64
	energy    float64
	estimated bool
	phantom   bool // no slice held: the container just ran on the device
	// hamiFloor marks a HAMi row whose annotation could not be taken at
	// its word (hami_limits.go): at least its framebuffer, estimated.
	hamiFloor bool
	// useFloor marks a HAMi row charged at least the container's use of
	// the GPU (hami_use.go): no core limit caps it, or the annotation
	// does not vouch for it.
	useFloor bool
}

// groupW is one container on one device in the cycle being attributed:
// usage is measured per group and split over its rows by share.
type groupW struct {
	gpu, inst  int
	ctr        ctrID
	team       string
	head, tail int32
	nextSame   int32 // next group of the same listed container, or -1
	shareSum   float64
	running    bool // has a running process on the device
	hasSlice   bool
	estimated  bool
	mem, used  float64
}

// rowSrc says what placed a row on its device.
type rowSrc uint8

const (
	srcKubelet rowSrc = iota // a device ID kubelet listed (or a phantom)
	srcHAMi                  // the container's HAMi annotation entry
	srcDRA                   // a DRA claim's device
)

// gpuW is one GPU's residuals in the cycle being attributed.
type gpuW struct {
	unalloc, unattr, idle float64
	shareSum              float64
	held, unmet           float64 // floorHAMiUse: allocated seconds, floored rows' use beyond them
	energy                float64
	unattrE, idleE        float64
	mode                  tenancy.Mode // dominant mode of its slices
	instHost              []bool       // per MIG instance: a non-container process runs there
	samples               []sampleW
	seen, seenHAMi        map[int]struct{} // cached sets of Engine.seenReplicas/seenHAMi
}

// procClass says who owns a process.
type procClass uint8

const (
	procUnknown   procClass = iota // owner not known: unattributed
	procContainer                  // a container on this node
	procHost                       // a host process: unattributed
	procMPSServer                  // the MPS server: its clients' pool
)

// procRef is what one Observation.Processes entry resolved to.
type procRef struct {
	gpu, inst int
	class     procClass
	group     int32
}

// ownerKey and ownerRec remember who owned a PID on a GPU last cycle, for
// samples that arrive after their process exited.
type ownerKey struct {
	gpu string
	pid uint32
}

type ownerRec struct {
	key   ownerKey
	class procClass
	ctr   int32 // index into that cycle's ownerCtrs, for containers
}

// ownerCtr is a container that owned processes, copied so that nothing
// refers to an Observation after Observe returns.
type ownerCtr struct {
	ctr  ctrID
	team string
}

type nsName struct{ ns, name string }

type ctrRef struct{ pod, ctr int }

type instRef struct{ gpu, inst int }

type legacyKey struct {
	parent string
	gi     int
}

// gpuByUUID finds a GPU by UUID. Lookups come in runs of one GPU, so the
// last hit is checked first.
func (c *cycle) gpuByUUID(uuid string) (int, bool) {
	if c.lastGPUi >= 0 && uuid == c.lastGPU {
		return c.lastGPUi, true
	}
	gi, ok := c.gpuIdx[uuid]
	if ok {
		c.lastGPU, c.lastGPUi = uuid, gi
	}
	return gi, ok
}

// process finds the running process with pid on GPU gpu. Samples tend to
// follow the process list, so the process after the last match is tried
// before the index, which is built only when that fails. (A PID repeats on
// one GPU only across MIG instances, which have no samples.)
func (c *cycle) process(gpu int, pid uint32) (int, bool) {
	procs := c.obs.Processes
	if i := c.pidNext; i < len(procs) && procs[i].PID == pid && c.procs[i].gpu == gpu {
		c.pidNext = i + 1
		return i, true
	}
	if !c.pidBuilt {
		clear(c.pidIdx)
		for i := range procs {
			if k := pidKey(c.procs[i].gpu, procs[i].PID); c.procs[i].gpu >= 0 {
				if _, dup := c.pidIdx[k]; !dup {
					c.pidIdx[k] = int32(i)
				}
			}
		}
		c.pidBuilt = true
	}
	i, ok := c.pidIdx[pidKey(gpu, pid)]
	if ok {
		c.pidNext = int(i) + 1
	}
	return int(i), ok
}

// pidKey packs a GPU index and a PID into one map key.
func pidKey(gpu int, pid uint32) uint64 { return uint64(gpu)<<32 | uint64(pid) }

// cycle is the scratch space of one Observe call; its maps and slices are
// reused from cycle to cycle so a steady node allocates little.
type cycle struct {
	obs        *Observation
	prev, now  int64
	w          float64
	teamLabel  string
	teams      tenancy.TeamResolver
	nodeLabels map[string]string
	mpsNode    bool
	replicas   int // node label, 0 when absent or invalid
	gkeClients int // GKE's max shared clients label, 0 when absent or invalid
	// replicasBad and gkeClientsBad: the label is there but is not a
	// positive integer, so the slices it counts cannot be placed.
	replicasBad, gkeClientsBad bool
	gkeMPS                     bool

	gpus      []GPU
	gpuW      []gpuW
	gpuIdx    map[string]int
	migIdx    map[string]instRef
	legacyIdx map[legacyKey]instRef
	// Indexes of the metadata, built on first use: allocations and
	// processes usually list the same pods in the same order as last
	// cycle, so the hints below find them without hashing strings.
	podIdx    map[nsName]int
	podUIDIdx map[string]int
	ctrIdx    map[string]ctrRef // runtime container ID -> pod, container
	minorIdx  map[int]int       // NVML minor number -> GPU (GKE IDs)
	built     struct{ pod, uid, ctr, minor, dra bool }
	allocHint []int32  // per allocation: its pod last cycle
	procHint  []ctrRef // per process: its pod and container last cycle
	podTeams  []string
	slotBase  []int32 // per pod: its containers' first slot in slots
	slots     []int32 // per listed container: its first group, or -1
	slotOwner []int32 // per listed container: its index in Engine.ownerCtrs, or -1
	slotHAMi  []bool  // per listed container: charged by its HAMi annotation

	rows   []rowW
	groups []groupW
	// groupIdx holds the groups of containers the metadata does not list;
	// listed ones are found through slots without hashing strings.
	groupIdx map[groupKey]int32
	procs    []procRef
	pidIdx   map[uint64]int32 // pidKey -> process index, built on first use
	pidBuilt bool
	pidNext  int // process after the last one a sample run matched
	lastGPU  string
	lastGPUi int
	sidHint  []SliceID // parsed device IDs by position in the allocations
	sidNext  int
	hamiIDs  []SliceID // the HAMi IDs of the allocation being placed
	// hamiPlaced are the GPUs its annotation entry gave rows so far.
	hamiPlaced []hamiPlaced
	// hamiGhosts are the entry's devices naming GPUs this node lacks.
	hamiGhosts []int32

	// DRA: the node's devices by (driver, pool, name), and per claimed
	// device this cycle the number of containers holding it.
	draDevIdx map[draKey]int
	draIdx    map[draKey]int32
	draCount  []int32

	anomalies  []Anomaly
	anomalySet map[Anomaly]struct{}
	newPins    []AnnotationPin // handed to CycleResult.NewPins

	bins  []bin
	inst  []instStat
	modes []string
}

func (c *cycle) init() {
	c.gpuIdx = map[string]int{}
	c.migIdx = map[string]instRef{}
	c.legacyIdx = map[legacyKey]instRef{}
	c.podIdx = map[nsName]int{}
	c.podUIDIdx = map[string]int{}
	c.ctrIdx = map[string]ctrRef{}
	c.minorIdx = map[int]int{}
	c.draDevIdx = map[draKey]int{}
	c.draIdx = map[draKey]int32{}
	c.groupIdx = map[groupKey]int32{}
	c.pidIdx = map[uint64]int32{}
	c.anomalySet = map[Anomaly]struct{}{}
}

// reset prepares the scratch space and per-cycle indexes for obs.
func (c *cycle) reset(e *Engine, obs *Observation, prev, now int64) {
	c.obs, c.prev, c.now = obs, prev, now
	c.w = float64(now-prev) / 1e9
	c.teamLabel = e.cfg.TeamLabel
	c.teams.Key, c.teams.FromPodLabel = e.cfg.TeamLabel, !e.cfg.IgnorePodTeamLabel
	c.nodeLabels = obs.Metadata.NodeLabels
	c.mpsNode = strings.EqualFold(strings.TrimSpace(c.nodeLabels[LabelSharingStrategy]), "mps")
	c.replicas, c.replicasBad = countLabel(c.nodeLabels, LabelReplicas)
	c.gkeClients, c.gkeClientsBad = countLabel(c.nodeLabels, LabelGKEMaxClients)
	c.gkeMPS = strings.EqualFold(strings.TrimSpace(c.nodeLabels[LabelGKESharingStrategy]), "mps")

	c.rows, c.groups, c.procs = c.rows[:0], c.groups[:0], c.procs[:0]
	c.anomalies, c.newPins = nil, nil
	clear(c.groupIdx)
	c.pidBuilt, c.pidNext, c.lastGPU, c.lastGPUi, c.sidNext = false, 0, "", -1, 0
	clear(c.anomalySet)

	c.indexGPUs(e, obs)
	c.indexPods(obs)
}

func (c *cycle) indexGPUs(e *Engine, obs *Observation) {
	clear(c.gpuIdx)
	clear(c.migIdx)
	clear(c.legacyIdx)
	c.gpus = c.gpus[:0]
	for _, g := range obs.GPUs {
		if _, dup := c.gpuIdx[g.UUID]; dup || g.UUID == "" {
			c.anomaly(AnomalyUnknownGPU, "dup:"+g.UUID, "GPU "+strconv.Quote(g.UUID)+" listed twice or without UUID; ignored")
			continue
		}
		c.gpuIdx[g.UUID] = len(c.gpus)
		c.gpus = append(c.gpus, g)
	}
	if obs.Degraded["nvml"] {
		// Keep GPUs NVML listed before: their capacity did not vanish,
		// only our view of it.
		for _, g := range e.lastGPUs {
			if _, ok := c.gpuIdx[g.UUID]; !ok {
				c.gpuIdx[g.UUID] = len(c.gpus)
				c.gpus = append(c.gpus, g)
			}
		}
	}
	for cap(c.gpuW) < len(c.gpus) {
		c.gpuW = append(c.gpuW[:cap(c.gpuW)], gpuW{})
	}
	c.gpuW = c.gpuW[:len(c.gpus)]
	for gi := range c.gpus {
		g := &c.gpus[gi]
		gw := &c.gpuW[gi]
		*gw = gpuW{instHost: gw.instHost[:0], samples: gw.samples[:0]}
		for ii := range g.MIG {
			m := &g.MIG[ii]
			c.migIdx[m.UUID] = instRef{gi, ii}
			c.legacyIdx[legacyKey{g.UUID, m.GPUInstanceID}] = instRef{gi, ii}
			gw.instHost = append(gw.instHost, false)
		}
	}
}

func (c *cycle) indexPods(obs *Observation) {
	c.built.pod, c.built.uid, c.built.ctr, c.built.minor, c.built.dra = false, false, false, false, false
	if len(c.draCount) > 0 {
		clear(c.draIdx)
		c.draCount = c.draCount[:0]
	}
	c.podTeams, c.slotBase, c.slots, c.slotOwner = c.podTeams[:0], c.slotBase[:0], c.slots[:0], c.slotOwner[:0]
	c.slotHAMi = c.slotHAMi[:0]
	c.teams.Reset(obs.Metadata.Namespaces)
	for pi := range obs.Metadata.Pods {
		p := &obs.Metadata.Pods[pi]
		c.slotBase = append(c.slotBase, int32(len(c.slots)))
		for range ctrCount(p) {
			c.slots = append(c.slots, -1)
			c.slotOwner = append(c.slotOwner, -1)
			c.slotHAMi = append(c.slotHAMi, false)
		}
		team, refused := c.teams.Resolve(obs.Metadata.Namespaces[p.Namespace], p.Labels, p.Namespace)
		if refused {
			c.anomaly(AnomalyForgedTeam, p.Namespace+"/"+p.Name, "pod "+p.Namespace+"/"+p.Name+" labels itself with a team "+
				"another namespace bills; refused, namespace "+p.Namespace+" pays")
		}
		c.podTeams = append(c.podTeams, team)
	}
}

// release drops the references the scratch space holds into the
// observation, so the caller may reuse its buffers.
func (c *cycle) release() {
	c.obs = nil
	clear(c.gpus)
	c.gpus = c.gpus[:0]
}

// podByName finds a pod by namespace and name.
func (c *cycle) podByName(ns, name string) (int, bool) {
	if !c.built.pod {
		clear(c.podIdx)
		for pi := range c.obs.Metadata.Pods {
			p := &c.obs.Metadata.Pods[pi]
			c.podIdx[nsName{p.Namespace, p.Name}] = pi
		}
		c.built.pod = true
	}
	pi, ok := c.podIdx[nsName{ns, name}]
	return pi, ok
}

// podByUID finds a pod by UID.
func (c *cycle) podByUID(uid string) (int, bool) {
	if !c.built.uid {
		clear(c.podUIDIdx)
		for pi := range c.obs.Metadata.Pods {
			if u := c.obs.Metadata.Pods[pi].UID; u != "" {
				c.podUIDIdx[u] = pi
			}
		}
		c.built.uid = true
	}
	pi, ok := c.podUIDIdx[uid]
	return pi, ok
}

// containerByID finds a container by its runtime ID.
func (c *cycle) containerByID(id string) (ctrRef, bool) {
	if !c.built.ctr {
		clear(c.ctrIdx)
		for pi := range c.obs.Metadata.Pods {
			p := &c.obs.Metadata.Pods[pi]
			for ci := range ctrCount(p) {
				if id := ctrMeta(p, ci).ID; id != "" {
					c.ctrIdx[id] = ctrRef{pi, ci}
				}
			}
		}
		c.built.ctr = true
	}
	r, ok := c.ctrIdx[id]
	return r, ok
}

// allocPod finds the pod of allocation ai (-1 when the metadata does not
// list it).
func (c *cycle) allocPod(ai int, a *Allocation) int {
	pods := c.obs.Metadata.Pods
	for len(c.allocHint) <= ai {
		c.allocHint = append(c.allocHint, -1)
	}
	if h := c.allocHint[ai]; h >= 0 && int(h) < len(pods) && pods[h].Name == a.Pod && pods[h].Namespace == a.Namespace {
		return int(h)
	}
	pi, ok := c.podByName(a.Namespace, a.Pod)
	if !ok {
		pi = -1
	}
	c.allocHint[ai] = int32(pi)
	return pi
}

// team resolves the team of a container of pod (an index, -1 without
// metadata) in namespace ns.
func (c *cycle) team(pod int, ns string) string {
	if pod >= 0 {
		return c.podTeams[pod]
	}
	return tenancy.ResolveTeam(c.obs.Metadata.Namespaces[ns], ns, c.teamLabel)
}

// anomaly records an input problem once per cycle.
func (c *cycle) anomaly(kind, key, detail string) {
	a := Anomaly{Kind: kind, Key: key, Detail: detail}
	if _, ok := c.anomalySet[a]; ok {
		return
	}
	c.anomalySet[a] = struct{}{}
	c.anomalies = append(c.anomalies, a)
}

// group returns the index of container ctr's group on (gpu, inst),
// creating it. pod and ci locate a container the metadata lists (-1 when
// it does not).
func (c *cycle) group(pod, ci, gpu, inst int, ctr ctrID, team string) int32 {
	if pod >= 0 && ci >= 0 {
		slot := &c.slots[int(c.slotBase[pod])+ci]
		for g := *slot; g >= 0; g = c.groups[g].nextSame {
			if c.groups[g].gpu == gpu && c.groups[g].inst == inst {
				return g
			}
		}
		g := c.newGroup(gpu, inst, ctr, team)
		c.groups[g].nextSame, *slot = *slot, g
		return g
	}
	k := groupKey{gpu, inst, ctr}
	if g, ok := c.groupIdx[k]; ok {
		return g
	}
	g := c.newGroup(gpu, inst, ctr, team)
	c.groupIdx[k] = g
	return g
}

func (c *cycle) newGroup(gpu, inst int, ctr ctrID, team string) int32 {
	g := int32(len(c.groups))
	c.groups = append(c.groups, groupW{gpu: gpu, inst: inst, ctr: ctr, team: team, head: -1, tail: -1, nextSame: -1})
	return g
}

// addRow appends a row to group g.
func (c *cycle) addRow(g int32, r rowW) int32 {
	ri := int32(len(c.rows))
	r.group, r.next = g, -1
	c.rows = append(c.rows, r)
	grp := &c.groups[g]
	if grp.tail < 0 {
		grp.head = ri
	} else {
		c.rows[grp.tail].next = ri
	}
	grp.tail = ri
	return ri
}

// gpuModes lists each GPU's mode for its non-container rows.
func (c *cycle) gpuModes() []string {
	c.modes = c.modes[:0]
	for i := range c.gpus {
		c.modes = append(c.modes, string(c.gpuW[i].mode))
	}
	return c.modes
}

// countLabel reads a replica-count label: its positive count, or 0 and
// whether the label is present but not a positive integer ("four", "0",
// "-4", "NaN"), which must not pass for an absent label: the replicas
// would then be estimated and the whole GPU charged.
func countLabel(labels map[string]string, key string) (n int, bad bool) {
	v, ok := labels[key]
	if !ok {
		return 0, false
	}
	n = positiveInt(v)
	return n, n == 0
}

// positiveInt reads a label as a positive count, 0 when absent or
// invalid. It checks the digits itself: strconv's errors allocate, and
// most labels it reads are absent on any one node, every cycle.
func positiveInt(s string) int {
	s = strings.TrimSpace(s)
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		if n = n*10 + int(s[i]-'0'); n >= 1e9 {
			return 0 // no node has a billion replicas: garbage
		}
	}
	return n
}
