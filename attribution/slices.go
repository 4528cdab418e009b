package attribution

import (
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/gpu"
	"github.com/gpuledger/gpuledger/tenancy"
)

// hamiParse is a cached parse of one HAMi annotation value.
type hamiParse struct {
	parts [][]HAMiDevice
	err   error
}

// maxHAMiCache bounds the annotation cache; pods come and go.
const maxHAMiCache = 4096

// buildSlices joins kubelet's allocations with pod metadata into rows, one
// per (GPU, slice, container). IDs that do not parse or name a device this
// node does not have are anomalies and give nothing, so their capacity
// stays unallocated. HAMi IDs and DRA claims are placed per container
// (hami_rows.go, dra.go).
func (e *Engine) buildSlices() {
	c := &e.cy
	pods := c.obs.Metadata.Pods
	for ai := range c.obs.Allocations {
		a := &c.obs.Allocations[ai]
		pod, podUID, ctrIndex := c.allocPod(ai, a), "", -1
		if pod >= 0 {
			podUID = pods[pod].UID
			ctrIndex = containerIndex(&pods[pod], a.Container)
		}
		h := holder{pod: pod, ci: ctrIndex, ctr: ctrID{a.Namespace, a.Pod, podUID, a.Container},
			overlap: c.overlap(pod), resource: a.Resource}
		c.hamiIDs = c.hamiIDs[:0]
		for _, raw := range a.DeviceIDs {
			sid, err := c.parseID(raw)
			if err != nil {
				c.anomaly(AnomalyBadDeviceID, raw, err.Error())
				continue
			}
			gpu, inst, ok := c.resolveSlice(sid)
			if !ok {
				c.anomaly(AnomalyUnknownDevice, raw, "device ID "+strconv.Quote(raw)+
					" of "+a.Namespace+"/"+a.Pod+"/"+a.Container+" names no GPU or MIG instance on this node")
				if sid.HAMi {
					// Still a HAMi device: the annotation says where.
					c.hamiIDs = append(c.hamiIDs, sid)
				}
				continue
			}
			e.recordSeen(sid, gpu, inst)
			if sid.HAMi {
				c.hamiIDs = append(c.hamiIDs, sid)
				continue
			}
			if label, bad := c.badReplicaLabel(a.Resource, sid); bad {
				c.anomaly(AnomalyBadReplicas, label, "node label "+label+"="+strconv.Quote(c.nodeLabels[label])+
					" is not a positive integer; device ID "+strconv.Quote(raw)+" of "+a.Namespace+"/"+a.Pod+"/"+a.Container+
					" cannot be placed and its share stays unallocated")
				continue
			}
			c.place(&h, rowW{gpu: gpu, inst: inst, sid: sid})
		}
		if len(c.hamiIDs) > 0 {
			e.placeHAMi(&h)
		}
		if len(a.Claims) > 0 {
			e.placeClaims(&h, a)
		}
	}
}

// holder is the container an allocation is for, while its rows are placed.
type holder struct {
	pod, ci  int // pod and container indexes, -1 when the metadata lacks them
	ctr      ctrID
	team     string // resolved on first use
	overlap  float64
	resource string
}

// place adds row r for holder h unless h already holds the same slice on
// that device (kubelet listing an ID twice must not charge it twice). It
// returns the row's index, or the existing row's and false.
func (c *cycle) place(h *holder, r rowW) (int32, bool) {
	if h.team == "" {
		h.team = c.team(h.pod, h.ctr.ns)
	}
	g := c.group(h.pod, h.ci, r.gpu, r.inst, h.ctr, h.team)
	if ri := c.held(g, r.sid.Raw); ri >= 0 {
		return ri, false
	}
	c.groups[g].hasSlice = true
	r.resource, r.pod, r.ctrIndex, r.overlap = h.resource, h.pod, h.ci, h.overlap
	return c.addRow(g, r), true
}

// parseID parses a device ID, reusing last cycle's parse of the ID at the
// same position in the allocations.
func (c *cycle) parseID(raw string) (SliceID, error) {
	n := c.sidNext
	c.sidNext++
	if n < len(c.sidHint) && c.sidHint[n].Raw == raw && raw != "" {
		return c.sidHint[n], nil
	}
	sid, err := ParseDeviceID(raw)
	if n >= len(c.sidHint) {
		c.sidHint = append(c.sidHint, SliceID{})
	}
	c.sidHint[n] = sid // zero on error: never matches a non-empty raw
	return sid, err
}

// held finds group g's row for slice raw (-1 when it has none).
func (c *cycle) held(g int32, raw string) int32 {
	for ri := c.groups[g].head; ri >= 0; ri = c.rows[ri].next {
		if c.rows[ri].sid.Raw == raw {
			return ri
		}
	}
	return -1
}

// resolveSlice finds the GPU and MIG instance (-1 for whole GPUs) an ID
// names.
func (c *cycle) resolveSlice(sid SliceID) (gpu, inst int, ok bool) {
	switch {
	case sid.GKE:
		return c.resolveGKE(sid)
	case sid.Kind == SliceKindGPU:
		gpu, ok = c.gpuByUUID(sid.UUID)
		return gpu, -1, ok
	case sid.Legacy:
		r, ok := c.legacyIdx[legacyKey{sid.Parent, sid.GI}]
		return r.gpu, r.inst, ok
	default:
		r, ok := c.migIdx[sid.UUID]
		return r.gpu, r.inst, ok
	}
}

// overlap is how many seconds of the window pod held its devices: the
// window clipped to the pod's start time.
func (c *cycle) overlap(pod int) float64 {
	if pod < 0 {
		return c.w
	}
	st := c.obs.Metadata.Pods[pod].StartTime
	if st.IsZero() {
		return c.w
	}
	s := st.UnixNano()
	switch {
	case s >= c.now:
		return 0
	case s > c.prev:
		return float64(c.now-s) / 1e9
	}
	return c.w
}

// recordSeen remembers replica and HAMi IDs, which estimate the replica
// count where the node has no replicas label.
func (e *Engine) recordSeen(sid SliceID, gpu, inst int) {
	if sid.Replica < 0 {
		return
	}
	c := &e.cy
	var s map[int]struct{}
	switch gw := &c.gpuW[gpu]; {
	case inst >= 0:
		s = seenSet(e.seenReplicas, c.gpus[gpu].MIG[inst].UUID)
	case sid.HAMi:
		if gw.seenHAMi == nil {
			gw.seenHAMi = seenSet(e.seenHAMi, c.gpus[gpu].UUID)
		}
		s = gw.seenHAMi
	default:
		if gw.seen == nil {
			gw.seen = seenSet(e.seenReplicas, c.gpus[gpu].UUID)
		}
		s = gw.seen
	}
	if _, ok := s[sid.Replica]; !ok {
		s[sid.Replica] = struct{}{}
	}
}

// recordAllocatable records every device ID kubelet advertises as
// allocatable as seen, so that a replica count estimated without a label
// counts every replica of the device (ledger.md: the number of distinct
// ::<n> IDs), not just the ones allocated so far; likewise GKE's vgpu IDs
// and the HAMi 1/N fallback's N. The list is read again only when the
// collector passes a different slice. IDs of other resources, malformed
// ones and ones naming no device of this node are skipped without an
// anomaly: only allocated IDs are the node's problem. A cycle without
// GPUs (NVML down) records nothing and leaves the list to the next cycle.
func (e *Engine) recordAllocatable() {
	c := &e.cy
	ids := c.obs.AllocatableIDs
	if len(ids) == 0 || (&ids[0] == e.allocatableAt && len(ids) == e.allocatableLen) {
		return
	}
	if len(c.gpus) == 0 || c.obs.Degraded["nvml"] {
		return
	}
	for _, raw := range ids {
		sid, err := ParseDeviceID(raw)
		if err != nil || sid.Replica < 0 {
			continue
		}
		if gpu, inst, ok := c.resolveSlice(sid); ok {
			e.recordSeen(sid, gpu, inst)
		}
	}
	e.allocatableAt, e.allocatableLen = &ids[0], len(ids)
}

func seenSet(sets map[string]map[int]struct{}, key string) map[int]struct{} {
	s := sets[key]
	if s == nil {
		s = map[int]struct{}{}
		sets[key] = s
	}
	return s
}

// computeShares gives every row its sharing mode, allocation share and
// allocated seconds, scaling a GPU's shares down where they add up to more
// than the whole GPU.
func (e *Engine) computeShares() {
	c := &e.cy
	for ri := range c.rows {
		r := &c.rows[ri]
		r.mode, r.share, r.estimated = e.share(r)
		gw := &c.gpuW[r.gpu]
		gw.shareSum += r.share
		if gw.mode == "" {
			gw.mode = r.mode
		}
	}
	for ri := range c.rows {
		r := &c.rows[ri]
		if s := c.gpuW[r.gpu].shareSum; s > 1 {
			r.share /= s
		}
		r.allocated = r.share * r.overlap
		c.groups[r.group].shareSum += r.share
	}
	for gi := range c.gpus {
		if c.gpuW[gi].mode == "" {
			c.gpuW[gi].mode = c.fallbackMode(gi)
		}
	}
}

// share returns a row's sharing mode, its share of the physical GPU and
// whether the share is an estimate (ledger.md, "Allocation share").
func (e *Engine) share(r *rowW) (mode tenancy.Mode, share float64, estimated bool) {
	c := &e.cy
	g := &c.gpus[r.gpu]
	switch {
	case r.src == srcHAMi && r.base >= 0:
		return tenancy.HAMi, r.base, r.hamiFloor
	case r.src == srcHAMi || r.sid.HAMi:
		// No usable annotation entry (hami_mismatch raised when placed):
		// one virtual device of the GPU kubelet named.
		return tenancy.HAMi, 1 / float64(max(len(e.seenHAMi[g.UUID]), 1)), true
	case r.src == srcDRA:
		return tenancy.DRA, r.base / float64(max(c.draCount[r.dra], 1)), false
	case r.sid.GKE:
		return e.gkeShare(r)
	case r.sid.Kind == SliceKindGPU && r.sid.Replica < 0:
		return tenancy.Exclusive, 1, false
	case r.sid.Kind == SliceKindGPU:
		n, est := e.replicas(r.resource, g.UUID)
		return tenancy.Replicas(false, c.mpsNode), 1 / float64(n), est
	}
	w := migWeight(&g.MIG[r.inst])
	if r.sid.Replica < 0 {
		return tenancy.MIG, w, false
	}
	n, est := e.replicas(r.resource, g.MIG[r.inst].UUID)
	return tenancy.Replicas(true, c.mpsNode), w / float64(n), est
}

// replicas is the replica count of a shared device: the replicas label
// named after the resource (NVIDIA's device plugin and GPU feature
// discovery write "<resource>.replicas" after the resource's original
// name, so renameByDefault's ".shared" is dropped first), else the
// distinct replica IDs seen on the device (an estimate): those kubelet
// advertises as allocatable (recordAllocatable) and any allocated. The
// whole-GPU label nvidia.com/gpu.replicas never counts a MIG resource's
// replicas (mixed strategy: nvidia.com/mig-<profile>); it does for
// nvidia.com/gpu, also when MIG IDs are listed under it (single strategy).
// badReplicaLabel names the replica-count label that decides slice sid of
// resource (as replicas and gkeShare read them) when that label is
// present but not a positive integer. Such a count cannot divide the
// device, and estimating it from the IDs seen instead would charge a
// garbage label as if it were absent, so the slice is not placed.
func (c *cycle) badReplicaLabel(resource string, sid SliceID) (string, bool) {
	if sid.Replica < 0 || sid.HAMi {
		return "", false
	}
	if sid.GKE {
		return LabelGKEMaxClients, c.gkeClientsBad
	}
	base := strings.TrimSuffix(resource, sharedSuffix)
	if base != "" && base != ResourceGPU {
		if _, bad := countLabel(c.nodeLabels, base+".replicas"); bad {
			return base + ".replicas", true
		}
		if _, ok := c.nodeLabels[base+".replicas"]; ok {
			return "", false
		}
	}
	if strings.HasPrefix(base, migResourcePrefix) {
		return "", false
	}
	return LabelReplicas, c.replicasBad
}

func (e *Engine) replicas(resource, device string) (n int, estimated bool) {
	c := &e.cy
	base := strings.TrimSuffix(resource, sharedSuffix)
	if base != "" && base != ResourceGPU {
		if n := positiveInt(c.nodeLabels[base+".replicas"]); n > 0 {
			return n, false
		}
	}
	if c.replicas > 0 && !strings.HasPrefix(base, migResourcePrefix) {
		return c.replicas, false
	}
	return max(len(e.seenReplicas[device]), 1), true
}

// migWeight is w(i), the instance's compute slices over the GPU's seven.
// Where NVML gave no slice count the profile name ("3g.40gb") says it; a
// compute-instance profile ("1c.3g.40gb") counts its own compute slices
// (package gpu says why).
func migWeight(m *MIGInstance) float64 {
	s := m.Slices
	if s <= 0 || s > gpu.TotalSlices {
		s = profileSlices(m.Profile)
	}
	return float64(s) / gpu.TotalSlices
}

// profileSlices is what a profile name is charged; 1 slice when the name
// does not parse, the least an instance can be.
func profileSlices(profile string) int {
	s, err := gpu.ProfileSlices(profile)
	if err != nil {
		return 1
	}
	return s
}

func (e *Engine) parseHAMi(ann string) ([][]HAMiDevice, error) {
	if p, ok := e.hamiCache[ann]; ok {
		return p.parts, p.err
	}
	if len(e.hamiCache) >= maxHAMiCache {
		clear(e.hamiCache)
	}
	parts, err := ParseHAMiAnnotation(ann)
	e.hamiCache[ann] = hamiParse{parts, err}
	return parts, err
}

// fallbackMode is the mode of a GPU nobody holds a slice of: mig on MIG
// GPUs, else the node's sharing strategy, else exclusive. (A held GPU's
// mode is its slices' mode where they agree, else the first slice's, which
// is the first slice's either way.)
func (c *cycle) fallbackMode(gpu int) tenancy.Mode {
	if c.gpus[gpu].MIGEnabled {
		return tenancy.MIG
	}
	switch strings.ToLower(strings.TrimSpace(c.nodeLabels[LabelSharingStrategy])) {
	case "mps":
		return tenancy.MPS
	case "time-slicing", "timeslicing":
		return tenancy.Timeslicing
	}
	switch strings.ToLower(strings.TrimSpace(c.nodeLabels[LabelGKESharingStrategy])) {
	case "mps":
		return tenancy.MPS
	case "time-sharing":
		return tenancy.Timeslicing
	}
	return tenancy.Exclusive
}
